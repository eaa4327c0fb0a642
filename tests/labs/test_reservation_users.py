"""Who may work inside a reservation is one rule (labs.reservations.selectors.reservation_people), term included.

DL-101's term ended yesterday; its reservation of gpu01 was booked while the course was in term and runs today,
09:00-13:00. Its student `ella` is an outsider on every path (placement, the scheduling pass, the live GPU grid,
job submission, the no-show rule); its owner `ada` is not.
"""

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.errors import NotPermitted
from accounts.models import Course
from jobs.models import Job, JobState
from jobs.services import job_submit, scheduling_pass
from labs.models import Allocation, AllocationKind, ReservationStatus
from labs.placement import Claim, NoCapacity, place
from labs.reservations.selectors import may_use_reservation, not_yours, reservation_people
from labs.reservations.services import NodeRequest, reservation_create
from labs.reservations.tick import reservations_tick
from labs.telemetry.visibility import public_gpu, viewer_for
from tests.factories import AllocationFactory, CourseFactory, EnrollmentFactory, NodeFactory, UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory, JobFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def now(frozen_now):
    return frozen_now("2026-03-10 10:00")


@pytest.fixture
def booked(now):
    """DL-101 (term ended yesterday) holds gpu01 today 09:00-13:00; ella took DL-101, ada teaches it and booked."""
    ImageRuleFactory()
    nodes = {n: NodeFactory(name=f"gpu{n:02d}") for n in (1, 2)}
    ada = UserFactory(username="ada", role="teacher")
    course = CourseFactory(code="DL-101")
    course.teachers.add(ada)
    ella = EnrollmentFactory(course=course, user=UserFactory(username="ella")).user
    start = now - dt.timedelta(hours=1)
    [reservation] = reservation_create(
        by=ada,
        title="DL-101 lab",
        starts_at=start,
        ends_at=start + dt.timedelta(hours=4),
        nodes=NodeRequest(names=("gpu01",)),
        course=course,
        now=start - dt.timedelta(days=3),
    )
    yesterday = timezone.localdate(now) - dt.timedelta(days=1)
    Course.objects.filter(pk=course.pk).update(term_start=yesterday - dt.timedelta(days=90), term_end=yesterday)
    reservation.refresh_from_db()
    return reservation, ada, ella, nodes


def test_the_rule_gives_the_reservation_to_its_owner_only_once_the_term_ended(booked, now):
    reservation, ada, ella, _nodes = booked
    assert reservation_people([reservation], at=now) == {reservation.pk: frozenset({ada.pk})}
    assert not may_use_reservation(reservation, ella, at=now)
    # The day before, the last of the term, it was hers too.
    assert may_use_reservation(reservation, ella, at=now - dt.timedelta(days=1))


def test_placement(booked, now):
    reservation, ada, ella, _nodes = booked

    def claim(user, reservation=None):
        return Claim(
            user=user,
            kind=AllocationKind.JOB,
            starts_at=now,
            ends_at=now + dt.timedelta(hours=1),
            share=Decimal(1),
            reservation=reservation,
        )

    with pytest.raises(NoCapacity) as refused:
        place(claim(ella, reservation))
    assert str(refused.value) == not_yours(reservation)
    assert place(claim(ella)).node_names == ["gpu02"]  # the reserved node is kept from her
    assert place(claim(ada, reservation)).node_names == ["gpu01"]


def test_the_scheduling_pass(booked, now, settings):
    """A job queued on the reservation while the term ran is not placed in it after the term ended."""
    settings.RESERVATION_NO_SHOW_MIN = 0
    reservation, ada, ella, _nodes = booked
    reservations_tick(now=now)
    hers = JobFactory(owner=ella, reservation=reservation, submitted_at=now - dt.timedelta(days=2))
    report = scheduling_pass(now=now)
    hers.refresh_from_db()
    assert hers.state == JobState.QUEUED and hers.pk not in report.started
    assert hers.reason == f"held: reservation {reservation.pk} is not open to you"
    assert not Allocation.objects.filter(user=ella).exists()
    # The owner's job on it starts there.
    his = JobFactory(owner=ada, reservation=reservation)
    assert his.pk in scheduling_pass(now=now).started
    his.refresh_from_db()
    assert his.node_names == ["gpu01"]


def test_the_live_grid(booked):
    reservation, ada, ella, _nodes = booked
    holder = {
        "user_id": ada.pk,
        "user": "ada",
        "kind": AllocationKind.RESERVATION,
        "ref": reservation.ref,
        "course_id": reservation.course_id,
        "course": "DL-101",
        "share": 1.0,
        "since": reservation.starts_at.isoformat(),
    }
    state = {"node": "gpu01", "index": 0, "node_status": "ready", "stale": False, "holders": [holder]}
    assert public_gpu(state, viewer_for(ella))["available"] is False
    assert public_gpu(state, viewer_for(ada))["available"] is True


def test_job_submission(booked):
    reservation, ada, ella, _nodes = booked

    def submit(user):
        return job_submit(
            user=user,
            name="mnist",
            image=IMAGE,
            command=["python", "train.py"],
            gpus=1,
            max_runtime_s=3600,
            reservation=reservation.pk,
        )

    with pytest.raises(NotPermitted) as refused:
        submit(ella)
    assert refused.value.extra["fields"] == {"reservation": [not_yours(reservation)]}
    assert not Job.objects.exists()
    assert submit(ada).reservation_id == reservation.pk


def test_no_show(booked, now, settings):
    """Work by someone the reservation is not for is not use: the idle reservation is released."""
    settings.RESERVATION_NO_SHOW_MIN = 30
    reservation, _ada, ella, nodes = booked
    AllocationFactory(
        user=ella,
        gpu=nodes[1].gpus.get(),
        kind=AllocationKind.NOTEBOOK,
        ref="notebook:5",
        starts_at=reservation.starts_at + dt.timedelta(minutes=5),
    )
    assert reservations_tick(now=now).released == 1
    reservation.refresh_from_db()
    assert reservation.status == ReservationStatus.ENDED and "nobody used the nodes" in reservation.status_reason
