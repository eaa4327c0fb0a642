"""Maintenance windows: people with work or bookings on the nodes are told ahead, the nodes are drained (notebooks
end, jobs preempted and requeued) and cordoned at the start and restored at the end; nothing new is placed or
booked into a window; the banner shows from MAINTENANCE_BANNER_LEAD_H before until the end. The clock is passed in
(`now=`) or frozen, never read."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.errors import Conflict, InvalidInput, NotPermitted
from accounts.models import Notice
from jobs.models import JobState
from labs.maintenance.services import maintenance_create
from labs.maintenance.tick import maintenance_tick
from labs.models import Allocation, AllocationKind, Node, NodeStatus, Reservation, ReservationNode, ReservationStatus
from labs.placement import Claim, place
from labs.reservations.services import NodeRequest, reservation_create
from tests.factories import AllocationFactory, NodeFactory, UserFactory
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.django_db

T0 = timezone.make_aware(dt.datetime(2026, 12, 1, 8, 0))


@pytest.fixture
def lab():
    return {name: NodeFactory(name=name) for name in ("gpu01", "gpu02")}


@pytest.fixture
def root():
    return UserFactory(username="root", role="admin", email="root@lab.example")


def window(root, *, names=("gpu01",), start_h=2.0, length_h=2.0, **kwargs):
    return maintenance_create(
        by=root,
        starts_at=T0 + dt.timedelta(hours=start_h),
        ends_at=T0 + dt.timedelta(hours=start_h + length_h),
        reason="New drivers",
        nodes=list(names),
        now=T0,
        **kwargs,
    )


def test_a_window_tells_ahead_drains_and_cordons_then_restores(lab, root, smtp_server, on_commit, settings):
    settings.MAINTENANCE_NOTIFY_LEAD_H = 24
    ada = UserFactory(username="ada", email="ada@lab.example")
    kim = UserFactory(username="kim", role="teacher", email="kim@lab.example")
    tess = UserFactory(username="tess", role="teacher", email="tess@lab.example")
    gpu01 = lab["gpu01"].gpus.get()
    AllocationFactory(user=ada, kind="notebook", ref="notebook:4242", gpu=gpu01, share=Decimal("0.25"))
    job = JobFactory(owner=kim, state=JobState.RUNNING, attempt=1, started_at=T0, running_at=T0, node_names=["gpu01"])
    AllocationFactory(user=kim, kind="job", ref=f"job:{job.pk}#1", gpu=gpu01, share=Decimal("0.75"))
    booking = Reservation.objects.create(
        owner=tess,
        created_by=tess,
        title="DL lab",
        starts_at=T0 + dt.timedelta(hours=3),
        ends_at=T0 + dt.timedelta(hours=5),
        status=ReservationStatus.APPROVED,
    )
    ReservationNode.objects.create(
        reservation=booking, node=lab["gpu01"], starts_at=booking.starts_at, ends_at=booking.ends_at
    )
    maintenance = window(root)

    # Ahead: each person with work or a booking there is told once, in the portal and by e-mail (the defaults).
    with on_commit():
        assert maintenance_tick(now=T0).notified == 6
        assert maintenance_tick(now=T0 + dt.timedelta(minutes=1)).notified == 0
    assert sorted(addr for rcpts, _ in smtp_server.received for addr in rcpts) == [
        "ada@lab.example",
        "kim@lab.example",
        "tess@lab.example",
    ]
    for person in (ada, kim, tess):
        (notice,) = Notice.objects.filter(user=person)
        assert notice.text.startswith("Maintenance on gpu01 from ") and notice.text.endswith(": New drivers")
    assert Node.objects.get(name="gpu01").status == NodeStatus.READY  # nothing stops before the start

    # The start: gpu01 drained and cordoned with the reason; gpu02 untouched.
    with on_commit():
        report = maintenance_tick(now=T0 + dt.timedelta(hours=2))
    assert (report.started, report.drained) == (1, 2)
    gpu01_now = Node.objects.get(name="gpu01")
    assert gpu01_now.status == NodeStatus.CORDONED
    assert gpu01_now.status_reason.startswith("Maintenance until ") and gpu01_now.status_reason.endswith("New drivers")
    assert Node.objects.get(name="gpu02").status == NodeStatus.READY
    assert not Allocation.objects.filter(ends_at__isnull=True, gpu=gpu01)
    job.refresh_from_db()
    # Preempted with its grace and queued again as attempt 2 (which the pass may already have placed on gpu02).
    assert job.attempt == 2 and "gpu01" not in job.node_names
    assert any("New drivers" in event.reason for event in job.events.all())
    assert "Your notebook on gpu01 was stopped" in Notice.objects.filter(user=ada).first().text
    assert maintenance_tick(now=T0 + dt.timedelta(hours=3)).started == 0  # once

    # The end: back in service.
    assert maintenance_tick(now=T0 + dt.timedelta(hours=4)).ended == 1
    gpu01_now.refresh_from_db()
    assert (gpu01_now.status, gpu01_now.status_reason) == (NodeStatus.READY, "")
    maintenance.refresh_from_db()
    assert maintenance.notified_at and maintenance.started_at and maintenance.ended_at


def test_a_node_an_admin_cordoned_for_another_reason_stays_cordoned(lab, root):
    window(root)
    maintenance_tick(now=T0 + dt.timedelta(hours=2))
    Node.objects.filter(name="gpu01").update(status_reason="Fan noise, waiting for a part")
    maintenance_tick(now=T0 + dt.timedelta(hours=4))
    assert Node.objects.get(name="gpu01").status == NodeStatus.CORDONED


def test_the_whole_lab(lab, root):
    maintenance_create(
        by=root,
        starts_at=T0 + dt.timedelta(hours=1),
        ends_at=T0 + dt.timedelta(hours=2),
        reason="Power",
        all_nodes=True,
        now=T0,
    )
    maintenance_tick(now=T0 + dt.timedelta(hours=1))
    assert set(Node.objects.values_list("status", flat=True)) == {NodeStatus.CORDONED}
    maintenance_tick(now=T0 + dt.timedelta(hours=2))
    assert set(Node.objects.values_list("status", flat=True)) == {NodeStatus.READY}


def test_a_window_missed_entirely_restores_nothing_it_did_not_take(lab, root):
    window(root)
    Node.objects.filter(name="gpu01").update(status=NodeStatus.CORDONED, status_reason="Fan noise")
    assert maintenance_tick(now=T0 + dt.timedelta(hours=5)).ended == 1
    assert Node.objects.get(name="gpu01").status == NodeStatus.CORDONED


def test_no_job_is_placed_into_a_window_and_a_notebook_must_end_before_it(lab, root, frozen_now):
    now = frozen_now(T0)
    window(root, names=("gpu01", "gpu02"), start_h=2)
    ada = UserFactory(username="ada")
    with pytest.raises(Exception) as refused:
        place(Claim(user=ada, kind=AllocationKind.JOB, starts_at=now, ends_at=now + dt.timedelta(hours=3)))
    assert refused.value.__class__.__name__ == "NoCapacity"
    fits = place(Claim(user=ada, kind=AllocationKind.JOB, starts_at=now, ends_at=now + dt.timedelta(hours=1)))
    assert fits.slots
    notebook = place(Claim(user=ada, kind=AllocationKind.NOTEBOOK, starts_at=now, ends_at=now + dt.timedelta(hours=8)))
    assert notebook.must_end_by == T0 + dt.timedelta(hours=2)


def test_the_scheduling_pass_keeps_a_long_job_off_the_nodes(lab, root, frozen_now):
    from jobs.services.scheduling import scheduling_pass

    now = frozen_now(T0)
    window(root, names=("gpu01", "gpu02"), start_h=2)
    ada = UserFactory(username="ada")
    long = JobFactory(owner=ada, max_runtime_s=3 * 3600)
    short = JobFactory(owner=ada, max_runtime_s=3600)
    report = scheduling_pass(now=now)
    assert short.pk in report.started and long.pk not in report.started


def test_a_booking_into_a_window_is_refused(lab, root, frozen_now):
    frozen_now(T0)
    window(root, names=("gpu01",), start_h=30, length_h=4)
    tess = UserFactory(username="tess", role="teacher")
    start = T0 + dt.timedelta(hours=29)
    with pytest.raises(Conflict) as refused:
        reservation_create(
            by=tess,
            title="DL",
            starts_at=start,
            ends_at=start + dt.timedelta(hours=2),
            nodes=NodeRequest(names=("gpu01",)),
        )
    assert "The lab has maintenance then" in refused.value.message and "New drivers" in refused.value.message
    (made,) = reservation_create(
        by=tess, title="DL", starts_at=start, ends_at=start + dt.timedelta(hours=2), nodes=NodeRequest(count=1)
    )
    assert list(made.nodes.values_list("name", flat=True)) == ["gpu02"]


@pytest.mark.parametrize(
    "change",
    [
        {"nodes": []},  # neither nodes nor all
        {"all_nodes": True},  # both
        {"nodes": ["gpu77"]},
        {"reason": " "},
        {"ends_at": T0 + dt.timedelta(hours=1)},  # before the start
        {"ends_at": T0 + dt.timedelta(days=40)},
    ],
)
def test_bad_windows_are_refused_and_nothing_is_written(change, lab, root):
    from labs.models import Maintenance

    values = {
        "by": root,
        "starts_at": T0 + dt.timedelta(hours=2),
        "ends_at": T0 + dt.timedelta(hours=4),
        "reason": "New drivers",
        "nodes": ["gpu01"],
        "now": T0,
        **change,
    }
    with pytest.raises(InvalidInput):
        maintenance_create(**values)
    assert not Maintenance.objects.exists()


def test_only_admins_schedule(lab):
    with pytest.raises(NotPermitted):
        window(UserFactory(username="tess", role="teacher"))
