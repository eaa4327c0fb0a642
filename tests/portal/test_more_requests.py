"""Requests for more: a person asks; the course's teacher or an admin approves (perhaps changing the numbers) or
refuses with a sentence; nobody decides their own; bad amounts are refused with a sentence; the override counts in
the weekly quota and the budgets until it ends, warned a day before; every step leaves an audit entry."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.errors import InvalidInput, NotPermitted
from accounts.models import AuditEntry, MoreRequest, Notice
from accounts.more_requests import more_request_create, more_request_decide, more_requests_expire
from accounts.quotas import effective_quota
from accounts.services import token_issue
from labs.budgets.selectors import budgets_over
from labs.budgets.services import budget_create
from tests.factories import PASSWORD, AllocationFactory, CourseFactory, EnrollmentFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def course():
    return CourseFactory(code="DL101")


@pytest.fixture
def teacher(course):
    user = UserFactory(username="tess", role="teacher")
    course.teachers.add(user)
    return user


@pytest.fixture
def student(course):
    user = UserFactory(username="sam", role="student")
    EnrollmentFactory(user=user, course=course)
    return user


@pytest.fixture
def admin():
    return UserFactory(username="ada", role="admin")


def api_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return client


def ask(student, in_course, **over):
    values = {
        "kind": "gpu_hours",
        "amount": "10",
        "until": (timezone.now() + dt.timedelta(days=5)).isoformat(),
        "reason": "Final project runs.",
        "course": in_course.code,
    }
    values.update(over)
    return api_for(student).post("/api/v1/requests/", values, format="json")


def test_student_asks_teacher_approves_and_the_quota_follows(student, teacher, course):
    weekly = effective_quota(student).gpu_hours_week
    response = ask(student, course)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "pending" and body["amount"] == 10.0 and body["course"] == "DL101"
    assert Notice.objects.filter(user=teacher, ref=f"more-request:{body['id']}:asked").exists()
    assert effective_quota(student).gpu_hours_week == weekly  # nothing until approved

    decided = api_for(teacher).post(
        f"/api/v1/requests/{body['id']}/decide/", {"decision": "approve", "amount": "8", "reason": "ok"}, format="json"
    )
    assert decided.status_code == 200, decided.content
    assert decided.json()["status"] == "approved" and decided.json()["granted_amount"] == 8.0
    limits = effective_quota(student)
    assert limits.gpu_hours_week == weekly + Decimal("8")
    assert limits.sources["gpu_hours_week"] == f"request #{body['id']}"
    assert Notice.objects.filter(user=student, ref=f"more-request:{body['id']}:decided").exists()
    entries = {entry.action: entry for entry in AuditEntry.objects.filter(target_type="morerequest")}
    assert entries["request.create"].actor == student
    approve = entries["request.approve"]
    assert approve.actor == teacher and approve.course == course
    assert approve.before["status"] == "pending" and approve.after["status"] == "approved"
    assert approve.after["granted_amount"] == "8"


def test_a_quota_raise_lifts_the_weekly_limit_to_its_amount(student, admin):
    row = more_request_create(
        user=student, kind="quota", amount=60, until=timezone.now() + dt.timedelta(days=3), reason="Thesis."
    )
    more_request_decide(by=admin, request_id=row.pk, decision="approve")
    assert effective_quota(student).gpu_hours_week == Decimal("60")


def test_refusal_needs_a_sentence_and_tells_the_person(student, teacher, course):
    row_id = ask(student, course).json()["id"]
    client = api_for(teacher)
    no_reason = client.post(f"/api/v1/requests/{row_id}/decide/", {"decision": "refuse"}, format="json")
    assert no_reason.status_code == 400 and "why" in no_reason.json()["detail"]
    refused = client.post(
        f"/api/v1/requests/{row_id}/decide/", {"decision": "refuse", "reason": "Use the shared pool."}, format="json"
    )
    assert refused.status_code == 200 and refused.json()["status"] == "refused"
    notice = Notice.objects.get(user=student, ref=f"more-request:{row_id}:decided")
    assert "Use the shared pool." in notice.text
    assert AuditEntry.objects.get(action="request.refuse").reason == "Use the shared pool."
    again = client.post(f"/api/v1/requests/{row_id}/decide/", {"decision": "approve"}, format="json")
    assert again.status_code == 409


def test_nobody_decides_their_own_request(teacher, admin, course):
    own = more_request_create(
        user=teacher, kind="gpu_hours", amount=5, until=timezone.now() + dt.timedelta(days=2), reason="Demo."
    )
    answer = api_for(teacher).post(f"/api/v1/requests/{own.pk}/decide/", {"decision": "approve"}, format="json")
    assert answer.status_code == 403 and "your own request" in answer.json()["detail"]
    with pytest.raises(NotPermitted):
        more_request_decide(by=teacher, request_id=own.pk, decision="approve")
    assert MoreRequest.objects.get(pk=own.pk).status == "pending"
    assert (
        api_for(admin).post(f"/api/v1/requests/{own.pk}/decide/", {"decision": "approve"}, format="json").status_code
        == 200
    )


def test_who_may_decide_and_see(student, teacher, course):
    other_teacher = UserFactory(username="otto", role="teacher")
    other_student = UserFactory(username="olga", role="student")
    row_id = ask(student, course).json()["id"]
    # Another course's teacher and another student do not see it at all.
    for who in (other_teacher, other_student):
        answer = api_for(who).post(f"/api/v1/requests/{row_id}/decide/", {"decision": "approve"}, format="json")
        assert answer.status_code == 404
        assert api_for(who).get("/api/v1/requests/").json()["requests"] == []
    # Its teacher sees it (may decide); the student sees theirs (may not).
    seen = api_for(teacher).get("/api/v1/requests/").json()["requests"]
    assert [(r["id"], r["may_decide"]) for r in seen] == [(row_id, True)]
    mine = api_for(student).get("/api/v1/requests/").json()["requests"]
    assert [(r["id"], r["may_decide"]) for r in mine] == [(row_id, False)]
    # Own work (no course) goes to the admins: the teacher may not decide it.
    own = ask(student, course, course="").json()["id"]
    assert (
        api_for(teacher).post(f"/api/v1/requests/{own}/decide/", {"decision": "approve"}, format="json").status_code
        == 404
    )


@pytest.mark.parametrize(
    "field,value",
    [
        ("amount", "-5"),
        ("amount", "0"),
        ("amount", "1e9"),
        ("amount", "NaN"),
        ("amount", "lots"),
        ("until", "2001-01-01"),
        ("until", "2999-01-01"),
        ("until", "soon"),
        ("kind", "nodes"),
        ("reason", ""),
        ("course", "NOPE"),
    ],
)
def test_bad_requests_are_refused_with_a_sentence(student, course, field, value):
    answer = ask(student, course, **{field: value})
    assert answer.status_code == 400, answer.content
    body = answer.json()
    assert body["detail"] and field in body.get("fields", {}), body
    assert not MoreRequest.objects.exists() and not AuditEntry.objects.filter(action="request.create").exists()


def test_a_decider_cannot_grant_an_absurd_amount(student, teacher, course):
    row_id = ask(student, course).json()["id"]
    answer = api_for(teacher).post(
        f"/api/v1/requests/{row_id}/decide/", {"decision": "approve", "amount": "-3"}, format="json"
    )
    assert answer.status_code == 400
    assert MoreRequest.objects.get(pk=row_id).status == "pending"
    assert not AuditEntry.objects.filter(action="request.approve").exists()


def test_a_course_request_to_a_student_of_another_course_is_refused(course):
    outsider = UserFactory(username="out", role="student")
    with pytest.raises(InvalidInput):
        more_request_create(
            user=outsider,
            kind="gpu_hours",
            amount=1,
            until=timezone.now() + dt.timedelta(days=1),
            reason="x",
            course=course,
        )


def test_the_override_is_warned_a_day_before_and_expires(student, admin, frozen_now):
    start = frozen_now("2030-03-04 10:00")
    weekly = effective_quota(student).gpu_hours_week
    row = more_request_create(
        user=student, kind="gpu_hours", amount=5, until=start + dt.timedelta(days=3), reason="Runs."
    )
    more_request_decide(by=admin, request_id=row.pk, decision="approve")
    assert effective_quota(student).gpu_hours_week == weekly + 5
    assert more_requests_expire() == {"warned": 0, "ended": 0}

    frozen_now(start + dt.timedelta(days=2, hours=1))
    assert more_requests_expire() == {"warned": 1, "ended": 0}
    assert more_requests_expire() == {"warned": 0, "ended": 0}  # told once
    assert Notice.objects.filter(user=student, ref=f"more-request:{row.pk}:ending").exists()

    frozen_now(start + dt.timedelta(days=3, minutes=1))
    assert effective_quota(student).gpu_hours_week == weekly  # over at its end, sweep or not
    assert more_requests_expire() == {"warned": 0, "ended": 1}
    assert MoreRequest.objects.get(pk=row.pk).status == "expired"
    expired = AuditEntry.objects.get(action="request.expire")
    assert expired.actor is None and expired.after == {"status": "expired"}


def test_extra_hours_let_the_work_past_a_used_up_budget(student, admin, course, frozen_now):
    frozen_now("2030-03-15 12:00")
    budget_create(
        by=admin,
        gpu_hours="1",
        user=student,
        on_exceed="block",
        period="month",
        starts_on=timezone.localdate().replace(day=1),
    )
    now = timezone.now()
    AllocationFactory(user=student, starts_at=now - dt.timedelta(hours=3), ends_at=now - dt.timedelta(hours=1))
    assert budgets_over(user=student, course=None, now=now)
    row = more_request_create(
        user=student, kind="gpu_hours", amount=5, until=now + dt.timedelta(days=2), reason="Deadline."
    )
    more_request_decide(by=admin, request_id=row.pk, decision="approve")
    assert not budgets_over(user=student, course=None, now=timezone.now())


# --- pages ------------------------------------------------------------------------------------------------------------


def test_the_ask_page_takes_the_numbers_from_the_address(client, student, course):
    client.login(username="sam", password=PASSWORD)
    page = client.get("/requests/new/?kind=gpu_hours&amount=12").content.decode()
    assert 'value="12"' in page and 'value="gpu_hours" selected' in page
    until = (timezone.localdate() + dt.timedelta(days=4)).isoformat()
    sent = client.post(
        "/requests/new/",
        {"kind": "gpu_hours", "amount": "12", "until": until, "reason": "Project.", "course": "DL101"},
    )
    assert sent.status_code == 302
    assert "Waiting for a decision" in client.get("/requests/").content.decode()
    bad = client.post("/requests/new/", {"kind": "gpu_hours", "amount": "-1", "until": until, "reason": "x"})
    assert bad.status_code == 400


def test_the_decide_page_confirms_and_decides(client, student, teacher, course):
    row_id = ask(student, course).json()["id"]
    client.login(username="tess", password=PASSWORD)
    listing = client.get("/requests/").content.decode()
    assert f'data-testid="decide-{row_id}"' in listing
    page = client.get(f"/requests/{row_id}/decide/").content.decode()
    assert "Final project runs." in page and 'data-testid="approve"' in page
    done = client.post(
        f"/requests/{row_id}/decide/", {"decision": "approve", "amount": "10", "until": page and "", "reason": ""}
    )
    assert done.status_code == 400  # the end is required to approve
    until = (timezone.localdate() + dt.timedelta(days=6)).isoformat()
    done = client.post(f"/requests/{row_id}/decide/", {"decision": "approve", "amount": "10", "until": until})
    assert done.status_code == 302
    assert MoreRequest.objects.get(pk=row_id).status == "approved"


def test_the_student_sees_no_decide_form_on_their_own_request(client, student, course):
    row_id = ask(student, course).json()["id"]
    client.login(username="sam", password=PASSWORD)
    page = client.get(f"/requests/{row_id}/decide/").content.decode()
    assert 'data-testid="decide-form"' not in page and "cannot decide your own request" in page
    assert client.post(
        f"/requests/{row_id}/decide/", {"decision": "approve", "amount": "1", "until": "2999-01-01"}
    ).status_code in (400, 403)


def test_the_job_refusal_links_to_the_request_form(client, student):
    from accounts.errors import QuotaExceeded

    exc = QuotaExceeded("no", limit="gpu_hours_week", used=19.5, allowed=20, need=4)
    assert exc.extra["ask"] == "/requests/new/?kind=gpu_hours&amount=4"
    assert "ask" not in QuotaExceeded("no", limit="max_jobs", used=2, allowed=2).extra
