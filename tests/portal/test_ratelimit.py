"""Per-person rate limits on submitting jobs, starting notebooks and booking nodes: 429 `rate_limited` with
Retry-After in the API, a sentence on the pages; another person is unaffected; the window slides on; a cache
that does not answer lets presses through instead of failing them.

The clock is moved with the services' `now`, never slept on.
"""

import datetime as dt
import logging
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.errors import RateLimited
from accounts.ratelimit import rate_limit_hit
from accounts.services import token_issue
from jobs.models import Job
from jobs.services import job_submit
from labs.models import NotebookProfile, NotebookSession, Reservation
from tests.factories import PASSWORD, UserFactory
from tests.jobs.factories import IMAGE, JOB_FORM, ImageRuleFactory, lab

pytestmark = pytest.mark.django_db

JOB = {"name": "mnist", "image": IMAGE, "command": ["python", "train.py"], "gpus": 1, "max_runtime_s": 600}
T0 = dt.datetime(2030, 1, 7, 12, 0, 10, tzinfo=dt.UTC)  # 10 s into a window (windows start at whole minutes)
ROLES = ("student", "teacher", "admin")


@pytest.fixture(autouse=True)
def _lab():
    ImageRuleFactory()
    lab(2)
    NotebookProfile.objects.create(
        slug="quarter",
        name="Quarter",
        image="quay.io/jupyter/base-notebook:latest",
        gpu_share=Decimal("0.25"),
        roles=list(ROLES),
    )


def api_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return client


def person(role: str, name: str | None = None):
    return UserFactory(username=name or f"{role}-rl", role=role)


def booking(hour: int) -> dict:
    day = timezone.localdate() + dt.timedelta(days=2)
    start = dt.datetime.combine(day, dt.time(hour))
    return {
        "title": "Lab",
        "starts_at": start.isoformat(),
        "ends_at": (start + dt.timedelta(hours=1)).isoformat(),
        "node_count": 1,
    }


def assert_rate_limited(response, action: str) -> int:
    assert response.status_code == 429
    body = response.json()
    assert body["code"] == "rate_limited" and body["action"] == action
    assert "Too many" in body["detail"] and "Try again in" in body["detail"]
    retry = int(response["Retry-After"])
    assert retry >= 1 and body["retry_after_s"] == retry
    return retry


# --- The finding: bursts of create-and-cancel, with the limits as shipped ---------------------------------


def test_a_burst_of_job_submit_and_cancel_cycles_gets_429_and_another_person_is_unaffected():
    ada = person("student", "ada")
    client = api_for(ada)
    codes = []
    for _ in range(40):
        response = client.post("/api/v1/jobs/", JOB, format="json")
        codes.append(response.status_code)
        if response.status_code == 201:
            assert client.post(f"/api/v1/jobs/{response.json()['id']}/cancel/").status_code == 200
    assert codes == [201] * 30 + [429] * 10  # RATE_LIMIT_JOB_SUBMIT = 30 a minute
    assert_rate_limited(response, "job_submit")
    assert Job.objects.filter(owner=ada).count() == 30
    assert api_for(person("student", "bob")).post("/api/v1/jobs/", JOB, format="json").status_code == 201


def test_a_burst_of_notebook_start_and_stop_cycles_gets_429_and_another_person_is_unaffected():
    ada = person("student", "ada")
    client = api_for(ada)
    codes = []
    for _ in range(25):
        response = client.post("/api/v1/notebooks/", {"profile": "quarter"}, format="json")
        codes.append(response.status_code)
        if response.status_code == 202:
            assert client.delete(f"/api/v1/notebooks/{response.json()['id']}/").status_code == 202
    assert codes == [202] * 20 + [429] * 5  # RATE_LIMIT_NOTEBOOK_START = 20 a minute
    assert_rate_limited(response, "notebook_start")
    assert NotebookSession.objects.filter(user=ada).count() == 20
    other = api_for(person("student", "bob")).post("/api/v1/notebooks/", {"profile": "quarter"}, format="json")
    assert other.status_code == 202


