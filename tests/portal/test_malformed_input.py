"""Malformed input found by probing the running portal: each answered 500; now a 4xx that says why, and no row.

Deeply nested JSON, NUL characters (JSON, form posts, query strings, paths), lone surrogates, and dates at the
calendar's edges (year 1, year 9999) in API and page parameters.
"""

import datetime as dt
import json

import pytest
from django.utils import timezone

from accounts.models import Notice
from jobs.models import Job
from labs.models import Reservation
from tests.factories import PASSWORD, NodeFactory, UserFactory
from tests.jobs.factories import IMAGE, DatasetFactory, ImageRuleFactory

pytestmark = pytest.mark.django_db

JOB = {"name": "mnist", "image": IMAGE, "command": ["python", "train.py"], "gpus": 1, "max_runtime_s": 3600}


@pytest.fixture
def lab():
    ImageRuleFactory()
    DatasetFactory(name="imagenet")
    return [NodeFactory(name=f"gpu{n:02d}") for n in range(1, 4)]


def tomorrow_at(hour: int) -> str:
    day = timezone.localdate() + dt.timedelta(days=1)
    return timezone.make_aware(dt.datetime.combine(day, dt.time(hour))).isoformat()


def assert_parse_error(response, *words: str) -> dict:
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert body["code"] == "parse_error", body
    assert all(word in body["detail"] for word in words), body
    return body


# --- JSON nested deeper than anyone writes --------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [100_000, 1_000])
def test_deeply_nested_json_to_the_anonymous_token_endpoint_is_400(api, depth):
    response = api.post("/api/v1/token/", "[" * depth + "]" * depth, content_type="application/json")
    assert_parse_error(response, "nested")


def test_deeply_nested_json_in_a_job_field_is_400_and_queues_nothing(api_as, lab):
    nested = "[" * 100_000 + "]" * 100_000
    raw = json.dumps({**JOB, "command": "@"}).replace('"@"', nested)
    response = api_as("student").post("/api/v1/jobs/", raw, content_type="application/json")
    assert_parse_error(response, "nested")
    assert not Job.objects.exists()


def test_json_nested_a_little_is_still_read(api_as, lab):
    response = api_as("student").post("/api/v1/jobs/", {**JOB, "env": {"A": "1"}}, format="json")
    assert response.status_code == 201


# --- NUL characters, anywhere ---------------------------------------------------------------------------------------


def test_nul_in_a_dataset_name_is_400_and_queues_nothing(api_as, lab):
    response = api_as("student").post("/api/v1/jobs/", {**JOB, "datasets": ["a\u0000b"]}, format="json")
    assert_parse_error(response, "NUL")
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    "change",
    [{"name": "a\u0000"}, {"env": {"A\u0000": "1"}}, {"env": {"A": "\u0000"}}, {"command": ["python", "\u0000"]}],
    ids=["string", "key", "value", "list item"],
)
def test_nul_anywhere_in_a_json_body_is_400(api_as, lab, change):
    response = api_as("teacher").post("/api/v1/jobs/", {**JOB, **change}, format="json")
    assert_parse_error(response, "NUL")
    assert not Job.objects.exists()


def test_lone_surrogate_in_json_is_400(api_as, lab):
    raw = json.dumps({**JOB, "name": "@"}).replace('"@"', '"\\ud800"')
    response = api_as("student").post("/api/v1/jobs/", raw, content_type="application/json")
    assert_parse_error(response)
    assert not Job.objects.exists()


def test_nul_in_a_reservation_is_400_and_books_nothing(api_as, lab):
    body = {"title": "DL\u0000", "starts_at": tomorrow_at(14), "ends_at": tomorrow_at(16), "node_count": 1}
    response = api_as("teacher").post("/api/v1/reservations/", body, format="json")
    assert_parse_error(response, "NUL")
    assert not Reservation.objects.exists()


@pytest.mark.parametrize(
    "path", ["/api/v1/jobs/?status=%00", "/api/v1/notebooks/?status=a%00b", "/api/v1/jobs/%00/", "/api/v1/x%00/"]
)
def test_nul_in_an_api_query_string_or_path_is_400_json(api_as, path):
    response = api_as("student").get(path)
    assert_parse_error(response, "NUL")


@pytest.mark.parametrize(
    "path", ["/lab/nodes/%00/", "/lab/nodes/?status=%00", "/lab/reservations/?week=%00", "/jobs/new/?name=%00"]
)
def test_nul_in_a_page_path_or_query_is_a_400_page(client, path):
    UserFactory(username="ada", role="teacher")
    assert client.login(username="ada", password=PASSWORD)
    response = client.get(path)
    assert response.status_code == 400
    assert "NUL" in response.content.decode()


