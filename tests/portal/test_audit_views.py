"""The audit trail's pages and API per role: admins see every entry (console page, API, CSV), teachers those of their
courses, everyone else 403; the admin console shows entries read-only and records its own edits."""

from __future__ import annotations

from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from accounts.models import AuditEntry, Quota
from accounts.services import enrollment_set, quota_set, token_issue
from tests.factories import PASSWORD, CourseFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    admin = UserFactory(username="ada", role="admin")
    teacher = UserFactory(username="tess", role="teacher")
    student = UserFactory(username="sam", role="student")
    mine, other = CourseFactory(code="DL101"), CourseFactory(code="CV200")
    mine.teachers.add(teacher)
    enrollment_set(user=student, course=mine)  # course.member_add, DL101
    enrollment_set(user=UserFactory(username="olga", role="student"), course=other)  # CV200
    quota_set(by=admin, user=student, limits={"gpu_hours_week": Decimal("30")})  # no course
    return {"admin": admin, "teacher": teacher, "student": student}


def api_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return client


def test_api_admin_sees_everything_and_filters(world):
    client = api_for(world["admin"])
    body = client.get("/api/v1/audit/").json()
    assert {e["action"] for e in body["entries"]} >= {"course.member_add", "quota.change"}
    quota = client.get("/api/v1/audit/?actor=ada&action=quota").json()["entries"]
    assert [(e["action"], e["actor"], e["target"]["label"]) for e in quota] == [("quota.change", "ada", "sam")]
    assert quota[0]["before"] == {} and quota[0]["after"]["gpu_hours_week"] == "30"
    assert client.get("/api/v1/audit/?target=olga").json()["entries"][0]["course"] == "CV200"
    assert client.get("/api/v1/audit/?from=2999-01-01").json()["entries"] == []
    assert client.get("/api/v1/audit/?from=yesterday").status_code == 400


def test_api_teacher_sees_their_courses_only(world):
    entries = api_for(world["teacher"]).get("/api/v1/audit/").json()["entries"]
    assert [(e["action"], e["course"]) for e in entries] == [("course.member_add", "DL101")]


@pytest.mark.parametrize("role", ["student"])
def test_api_others_get_403(world, role):
    assert api_for(world[role]).get("/api/v1/audit/").status_code == 403
    assert APIClient().get("/api/v1/audit/").status_code == 401


def test_api_csv_by_accept(world):
    response = api_for(world["admin"]).get("/api/v1/audit/", HTTP_ACCEPT="text/csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    text = b"".join(response.streaming_content).decode()
    assert text.splitlines()[0].startswith("at,actor,action,target_type")
    assert "quota.change" in text and "ada" in text


def test_console_page_for_admins(client, world):
    client.login(username="ada", password=PASSWORD)
    page = client.get("/console/audit/?action=quota").content.decode()
    assert 'data-action="quota.change"' in page and 'data-action="course.member_add"' not in page
    csv = client.get("/console/audit/?action=quota&format=csv")
    assert b"quota.change" in b"".join(csv.streaming_content)
    for who in ("tess", "sam"):
        client.login(username=who, password=PASSWORD)
        assert client.get("/console/audit/").status_code == 403


def test_course_page_for_teachers(client, world):
    client.login(username="tess", password=PASSWORD)
    page = client.get("/courses/audit/").content.decode()
    assert 'data-action="course.member_add"' in page and "quota.change" not in page and "CV200" not in page
    client.login(username="sam", password=PASSWORD)
    assert client.get("/courses/audit/").status_code == 403


def test_entries_are_read_only_in_the_admin_console(client, world):
    client.login(username="ada", password=PASSWORD)
    entry = AuditEntry.objects.first()
    assert client.get("/admin/accounts/auditentry/").status_code == 200
    assert client.post(f"/admin/accounts/auditentry/{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    assert client.get("/admin/accounts/auditentry/add/").status_code == 403
    assert AuditEntry.objects.filter(pk=entry.pk).exists()


def test_the_admin_console_records_its_own_edits(client, world):
    client.login(username="ada", password=PASSWORD)
    quota = Quota.objects.get(user=world["student"])
    data = {"role": "", "course": "", "user": world["student"].pk, "note": "more", "gpu_hours_week": "45"}
    response = client.post(f"/admin/accounts/quota/{quota.pk}/change/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    entry = AuditEntry.objects.filter(action="quota.change").first()
    assert entry.actor == world["admin"] and entry.reason == "admin console"
    assert entry.before == {"gpu_hours_week": "30", "note": ""} and entry.after == {
        "gpu_hours_week": "45",
        "note": "more",
    }
