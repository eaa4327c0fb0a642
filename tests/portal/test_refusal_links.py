"""A refusal a person can act on, shown on a form page, links to the help page's row that explains it: the `help`
the API gives with the refusal (QuotaExceeded), on the job form, the template form, the booking form and the
notebook start."""

import html
from decimal import Decimal

import pytest

from accounts.models import Quota
from jobs.models import Job
from labs.images import ImageRule
from labs.models import NotebookProfile, NotebookSession
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory, lab
from tests.labs.reservations.test_pages import form as booking_form
from tests.labs.reservations.test_pages import lab as booking_lab  # noqa: F401

pytestmark = pytest.mark.django_db


def help_link(response) -> str:
    page = response.content.decode()
    marker = 'data-testid="refusal-help">'
    assert marker in page, page[page.find('role="alert"') - 200 : page.find('role="alert"') + 600]
    start = page.rindex('href="', 0, page.index(marker)) + len('href="')
    return html.unescape(page[start : page.index('"', start)])


def signed_in(client, username: str, role: str = "student"):
    user = UserFactory(username=username, role=role)
    assert client.login(username=username, password=PASSWORD)
    return user


def test_the_job_form_links_a_quota_refusal_to_its_help_row(client):
    ImageRuleFactory()
    lab(1)
    user = signed_in(client, "sam")
    Quota.objects.create(user=user, max_jobs=0)
    response = client.post(
        "/jobs/new/",
        {
            "name": "a",
            "image": IMAGE,
            "kind": "command",
            "command": "python x.py",
            "preset": "",
            "gpus": "1",
            "nodes": "1",
            "max_runtime_s": "600",
            "priority": "normal",
        },
    )
    assert response.status_code == 403 and "your limit is 0" in response.content.decode()
    assert help_link(response) == "/help/#limit-max_jobs"
    assert 'id="limit-max_jobs"' in client.get("/help/").content.decode()
    assert not Job.objects.exists()


def test_a_refusal_that_is_no_limit_has_no_help_link(client):
    ImageRuleFactory()
    lab(1)
    signed_in(client, "sam")
    response = client.post(
        "/jobs/new/",
        {
            "name": "a",
            "image": "docker.io/evil/x:1",
            "kind": "command",
            "command": "ls",
            "preset": "",
            "gpus": "1",
            "nodes": "1",
            "max_runtime_s": "600",
            "priority": "normal",
        },
    )
    assert response.status_code == 400 and 'data-testid="refusal-help"' not in response.content.decode()


def test_the_template_form_links_a_quota_refusal(client):
    from jobs.services.templates import template_save
    from tests.jobs.test_templates import TEMPLATE

    ImageRuleFactory()
    lab(1)
    course = CourseFactory(code="ML-101")
    teacher = UserFactory(username="tess", role="teacher")
    course.teachers.add(teacher)
    template = template_save(user=teacher, course=course, **{**TEMPLATE, "parameters": []})
    user = signed_in(client, "sam")
    EnrollmentFactory(user=user, course=course)
    Quota.objects.create(user=user, gpu_hours_week=Decimal("0.01"))
    response = client.post(f"/jobs/new/template/{template.pk}/", {})
    page = response.content.decode()
    assert response.status_code == 403, page[page.find('id="template-fill"') : page.find('id="template-fill"') + 1500]
    assert help_link(response) == "/help/#limit-gpu_hours_week"


def test_the_booking_form_links_a_quota_refusal(client, booking_lab):  # noqa: F811
    ada = signed_in(client, "ada", "teacher")
    Quota.objects.create(user=ada, reservation_max_hours=1)
    response = client.post("/lab/reservations/new/", booking_form())
    assert response.status_code == 403
    assert help_link(response) == "/help/#limit-reservation_max_hours"


def test_the_notebook_start_links_a_quota_refusal(client):
    user = signed_in(client, "sam")
    ImageRule.objects.create(pattern="quay.io/jupyter/base-notebook:latest")
    NotebookProfile.objects.create(
        slug="quarter", name="Quarter", image="quay.io/jupyter/base-notebook:latest", roles=["student"]
    )
    Quota.objects.create(user=user, gpu_hours_week=Decimal("0"))
    response = client.post("/notebooks/", {"profile": "quarter"})
    assert response.status_code == 403, response.content.decode()[:2000]
    assert help_link(response) == "/help/#limit-gpu_hours_week"
    assert not NotebookSession.objects.exists()


def test_will_it_start_now_links_the_limit_that_says_no_on_the_page_and_in_the_api(client):
    from rest_framework.test import APIClient

    from accounts.services import token_issue

    ImageRuleFactory()
    lab(1)
    user = signed_in(client, "sam")
    Quota.objects.create(user=user, max_jobs=0)
    fields = {"name": "a", "image": IMAGE, "kind": "command", "command": "python x.py", "preset": "", "gpus": "1"}
    fields |= {"nodes": "1", "max_runtime_s": "600", "priority": "normal", "action": "preview"}
    page = client.post("/jobs/new/", fields).content.decode()
    assert "No: You have 0 jobs queued or running" in page
    assert '<p id="job-preview-help"><a href="/help/#limit-max_jobs" data-testid="preview-help">' in page
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    body = {"name": "a", "image": IMAGE, "command": ["python", "x.py"], "gpus": 1, "max_runtime_s": 600}
    answer = api.post("/api/v1/jobs/preview/", body, format="json").json()
    assert answer["starts_now"] is False and answer["help"] == "/help/#limit-max_jobs"
    Quota.objects.filter(user=user).update(max_jobs=5)
    answer = api.post("/api/v1/jobs/preview/", body, format="json").json()
    assert answer["starts_now"] is True and answer["help"] == ""
