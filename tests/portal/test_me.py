import datetime as dt

import pytest
from django.utils import timezone

from accounts.models import Role
from labs.models import AllocationKind
from tests.factories import AllocationFactory, CourseFactory, EnrollmentFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_me_shows_role_courses_quota_and_usage(api):
    student = UserFactory(username="sam", role=Role.STUDENT)
    EnrollmentFactory(user=student, course=CourseFactory(code="DL-101", name="Deep Learning"))
    now = timezone.now()
    AllocationFactory(
        user=student, kind=AllocationKind.NOTEBOOK, ref="notebook:1", starts_at=now - dt.timedelta(minutes=30)
    )
    api.force_authenticate(student)
    body = api.get("/api/v1/me/").json()
    assert body["username"] == "sam" and body["role"] == "student"
    assert body["courses"][0]["code"] == "DL-101" and body["courses"][0]["active"] is True
    assert body["quota"]["max_notebooks"] == 1 and body["quota"]["gpu_hours_week"] == 20.0
    assert body["usage"]["notebooks_running"] == 1
    assert body["usage"]["jobs_running"] == 0 and body["usage"]["jobs_queued"] == 0
    # The notebook started at most 30 minutes ago (less if the week started since).
    assert 0 < body["usage"]["gpu_hours_week"] <= 0.5


def test_teacher_sees_the_courses_they_teach(api):
    teacher = UserFactory(role=Role.TEACHER)
    course = CourseFactory(code="CV-210")
    course.teachers.add(teacher)
    api.force_authenticate(teacher)
    body = api.get("/api/v1/me/").json()
    assert body["courses"] == [
        {
            "code": "CV-210",
            "name": course.name,
            "role": "teacher",
            "term_start": course.term_start.isoformat(),
            "term_end": course.term_end.isoformat(),
            "active": True,
        }
    ]
    assert body["quota"]["reservation_max_nodes"] == 40
