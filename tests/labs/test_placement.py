"""A reservation means something: placement keeps others off reserved nodes, and the tick enforces it."""

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from labs.ledger import Ref
from labs.models import Allocation, AllocationKind, Reservation, ReservationStatus
from labs.placement import Claim, NoCapacity, allocate, blocking_windows, place
from labs.reservations.services import NodeRequest, reservation_create
from labs.reservations.tick import reservations_tick
from labs.signals import allocations_ended
from tests.factories import AllocationFactory, CourseFactory, EnrollmentFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.django_db

NOW = timezone.now().replace(microsecond=0) + dt.timedelta(days=2)


@pytest.fixture
def lab():
    return {n: NodeFactory(name=f"gpu{n:02d}") for n in range(1, 4)}


@pytest.fixture
def course():
    teacher = UserFactory(username="ada", role="teacher")
    course = CourseFactory(code="DL-101")
    course.teachers.add(teacher)
    return course


def reserve(course, names, start, end, **kwargs):
    teacher = course.teachers.get()
    [reservation] = reservation_create(
        by=teacher,
        title="DL-101 lab",
        starts_at=start,
        ends_at=end,
        nodes=NodeRequest(names=tuple(names)),
        course=course,
        now=start - dt.timedelta(hours=3),
        **kwargs,
    )
    return reservation


def notebook(user, start=NOW, hours=4, share="0.25"):
    return Claim(
        user=user,
        kind=AllocationKind.NOTEBOOK,
        starts_at=start,
        ends_at=start + dt.timedelta(hours=hours),
        share=Decimal(share),
    )


def job(user, start=NOW, runtime_s=3 * 3600, gpus=1, nodes=1):
    return Claim(
        user=user,
        kind=AllocationKind.JOB,
        starts_at=start,
        ends_at=start + dt.timedelta(seconds=runtime_s),
        gpus=gpus,
        nodes=nodes,
    )


def test_during_the_window_reserved_nodes_host_only_the_course(lab, course):
    reserve(course, ["gpu01", "gpu02"], NOW - dt.timedelta(minutes=30), NOW + dt.timedelta(hours=2))
    outsider = UserFactory(username="olga")
    member = EnrollmentFactory(course=course, user=UserFactory(username="mia")).user

    assert place(notebook(outsider)).node_names == ["gpu03"]
    assert place(notebook(member)).node_names[0] in {"gpu01", "gpu02"}  # the reservation is for them

    # Fill gpu03: the outsider now has nowhere to go, and is told why.
    AllocationFactory(gpu=lab[3].gpus.get(), kind="job", share=Decimal("1"))
    with pytest.raises(NoCapacity) as caught:
        place(notebook(outsider))
    assert "2 nodes are reserved for others" in caught.value.message
    assert blocking_windows(outsider, NOW, NOW + dt.timedelta(hours=1)).keys() == {lab[1].pk, lab[2].pk}
    assert blocking_windows(member, NOW, NOW + dt.timedelta(hours=1)) == {}


def test_a_job_is_kept_off_a_node_it_would_run_into_a_reservation_on(lab, course):
    reserve(course, ["gpu01", "gpu02"], NOW + dt.timedelta(hours=1), NOW + dt.timedelta(hours=3))
    someone = UserFactory(username="olga")

    # Three hours would run into the 1 h-away reservation on gpu01/gpu02: only gpu03 will do.
    assert place(job(someone, runtime_s=3 * 3600)).node_names == ["gpu03"]
    # Half an hour ends before the reservation begins, so gpu01 is fine.
    short = place(job(someone, runtime_s=1800, nodes=3))
    assert short.node_names == ["gpu01", "gpu02", "gpu03"]

    AllocationFactory(gpu=lab[3].gpus.get(), kind="job", share=Decimal("1"))
    with pytest.raises(NoCapacity, match="reserved for others"):
        place(job(someone, runtime_s=3 * 3600))
    # A notebook may still start there, but must end when the window begins.
    placed = place(notebook(someone, hours=4, share="0.5"))
    assert placed.node_names[0] in {"gpu01", "gpu02"}
    assert placed.must_end_by == NOW + dt.timedelta(hours=1)


def test_a_job_with_a_reservation_goes_only_onto_its_nodes_inside_its_window(lab, course):
    reservation = reserve(course, ["gpu02"], NOW, NOW + dt.timedelta(hours=4))
    reservation.status = ReservationStatus.ACTIVE
    member = EnrollmentFactory(course=course, user=UserFactory(username="mia")).user
    claim = Claim(user=member, kind="job", starts_at=NOW, ends_at=NOW + dt.timedelta(hours=2), reservation=reservation)
    assert place(claim).node_names == ["gpu02"]
    too_long = Claim(
        user=member, kind="job", starts_at=NOW, ends_at=NOW + dt.timedelta(hours=5), reservation=reservation
    )
    with pytest.raises(NoCapacity, match="must fit inside it"):
        place(too_long)
    with pytest.raises(NoCapacity, match="not yours"):
        place(Claim(user=UserFactory(username="olga"), kind="job", starts_at=NOW, ends_at=NOW, reservation=reservation))


