import datetime as dt
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Course, Enrollment, Quota, Role, User
from accounts.quotas import effective_quota
from tests.factories import CourseFactory, EnrollmentFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_role_decides_admin_console_access():
    user = UserFactory(role=Role.STUDENT)
    assert not user.is_staff
    user.role = Role.ADMIN
    user.save()
    assert User.objects.get(pk=user.pk).is_staff
    user.role = Role.TEACHER
    user.save()
    assert not User.objects.get(pk=user.pk).is_staff


def test_createsuperuser_makes_an_admin():
    user = User.objects.create_superuser("root", "root@lab.example", "pw-long-enough")
    assert user.role == Role.ADMIN and user.is_lab_admin and user.is_staff


def test_role_policies_exist_for_admins_to_edit():
    assert set(Quota.objects.filter(role__isnull=False).values_list("role", flat=True)) == set(Role.values)


def test_student_gets_the_role_policy():
    student = UserFactory(role=Role.STUDENT)
    quota = effective_quota(student)
    assert quota.max_notebooks == 1
    assert quota.gpu_hours_week == Decimal("20")
    assert quota.sources["max_notebooks"] == "role"


def test_admin_edit_of_role_policy_applies():
    Quota.objects.filter(role=Role.STUDENT).update(gpu_hours_week=Decimal("12.5"))
    assert effective_quota(UserFactory(role=Role.STUDENT)).gpu_hours_week == Decimal("12.5")


def test_blank_role_limit_falls_back_to_built_in_default():
    Quota.objects.filter(role=Role.STUDENT).update(max_jobs=None)
    quota = effective_quota(UserFactory(role=Role.STUDENT))
    assert quota.max_jobs == 2 and quota.sources["max_jobs"] == "default"


def test_course_override_applies_during_term_and_most_generous_wins():
    student = UserFactory(role=Role.STUDENT)
    small, big = CourseFactory(code="SMALL"), CourseFactory(code="BIG")
    for course, hours in ((small, "30"), (big, "60")):
        EnrollmentFactory(user=student, course=course)
        Quota.objects.create(course=course, gpu_hours_week=Decimal(hours))
    quota = effective_quota(student)
    assert quota.gpu_hours_week == Decimal("60")
    assert quota.sources["gpu_hours_week"] == "course BIG"
    assert quota.max_notebooks == 1  # not overridden by the course


def test_course_override_ends_with_the_term():
    student = UserFactory(role=Role.STUDENT)
    today = timezone.localdate()
    past = CourseFactory(term_start=today - dt.timedelta(days=100), term_end=today - dt.timedelta(days=1))
    EnrollmentFactory(user=student, course=past)
    Quota.objects.create(course=past, gpu_hours_week=Decimal("500"))
    assert effective_quota(student).gpu_hours_week == Decimal("20")


def test_user_override_beats_course_and_role():
    student = UserFactory(role=Role.STUDENT)
    course = CourseFactory()
    EnrollmentFactory(user=student, course=course)
    Quota.objects.create(course=course, max_notebooks=2)
    Quota.objects.create(user=student, max_notebooks=3)
    quota = effective_quota(student)
    assert quota.max_notebooks == 3 and quota.sources["max_notebooks"] == "user"


def test_quota_needs_exactly_one_scope_in_the_database():
    with pytest.raises(IntegrityError), transaction.atomic():
        Quota.objects.create(max_jobs=1)
    student = UserFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        Quota.objects.create(user=student, course=CourseFactory(), max_jobs=1)


def test_course_term_cannot_end_before_it_starts():
    with pytest.raises(IntegrityError), transaction.atomic():
        Course.objects.create(code="X", name="X", term_start=dt.date(2026, 5, 1), term_end=dt.date(2026, 4, 1))


def test_enrollment_is_unique():
    enrollment = EnrollmentFactory()
    with pytest.raises(IntegrityError), transaction.atomic():
        Enrollment.objects.create(user=enrollment.user, course=enrollment.course)


def test_portal_user_creates_with_token_usable_on_the_api(api, capsys):
    CourseFactory(code="DL-101")
    call_command(
        "portal_user", "newbie", "--role", "student", "--password", "pw-12345678", "--course", "DL-101", "--token"
    )
    token = capsys.readouterr().out.strip().splitlines()[-1]
    response = api.get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200
    body = response.json()
    assert body["role"] == "student" and [c["code"] for c in body["courses"]] == ["DL-101"]


def test_portal_user_updates_role_and_teaches(capsys):
    CourseFactory(code="CV-1")
    call_command("portal_user", "prof", "--role", "student")
    call_command("portal_user", "prof", "--role", "teacher", "--course", "CV-1")
    prof = User.objects.get(username="prof")
    assert prof.role == Role.TEACHER
    assert list(prof.courses_taught.values_list("code", flat=True)) == ["CV-1"]
    assert "Updated teacher prof" in capsys.readouterr().out


def test_portal_user_unknown_course_changes_nothing():
    with pytest.raises(CommandError, match="No course with code NOPE"):
        call_command("portal_user", "ghost", "--role", "student", "--course", "NOPE")
    assert not User.objects.filter(username="ghost").exists()
