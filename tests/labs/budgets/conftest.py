"""Shared builders for the budget tests: a fixed `now` (Wednesday 2026-11-18 12:00 in the lab's zone), a course in
term with its teacher, a student and an admin (each with an e-mail address), and ledger entries built by hand."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from labs.models import Allocation
from tests.factories import CourseFactory, EnrollmentFactory, NodeFactory, UserFactory

NOW_LOCAL = "2026-11-18 12:00"


@pytest.fixture
def now(frozen_now):
    return frozen_now(NOW_LOCAL)


def local(text: str) -> dt.datetime:
    return timezone.make_aware(dt.datetime.fromisoformat(text))


@pytest.fixture
def people(now):
    course = CourseFactory(
        code="DL-101", name="Deep learning", term_start=dt.date(2026, 10, 1), term_end=dt.date(2027, 1, 31)
    )
    teacher = UserFactory(username="tess", role="teacher", email="tess@lab.example")
    course.teachers.add(teacher)
    student = UserFactory(username="ada", role="student", email="ada@lab.example")
    EnrollmentFactory(user=student, course=course)
    admin = UserFactory(username="root", role="admin", email="root@lab.example")
    return {"course": course, "teacher": teacher, "student": student, "admin": admin}


@pytest.fixture
def gpu(db):
    return NodeFactory(name="gpu01").gpus.get()


_refs = iter(range(1, 10**6))


def held(
    user,
    gpu,
    *,
    start: dt.datetime,
    hours: float | None,
    course=None,
    share: str = "1",
    kind: str = "job",
) -> Allocation:
    """One ledger entry: `user` held `share` of `gpu` from `start` for `hours` (None: still open)."""
    number = next(_refs)
    ref = {"job": f"job:{number}#1", "notebook": f"notebook:{number}", "reservation": f"reservation:{number}"}[kind]
    return Allocation.objects.create(
        user=user,
        course=course,
        kind=kind,
        ref=ref,
        gpu=gpu,
        share=Decimal(share),
        starts_at=start,
        ends_at=None if hours is None else start + dt.timedelta(hours=hours),
    )