def test_a_burst_of_reservation_create_and_cancel_cycles_gets_429_and_another_person_is_unaffected():
    grace = person("teacher", "grace")
    client = api_for(grace)
    codes = []
    for _ in range(25):
        response = client.post("/api/v1/reservations/", booking(14), format="json")
        codes.append(response.status_code)
        if response.status_code == 201:
            assert client.delete(f"/api/v1/reservations/{response.json()['id']}/").status_code in (200, 204)
    assert codes == [201] * 20 + [429] * 5  # RATE_LIMIT_RESERVATION_CREATE = 20 a minute
    assert_rate_limited(response, "reservation_create")
    assert Reservation.objects.filter(owner=grace).count() == 20
    assert (
        api_for(person("teacher", "alan")).post("/api/v1/reservations/", booking(14), format="json").status_code == 201
    )


# --- Every role, API and pages (small limits) -------------------------------------------------------------


@pytest.fixture
def small_limits(settings):
    settings.RATE_LIMIT_JOB_SUBMIT = 2
    settings.RATE_LIMIT_NOTEBOOK_START = 2
    settings.RATE_LIMIT_RESERVATION_CREATE = 2
    return settings


@pytest.mark.parametrize("role", ROLES)
def test_job_submit_api_per_role(small_limits, role):
    client = api_for(person(role))
    assert [client.post("/api/v1/jobs/", JOB, format="json").status_code for _ in range(2)] == [201, 201]
    assert_rate_limited(client.post("/api/v1/jobs/", JOB, format="json"), "job_submit")
    assert Job.objects.count() == 2


@pytest.mark.parametrize("role", ROLES)
def test_notebook_start_api_per_role(small_limits, role):
    client = api_for(person(role))
    for _ in range(2):
        response = client.post("/api/v1/notebooks/", {"profile": "quarter"}, format="json")
        assert response.status_code == 202
        client.delete(f"/api/v1/notebooks/{response.json()['id']}/")
    assert_rate_limited(client.post("/api/v1/notebooks/", {"profile": "quarter"}, format="json"), "notebook_start")
    assert NotebookSession.objects.count() == 2


@pytest.mark.parametrize("role", ["teacher", "admin"])
def test_reservation_create_api_per_role(small_limits, role):
    client = api_for(person(role))
    assert [client.post("/api/v1/reservations/", booking(h), format="json").status_code for h in (9, 11)] == [201, 201]
    assert_rate_limited(client.post("/api/v1/reservations/", booking(13), format="json"), "reservation_create")
    assert Reservation.objects.count() == 2


def test_students_booking_nodes_get_403_every_time_never_429(small_limits):
    client = api_for(person("student"))
    codes = {client.post("/api/v1/reservations/", booking(9), format="json").status_code for _ in range(4)}
    assert codes == {403}


def sign_in(client, role):
    user = person(role)
    assert client.login(username=user.username, password=PASSWORD)
    return user


@pytest.mark.parametrize("role", ROLES)
def test_job_form_says_when_to_try_again(client, small_limits, role):
    sign_in(client, role)
    assert [client.post("/jobs/new/", JOB_FORM).status_code for _ in range(2)] == [302, 302]
    response = client.post("/jobs/new/", JOB_FORM)
    assert response.status_code == 429
    html = response.content.decode()
    assert "Too many jobs submitted in a short time: at most 2 per minute. Try again in" in html
    assert Job.objects.count() == 2


@pytest.mark.parametrize("role", ROLES)
def test_notebooks_page_says_when_to_try_again(client, small_limits, role):
    sign_in(client, role)
    for _ in range(2):
        assert client.post("/notebooks/", {"profile": "quarter"}).status_code == 302
        NotebookSession.objects.update(status="stopped")
    response = client.post("/notebooks/", {"profile": "quarter"})
    assert response.status_code == 429
    assert "Too many notebook starts in a short time: at most 2 per minute." in response.content.decode()
    assert NotebookSession.objects.count() == 2


@pytest.mark.parametrize("role", ["teacher", "admin"])
def test_booking_page_says_when_to_try_again(client, small_limits, role):
    sign_in(client, role)
    day = (timezone.localdate() + dt.timedelta(days=2)).isoformat()
    form = {"title": "Lab", "date": day, "mode": "count", "node_count": "1"}
    for start, end in (("09:00", "10:00"), ("11:00", "12:00")):
        assert client.post("/lab/reservations/new/", {**form, "start": start, "end": end}).status_code == 302
    response = client.post("/lab/reservations/new/", {**form, "start": "13:00", "end": "14:00"})
    assert response.status_code == 429
    assert "Too many reservations made in a short time: at most 2 per minute." in response.content.decode()
    assert Reservation.objects.count() == 2