def test_nul_in_a_form_post_is_400_and_changes_nothing(client, lab):
    admin = UserFactory(username="root", role="admin")
    teacher = UserFactory(username="ada", role="teacher")
    start = timezone.now() + dt.timedelta(days=1)
    reservation = Reservation.objects.create(
        owner=teacher, created_by=teacher, title="big", starts_at=start, ends_at=start + dt.timedelta(hours=2),
        status="pending",
    )  # fmt: skip
    assert client.login(username=admin.username, password=PASSWORD)
    response = client.post(
        f"/lab/reservations/{reservation.pk}/decide/", {"decision": "reject", "reason": "no\u0000pe"}
    )
    assert response.status_code == 400 and "NUL" in response.content.decode()
    reservation.refresh_from_db()
    assert reservation.status == "pending"
    assert not Notice.objects.exists()


def test_nul_in_a_token_header_is_401(api):
    response = api.get("/api/v1/me/", HTTP_AUTHORIZATION="Token abc\u0000def")
    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"


# --- Dates at the calendar's edges ----------------------------------------------------------------------------------


@pytest.mark.parametrize("week", ["9999-12-31", "0001-01-01", "0001-01-07"])
def test_a_week_at_the_calendars_edge_is_a_400_page(client, week):
    UserFactory(username="ada", role="teacher")
    assert client.login(username="ada", password=PASSWORD)
    response = client.get(f"/lab/reservations/?week={week}")
    assert response.status_code == 400
    assert "week" in response.content.decode()


@pytest.mark.parametrize(
    "query,field",
    [
        ("from=9999-12-30T00:00:00Z", "from"),
        ("from=9999-12-31T23:59:59-12:00", "from"),
        ("from=0001-01-01T00:00:00%2B14:00", "from"),
        ("to=0001-01-01T00:00:00", "to"),
        ("from=2030-01-01T00:00:00Z&to=9999-12-31T00:00:00Z", "to"),
    ],
)
def test_reservation_list_window_at_the_calendars_edge_is_400_naming_the_field(api_as, query, field):
    response = api_as("teacher").get(f"/api/v1/reservations/?{query}")
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert body["code"] == "invalid" and field in body["fields"], body


@pytest.mark.parametrize(
    "starts_at,ends_at,field",
    [
        ("9999-12-31T22:00:00", "9999-12-31T23:00:00", "starts_at"),
        ("0001-01-01T00:00:00", "0001-01-01T02:00:00", "starts_at"),
    ],
)
def test_availability_at_the_calendars_edge_is_400(api_as, starts_at, ends_at, field):
    response = api_as("teacher").get(f"/api/v1/availability/?starts_at={starts_at}&ends_at={ends_at}")
    assert response.status_code == 400
    assert field in response.json()["fields"]


@pytest.mark.parametrize(
    "change,field",
    [
        ({"starts_at": "0001-01-01T00:00:00", "ends_at": "0001-01-01T02:00:00"}, "starts_at"),
        ({"starts_at": "9999-12-31T20:00:00", "ends_at": "9999-12-31T22:00:00"}, "starts_at"),
        ({"repeat_weekly_until": "9999-12-31"}, "repeat_weekly_until"),
    ],
)
def test_reservation_at_the_calendars_edge_is_400_and_books_nothing(api_as, lab, change, field):
    body = {"title": "DL", "starts_at": tomorrow_at(14), "ends_at": tomorrow_at(16), "node_count": 1, **change}
    response = api_as("admin").post("/api/v1/reservations/", body, format="json")
    assert response.status_code == 400, response.content[:300]
    assert field in response.json()["fields"]
    assert not Reservation.objects.exists()


@pytest.mark.parametrize(
    "change,field", [({"date": "0001-01-01", "start": "00:00"}, "date"), ({"repeat_weekly_until": "9999-12-31"}, "")]
)
def test_booking_page_at_the_calendars_edge_is_a_form_error(client, lab, change, field):
    UserFactory(username="ada", role="teacher")
    assert client.login(username="ada", password=PASSWORD)
    day = (timezone.localdate() + dt.timedelta(days=1)).isoformat()
    form = {"title": "DL", "date": day, "start": "14:00", "end": "16:00", "mode": "count", "node_count": "1", **change}
    response = client.post("/lab/reservations/new/", form)
    assert response.status_code == 400
    if field:
        assert field in response.context["form"].errors
    assert not Reservation.objects.exists()


@pytest.mark.parametrize("seconds", [10**30, 2**63, -(2**63) - 1])
def test_huge_runtimes_are_400_naming_the_field(api_as, lab, seconds):
    response = api_as("student").post("/api/v1/jobs/", {**JOB, "max_runtime_s": seconds}, format="json")
    assert response.status_code == 400
    assert "max_runtime_s" in response.json()["fields"]
    assert not Job.objects.exists()
