"""One answer per refusal: what the caller may not see is 404 on the page and in the API alike; what they may see but
not do is 403 on both, with the rule's one sentence (accounts/permissions.py)."""

import datetime as dt
import html
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import permissions
from accounts.models import Notice
from accounts.services import notice_send, token_issue
from jobs.models import Job
from labs.models import NotebookProfile, NotebookSession, NotebookStatus, Reservation
from labs.reservations.services import NodeRequest, reservation_create
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, NodeFactory, UserFactory
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.django_db

RESERVATIONS = permissions.RESERVATIONS_STAFF_ONLY
APPROVE = "Only admins approve reservations."
OWN_RESERVATION = "Only its owner or an admin may open or cancel this reservation."
OWN_JOB = "Only its owner or an admin may cancel this job."


def as_page(client, user):
    assert client.login(username=user.username, password=PASSWORD)
    return client


def as_api(user):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return api


def forbidden_reason(response) -> str:
    page = response.content.decode()
    start = page.index('data-testid="forbidden-reason">') + len('data-testid="forbidden-reason">')
    return html.unescape(page[start : page.index("</p>", start)])


@pytest.fixture
def booked():
    """Ada's reservation tomorrow, pending approval (a long one, so an admin must approve it)."""
    NodeFactory(name="gpu01")
    ada = UserFactory(username="ada", role="teacher")
    start = timezone.now().replace(microsecond=0) + dt.timedelta(days=1)
    [reservation] = reservation_create(
        by=ada, title="DL-101 lab", starts_at=start, ends_at=start + dt.timedelta(hours=2), nodes=NodeRequest(count=1)
    )
    Reservation.objects.filter(pk=reservation.pk).update(status="pending")
    return reservation


def test_a_student_booking_nodes_reads_one_sentence_on_the_page_and_in_the_api(client):
    student = UserFactory(username="sam", role="student")
    page = as_page(client, student).get("/lab/reservations/new/")
    assert page.status_code == 403 and forbidden_reason(page) == RESERVATIONS
    answer = as_api(student).post("/api/v1/reservations/", {"title": "x"}, format="json")
    assert answer.status_code == 403 and answer.json()["detail"] == RESERVATIONS
    assert answer.json()["code"] == "permission_denied"


def test_another_teachers_reservation_is_403_with_one_sentence_on_the_page_the_api_and_the_cancel(client, booked):
    eve = UserFactory(username="eve", role="teacher")
    as_page(client, eve)
    for url in (f"/lab/reservations/{booked.pk}/", f"/lab/reservations/{booked.pk}/cancel/"):
        page = client.get(url)
        assert page.status_code == 403 and forbidden_reason(page) == OWN_RESERVATION, url
    api = as_api(eve)
    for answer in (api.get(f"/api/v1/reservations/{booked.pk}/"), api.delete(f"/api/v1/reservations/{booked.pk}/")):
        assert answer.status_code == 403 and answer.json()["detail"] == OWN_RESERVATION
    assert Reservation.objects.get(pk=booked.pk).status == "pending"


def test_a_missing_reservation_is_404_on_the_page_and_in_the_api(client, booked):
    ada = booked.owner
    assert as_page(client, ada).get("/lab/reservations/999999/").status_code == 404
    answer = as_api(ada).get("/api/v1/reservations/999999/")
    assert answer.status_code == 404 and answer.json()["code"] == "not_found"


def test_approving_is_for_admins_with_one_sentence_everywhere(client, booked):
    ada = booked.owner
    as_page(client, ada)
    page = client.get("/lab/reservations/approvals/")
    assert page.status_code == 403 and forbidden_reason(page) == APPROVE
    decide = client.post(f"/lab/reservations/{booked.pk}/decide/", {"decision": "approve"})
    assert decide.status_code == 403 and forbidden_reason(decide) == APPROVE
    answer = as_api(ada).post(f"/api/v1/reservations/{booked.pk}/approve/", {}, format="json")
    assert answer.status_code == 403 and answer.json()["detail"] == APPROVE
    assert Reservation.objects.get(pk=booked.pk).status == "pending"
    admin = UserFactory(username="root", role="admin")
    assert as_api(admin).post(f"/api/v1/reservations/{booked.pk}/approve/", {}, format="json").status_code == 200