# --- The window: it slides, Retry-After is right, it resets (the clock moved through `now`) -----------------


def test_the_window_slides_and_retry_after_is_when_one_more_fits(settings):
    settings.RATE_LIMIT_JOB_SUBMIT = 3
    ada, bob = person("student", "ada"), person("student", "bob")
    for _ in range(3):
        rate_limit_hit(user=ada, action="job_submit", now=T0)
    with pytest.raises(RateLimited) as refused:
        rate_limit_hit(user=ada, action="job_submit", now=T0)
    # Three presses 10 s into a minute: the next fits once a third of them has slid out, 20 s into the next one.
    assert refused.value.retry_after_s == 70 and refused.value.headers == {"Retry-After": "70"}
    rate_limit_hit(user=bob, action="job_submit", now=T0)  # another person: unaffected
    rate_limit_hit(user=ada, action="notebook_start", now=T0)  # another action: counted apart
    with pytest.raises(RateLimited):
        rate_limit_hit(user=ada, action="job_submit", now=T0 + dt.timedelta(seconds=69))
    rate_limit_hit(user=ada, action="job_submit", now=T0 + dt.timedelta(seconds=70))  # refusals were not counted
    with pytest.raises(RateLimited):
        rate_limit_hit(user=ada, action="job_submit", now=T0 + dt.timedelta(seconds=70))
    # Two windows later nothing of this is left: a full allowance again.
    later = T0 + dt.timedelta(minutes=3)
    for _ in range(3):
        rate_limit_hit(user=ada, action="job_submit", now=later)


@pytest.mark.parametrize("presses_at", [[0], [0, 30], [5, 50, 55], [59, 59, 59, 59]])
def test_a_press_at_the_retry_after_it_was_given_is_let_through(settings, presses_at):
    settings.RATE_LIMIT_NOTEBOOK_START = len(presses_at)
    ada = person("student", "ada")
    start = T0.replace(second=0)
    for second in presses_at:
        rate_limit_hit(user=ada, action="notebook_start", now=start + dt.timedelta(seconds=second))
    moment = start + dt.timedelta(seconds=presses_at[-1])
    with pytest.raises(RateLimited) as refused:
        rate_limit_hit(user=ada, action="notebook_start", now=moment)
    wait = refused.value.retry_after_s
    with pytest.raises(RateLimited):
        rate_limit_hit(user=ada, action="notebook_start", now=moment + dt.timedelta(seconds=wait - 1))
    rate_limit_hit(user=ada, action="notebook_start", now=moment + dt.timedelta(seconds=wait))


def test_the_service_counts_with_its_now_and_writes_nothing_when_refused(settings):
    settings.RATE_LIMIT_JOB_SUBMIT = 1
    ada = person("student", "ada")
    job_submit(user=ada, now=T0, **JOB)
    with pytest.raises(RateLimited):
        job_submit(user=ada, now=T0 + dt.timedelta(seconds=1), **JOB)
    assert Job.objects.count() == 1
    job_submit(user=ada, now=T0 + dt.timedelta(minutes=2), **JOB)
    assert Job.objects.count() == 2


def test_a_limit_of_0_is_no_limit(settings):
    settings.RATE_LIMIT_JOB_SUBMIT = 0
    ada = person("student", "ada")
    for _ in range(100):
        rate_limit_hit(user=ada, action="job_submit", now=T0)


# --- A cache that does not answer ----------------------------------------------------------------------


def test_the_cache_being_down_lets_presses_through_with_a_log_line_and_never_a_500(settings, caplog):
    # A real Redis cache pointed where nothing listens: every call fails with a connection error.
    settings.CACHES = {
        **settings.CACHES,
        "down": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"},
    }
    settings.RATE_LIMIT_CACHE = "down"
    settings.RATE_LIMIT_JOB_SUBMIT = 1
    client = api_for(person("student", "ada"))
    with caplog.at_level(logging.WARNING, logger="accounts.ratelimit"):
        codes = [client.post("/api/v1/jobs/", JOB, format="json").status_code for _ in range(2)]
    assert codes == [201, 201]  # over the limit of 1, let through
    assert "rate limit job_submit" in caplog.text and "not checked, let through" in caplog.text