def test_allocate_writes_the_ledger_and_never_oversubscribes_a_gpu(lab):
    people = [UserFactory(username=f"s{n}") for n in range(13)]
    for n, person in enumerate(people[:12]):
        allocate(claim=notebook(person), ref=Ref.notebook(n), now=NOW)
    # 3 GPUs x 4 quarter shares = 12 notebooks; the 13th does not fit.
    assert Allocation.objects.filter(ends_at__isnull=True).count() == 12
    for gpu_id in Allocation.objects.values_list("gpu", flat=True).distinct():
        assert sum(Allocation.objects.filter(gpu=gpu_id).values_list("share", flat=True)) == Decimal("1")
    with pytest.raises(NoCapacity):
        allocate(claim=notebook(people[12]), ref=Ref.notebook(13), now=NOW)


def test_a_notebook_on_a_reserved_node_is_warned_then_ended_when_the_window_starts(
    lab, course, django_capture_on_commit_callbacks, settings
):
    settings.RESERVATION_WARN_LEAD_MIN = 15
    outsider = UserFactory(username="olga")
    member = EnrollmentFactory(course=course, user=UserFactory(username="mia")).user
    start = NOW + dt.timedelta(minutes=10)
    theirs = AllocationFactory(user=outsider, gpu=lab[1].gpus.get(), kind="notebook", ref="notebook:7", share="0.25")
    ours = AllocationFactory(user=member, gpu=lab[1].gpus.get(), kind="notebook", ref="notebook:8", share="0.25")
    elsewhere = AllocationFactory(user=outsider, gpu=lab[3].gpus.get(), kind="notebook", ref="notebook:9")
    reservation = reserve(course, ["gpu01", "gpu02"], start, start + dt.timedelta(hours=2))

    report = reservations_tick(now=NOW)
    assert report.warned == 1
    warning = outsider.notices.get()
    assert "gpu01 will be stopped at" in warning.text and warning.level == "warning"
    assert not member.notices.exists()
    assert reservations_tick(now=NOW + dt.timedelta(minutes=1)).warned == 0  # told once

    heard = []
    allocations_ended.connect(lambda **kw: heard.append(kw), weak=False, dispatch_uid="test-evict")
    try:
        with django_capture_on_commit_callbacks(execute=True):
            report = reservations_tick(now=start)
    finally:
        allocations_ended.disconnect(dispatch_uid="test-evict")
    assert report.started == 1 and report.evicted == 1

    theirs.refresh_from_db(), ours.refresh_from_db(), elsewhere.refresh_from_db()
    assert theirs.ends_at == start and "reservation" in theirs.reason
    assert ours.ends_at is None and elsewhere.ends_at is None
    assert heard and heard[0]["allocation_ids"] == [theirs.pk]
    assert outsider.notices.filter(text__contains="was stopped").exists()
    reservation.refresh_from_db()
    assert reservation.status == ReservationStatus.ACTIVE
    held = Allocation.objects.filter(ref=reservation.ref, kind=AllocationKind.RESERVATION, ends_at__isnull=True)
    assert held.count() == 2 and {a.user_id for a in held} == {reservation.owner_id}

    assert reservations_tick(now=start + dt.timedelta(minutes=1)).started == 0  # safe to run twice
    report = reservations_tick(now=start + dt.timedelta(hours=2))
    assert report.ended == 1
    assert not Allocation.objects.filter(ref=reservation.ref, ends_at__isnull=True).exists()


def test_an_unused_reservation_is_released_and_its_owner_told(lab, course, settings):
    settings.RESERVATION_NO_SHOW_MIN = 30
    start = NOW
    idle = reserve(course, ["gpu01"], start, start + dt.timedelta(hours=3))
    used = reserve(course, ["gpu02"], start, start + dt.timedelta(hours=3))
    member = EnrollmentFactory(course=course, user=UserFactory(username="mia")).user
    reservations_tick(now=start)
    AllocationFactory(user=member, gpu=lab[2].gpus.get(), kind="notebook", starts_at=start + dt.timedelta(minutes=5))

    assert reservations_tick(now=start + dt.timedelta(minutes=20)).released == 0
    report = reservations_tick(now=start + dt.timedelta(minutes=31))
    assert report.released == 1
    idle.refresh_from_db(), used.refresh_from_db()
    assert idle.status == ReservationStatus.ENDED and idle.ends_at == start + dt.timedelta(minutes=31)
    assert "nobody used the nodes" in idle.status_reason
    assert used.status == ReservationStatus.ACTIVE
    assert idle.owner.notices.filter(ref=f"reservation:{idle.pk}:released").exists()
    # The node is back in the pool for the rest of the afternoon.
    outsider = UserFactory(username="olga")
    later = start + dt.timedelta(minutes=40)
    assert "gpu01" in place(job(outsider, start=later, runtime_s=3600)).node_names


def test_a_pending_reservation_lapses_when_its_window_begins(lab, course):
    teacher = course.teachers.get()
    from accounts.models import Quota

    Quota.objects.create(user=teacher, reservation_approval_nodes=1)
    pending = reserve(course, ["gpu01", "gpu02"], NOW, NOW + dt.timedelta(hours=1))
    assert pending.status == ReservationStatus.PENDING
    assert reservations_tick(now=NOW).expired == 1
    pending.refresh_from_db()
    assert pending.status == ReservationStatus.CANCELLED and not pending.node_rows.filter(holds=True).exists()
    assert Reservation.objects.get(pk=pending.pk).owner.notices.filter(text__contains="not approved in time").exists()
