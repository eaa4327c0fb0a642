"""A small lab with known ledger entries around a fixed `now`, for the usage tests."""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from labs.models import Allocation
from tests.factories import CourseFactory, EnrollmentFactory, NodeFactory, UserFactory

NOW = timezone.make_aware(dt.datetime(2026, 3, 11, 12, 0))  # a Wednesday, 12:00 in the lab's zone
HOUR = dt.timedelta(hours=1)


@dataclasses.dataclass
class Lab:
    now: dt.datetime
    course: object
    other_course: object
    teacher: object
    other_teacher: object
    alice: object  # a student of `course`
    bob: object  # a student of `course`
    carol: object  # a student of `other_course`
    gpus: list


def entry(user, gpu, start, end, *, share="1", kind="job", course=None, ref=None):
    ref = ref or f"{kind}:{Allocation.objects.count() + 1}" + ("#1" if kind == "job" else "")
    return Allocation.objects.create(
        user=user, gpu=gpu, kind=kind, ref=ref, share=Decimal(share), starts_at=start, ends_at=end, course=course
    )


@pytest.fixture
def lab(db):
    course = CourseFactory(code="DL-101", term_start=dt.date(2026, 2, 1), term_end=dt.date(2026, 7, 31))
    other = CourseFactory(code="CV-201", term_start=dt.date(2026, 2, 1), term_end=dt.date(2026, 7, 31))
    teacher = UserFactory(username="teach", role="teacher")
    other_teacher = UserFactory(username="teach2", role="teacher")
    course.teachers.add(teacher)
    other.teachers.add(other_teacher)
    alice, bob, carol = (UserFactory(username=name) for name in ("alice", "bob", "carol"))
    for person in (alice, bob):
        EnrollmentFactory(user=person, course=course)
    EnrollmentFactory(user=carol, course=other)
    gpus = [NodeFactory(name=f"gpu{i:02d}").gpus.first() for i in range(1, 4)]
    return Lab(NOW, course, other, teacher, other_teacher, alice, bob, carol, gpus)


@pytest.fixture
def known(lab):
    """Entries of the window [Monday 00:00, now) of NOW's week, with their GPU-seconds inside it."""
    monday = timezone.make_aware(dt.datetime(2026, 3, 9))
    g1, g2, g3 = lab.gpus
    # Across the window's start: 2 h before it, 3 h inside. Booked to the course.
    entry(lab.alice, g1, monday - 2 * HOUR, monday + 3 * HOUR, course=lab.course)
    # A quarter GPU for 4 h (a notebook, no course): 1 GPU-hour, 3600 s.
    entry(lab.alice, g2, monday + 10 * HOUR, monday + 14 * HOUR, share="0.25", kind="notebook")
    # Open, half a GPU since 90 minutes before now: 0.75 GPU-hours.
    entry(lab.bob, g3, lab.now - 90 * dt.timedelta(minutes=1), None, share="0.5", kind="notebook")
    # Another course's student, 1 h 30 min 15 s on Tuesday.
    tuesday = monday + 24 * HOUR + 5 * HOUR
    entry(lab.carol, g1, tuesday, tuesday + dt.timedelta(hours=1, minutes=30, seconds=15), course=lab.other_course)
    # Outside the window, and a reservation (a holding, not use).
    entry(lab.bob, g2, monday - 30 * HOUR, monday - 20 * HOUR)
    entry(lab.teacher, g3, monday + 8 * HOUR, monday + 10 * HOUR, kind="reservation", ref="reservation:77")
    return {
        "start": monday,
        "alice": 3 * 3600 + 3600,
        "bob": 0.5 * 90 * 60,
        "carol": 3600 + 30 * 60 + 15,
    }
