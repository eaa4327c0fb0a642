"""At 100 % a blocking budget refuses new notebooks and jobs that count against it (403 quota_exceeded whose sentence
names the budget, in the API and on the pages, nothing queued); a warn-only one lets them through with a notice."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from accounts.models import Notice
from accounts.quotas import effective_quota
from accounts.services import token_issue
from jobs.models import Job
from labs.models import (
    Budget,
    Node,
    NotebookProfile,
    NotebookSession,
    Reservation,
    ReservationNode,
    ReservationStatus,
)
from tests.factories import PASSWORD
from tests.jobs.factories import IMAGE, JOB_FORM, ImageRuleFactory, lab
from tests.labs.budgets.conftest import held, local

pytestmark = pytest.mark.django_db

JOB = {"name": "mnist", "image": IMAGE, "command": ["python", "train.py"], "gpus": 1, "max_runtime_s": 600}
SENTENCE = (
    "The budget “DL-101 winter term” is used up: 10.5 of 10.0 GPU-hours from 2026-10-01 to 2027-01-31. New notebooks"
    " and jobs that count against it are refused until 2027-02-01; ask your teacher or an admin to raise it."
)


@pytest.fixture
def lab_ready(people, now):
    ImageRuleFactory()
    nodes = lab(2)
    course = people["course"]
    profile = NotebookProfile.objects.create(
        slug="dl101", name="DL-101 quarter", image="quay.io/jupyter/pytorch-notebook:x", gpu_share=Decimal("0.25")
    )
    profile.courses.add(course)
    NotebookProfile.objects.create(
        slug="everyone",
        name="Everyone's quarter",
        image="quay.io/jupyter/pytorch-notebook:x",
        gpu_share=Decimal("0.25"),
        roles=["student"],
    )
    # 10.5 GPU-hours of the course's work this term, on another student's account (Ada's week stays free).
    other = people["teacher"]
    held(other, nodes[0].gpus.get(), course=course, start=local("2026-10-12 08:00"), hours=10.5)
    return people


def course_budget(people, on_exceed: str) -> Budget:
    course = people["course"]
    return Budget.objects.create(
        name="DL-101 winter term",
        course=course,
        starts_on=course.term_start,
        ends_on=course.term_end,
        gpu_hours=Decimal("10"),
        on_exceed=on_exceed,
    )


def api_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return client


def test_a_blocking_budget_refuses_a_notebook_that_counts_for_its_course(lab_ready):
    course_budget(lab_ready, "block")
    response = api_for(lab_ready["student"]).post("/api/v1/notebooks/", {"profile": "dl101"}, format="json")
    assert response.status_code == 403
    assert response.json() == {
        "detail": SENTENCE,
        "code": "quota_exceeded",
        "limit": "budget_gpu_hours",
        "used": 10.5,
        "allowed": 10.0,
        "help": "/help/#limit-budget_gpu_hours",
        "ask": "/requests/new/?kind=gpu_hours&amount=1",  # the request-for-more form, filled in
    }
    assert not NotebookSession.objects.exists()


def test_the_notebooks_page_says_the_same_sentence(lab_ready, client):
    course_budget(lab_ready, "block")
    assert client.login(username="ada", password=PASSWORD)
    response = client.post("/notebooks/", {"profile": "dl101"})
    assert response.status_code == 403
    assert SENTENCE in response.content.decode()
    assert not NotebookSession.objects.exists()


def test_a_notebook_that_counts_for_no_course_is_not_the_courses_budget(lab_ready):
    course_budget(lab_ready, "block")
    response = api_for(lab_ready["student"]).post("/api/v1/notebooks/", {"profile": "everyone"}, format="json")
    assert response.status_code == 202


def test_a_blocking_budget_refuses_a_job_of_its_course_in_the_api_and_the_preview(lab_ready):
    course_budget(lab_ready, "block")
    client = api_for(lab_ready["student"])
    response = client.post("/api/v1/jobs/", {**JOB, "course": "DL-101"}, format="json")
    assert response.status_code == 403
    assert response.json()["detail"] == SENTENCE and response.json()["limit"] == "budget_gpu_hours"
    assert not Job.objects.exists()
    preview = client.post("/api/v1/jobs/preview/", {**JOB, "course": "DL-101"}, format="json")
    assert preview.status_code == 200 and SENTENCE in str(preview.json())
    assert client.post("/api/v1/jobs/", JOB, format="json").status_code == 201  # not the course's work


def test_a_teachers_job_in_the_courses_reservation_counts_for_the_course_without_naming_it(lab_ready, now):
    course_budget(lab_ready, "block")
    tess = lab_ready["teacher"]
    reservation = Reservation.objects.create(
        owner=tess,
        created_by=tess,
        course=lab_ready["course"],
        title="DL-101 lab session",
        starts_at=now - dt.timedelta(minutes=5),
        ends_at=now + dt.timedelta(hours=2),
        status=ReservationStatus.APPROVED,
    )
    node = Node.objects.order_by("pk").first()
    ReservationNode.objects.create(
        reservation=reservation, node=node, starts_at=reservation.starts_at, ends_at=reservation.ends_at
    )
    response = api_for(tess).post("/api/v1/jobs/", {**JOB, "reservation": reservation.pk}, format="json")
    assert response.status_code == 403, response.json()
    assert response.json()["detail"] == SENTENCE and response.json()["limit"] == "budget_gpu_hours"
    assert not Job.objects.exists()


def test_a_persons_blocking_budget_refuses_their_jobs_on_the_page(lab_ready, client, now):
    ada = lab_ready["student"]
    Budget.objects.create(
        name="Ada's November",
        user=ada,
        period="month",
        starts_on=dt.date(2026, 1, 1),
        gpu_hours=Decimal("1"),
        on_exceed="block",
    )
    held(ada, lab_ready["course"].allocations.first().gpu, start=local("2026-11-02 08:00"), hours=1)
    assert client.login(username="ada", password=PASSWORD)
    response = client.post("/jobs/new/", JOB_FORM)
    assert response.status_code == 403
    page = response.content.decode()
    assert (
        "The budget “Ada's November” is used up: 1.0 of 1.0 GPU-hours in November 2026. New notebooks and jobs"
        " that count against it are refused until 2026-12-01; ask an admin to raise it."
    ) in page.replace("&#x27;", "'")
    assert not Job.objects.exists()


def test_warn_only_lets_work_through_and_tells_the_person_once(lab_ready):
    course_budget(lab_ready, "warn")
    ada = lab_ready["student"]
    client = api_for(ada)
    assert client.post("/api/v1/notebooks/", {"profile": "dl101"}, format="json").status_code == 202
    assert client.post("/api/v1/jobs/", {**JOB, "course": "DL-101"}, format="json").status_code == 201
    notice = Notice.objects.get(user=ada)
    assert notice.level == "warning"
    assert notice.text == (
        "The budget “DL-101 winter term” is used up (10.5 of 10.0 GPU-hours from 2026-10-01 to 2027-01-31); your"
        " work still starts, but please tell your teacher or an admin."
    )


def test_a_notebook_refused_for_another_reason_tells_nothing_of_a_warn_only_budget(lab_ready, now):
    course_budget(lab_ready, "warn")
    ada = lab_ready["student"]
    profile = NotebookProfile.objects.get(slug="dl101")
    for number in range(effective_quota(ada).max_notebooks):  # she already runs as many as she may
        NotebookSession.objects.create(
            user=ada, profile=profile, status="ready", hub_user=f"ada-{number}", requested_at=now
        )
    response = api_for(ada).post("/api/v1/notebooks/", {"profile": "dl101"}, format="json")
    assert response.status_code == 403 and response.json()["limit"] == "max_notebooks"
    assert not Notice.objects.filter(user=ada).exists()