def test_someone_elses_job_is_404_on_every_page_and_endpoint(client):
    owner, other = UserFactory(username="bo", role="student"), UserFactory(username="cy", role="student")
    job = JobFactory(owner=owner)
    as_page(client, other)
    for url in (f"/jobs/{job.pk}/", f"/jobs/{job.pk}/cancel/"):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/jobs/{job.pk}/cancel/", {"confirm": "yes"}).status_code == 404
    api = as_api(other)
    for answer in (
        api.get(f"/api/v1/jobs/{job.pk}/"),
        api.post(f"/api/v1/jobs/{job.pk}/cancel/"),
        api.get(f"/api/v1/jobs/{job.pk}/logs/"),
    ):
        assert answer.status_code == 404 and answer.json() == {"detail": "No such job.", "code": "not_found"}
    assert Job.objects.get(pk=job.pk).state == "queued"


def test_a_job_a_teacher_may_see_but_not_cancel_is_403_with_one_sentence(client):
    """A teacher sees the jobs booked to their course; cancelling one is for its owner or an admin, on the page and in
    the API."""
    teacher, student = UserFactory(username="ada", role="teacher"), UserFactory(username="bo", role="student")
    course = CourseFactory(code="DL-101")
    course.teachers.add(teacher)
    EnrollmentFactory(course=course, user=student)
    job = JobFactory(owner=student, course=course)
    as_page(client, teacher)
    assert client.get(f"/jobs/{job.pk}/").status_code == 200
    page = client.post(f"/jobs/{job.pk}/cancel/", {"confirm": "yes"})
    assert page.status_code == 403 and forbidden_reason(page) == OWN_JOB
    answer = as_api(teacher).post(f"/api/v1/jobs/{job.pk}/cancel/")
    assert answer.status_code == 403 and answer.json()["detail"] == OWN_JOB
    assert Job.objects.get(pk=job.pk).state == "queued"


def test_someone_elses_notebook_is_404_on_the_page_and_in_the_api(client):
    owner, other = UserFactory(username="bo", role="student"), UserFactory(username="cy", role="student")
    profile = NotebookProfile.objects.create(
        slug="quarter", name="A quarter", image="quay.io/jupyter/pytorch-notebook:cuda12-latest",
        gpu_share=Decimal("0.25"), roles=["student"],
    )  # fmt: skip
    session = NotebookSession.objects.create(
        user=owner, profile=profile, status=NotebookStatus.QUEUED, hub_user="bo", requested_at=timezone.now()
    )
    as_page(client, other)
    assert client.get(f"/notebooks/{session.pk}/stop/").status_code == 404
    assert client.post(f"/notebooks/{session.pk}/stop/", {"confirm": "yes"}).status_code == 404
    assert client.post(f"/notebooks/{session.pk}/extend/").status_code == 404
    api = as_api(other)
    for answer in (api.get(f"/api/v1/notebooks/{session.pk}/"), api.delete(f"/api/v1/notebooks/{session.pk}/")):
        assert answer.status_code == 404 and answer.json()["detail"] == "No such notebook."
    assert NotebookSession.objects.get(pk=session.pk).status == NotebookStatus.QUEUED


@pytest.mark.parametrize(
    "url",
    ["/notebooks/profiles/", "/notebooks/profiles/new/", "/notebooks/course/", "/notebooks/course/DL-101/stop/"],
)
def test_students_on_the_staff_notebook_pages_read_the_rules_sentence(client, url):
    as_page(client, UserFactory(username="sam", role="student"))
    page = client.get(url)
    expected = permissions.PROFILES_STAFF_ONLY if "profiles" in url else permissions.COURSE_NOTEBOOKS_STAFF_ONLY
    assert page.status_code == 403 and forbidden_reason(page) == expected


def test_someone_elses_notice_is_404_and_stays(client):
    owner, other = UserFactory(username="bo", role="student"), UserFactory(username="cy", role="student")
    notice_send(user=owner, text="Your notebook was stopped.", ref="n:1")
    notice = Notice.objects.get(user=owner)
    response = as_page(client, other).post(f"/notices/{notice.pk}/dismiss/")
    assert response.status_code == 404
    notice.refresh_from_db()
    assert notice.read_at is None
