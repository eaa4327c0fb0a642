"""The notebooks API as scripts use it: the contract's shapes, bad input, quotas and who may touch what.

Start only writes a queued row, so most of these need no hub; the pass is run where a test needs one.
"""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from django.db import connection
from rest_framework.test import APIClient

from accounts.services import token_issue
from labs.models import NotebookProfile, NotebookSession, NotebookStatus
from tests.factories import CourseFactory, EnrollmentFactory, NodeFactory, UserFactory

# On the lab's default image allow-list (JOBS_IMAGE_ALLOW), which notebook profiles keep to.
IMAGE = "quay.io/jupyter/base-notebook:latest"

URL = "/api/v1/notebooks/"


def client_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return client


@pytest.fixture
def course(db):
    return CourseFactory(code="DL-101")


@pytest.fixture
def profiles(course):
    quarter = NotebookProfile.objects.create(
        slug="quarter", name="Quarter", image=IMAGE, gpu_share=Decimal("0.25"), roles=["student", "teacher"]
    )
    dl = NotebookProfile.objects.create(slug="dl-only", name="DL lab", image=IMAGE, gpu_share=Decimal("0.25"))
    dl.courses.add(course)
    staff = NotebookProfile.objects.create(
        slug="whole", name="Whole", image=IMAGE, gpu_share=Decimal("1"), roles=["teacher", "admin"]
    )
    NotebookProfile.objects.create(slug="retired", name="Old", image=IMAGE, roles=["student"], is_active=False)
    return quarter, dl, staff


def enrolled(course, name="ada"):
    user = UserFactory(username=name)
    EnrollmentFactory(user=user, course=course)
    return user


def test_profiles_list_only_what_i_may_start(course, profiles):
    ada = enrolled(course)
    outsider = UserFactory(username="bob")
    teacher = UserFactory(username="grace", role="teacher")
    assert [p["slug"] for p in client_for(ada).get("/api/v1/profiles/").json()] == ["dl-only", "quarter"]
    assert [p["slug"] for p in client_for(outsider).get("/api/v1/profiles/").json()] == ["quarter"]
    assert sorted(p["slug"] for p in client_for(teacher).get("/api/v1/profiles/").json()) == ["quarter", "whole"]
    first = client_for(ada).get("/api/v1/profiles/").json()[0]
    assert first == {
        "slug": "dl-only",
        "name": "DL lab",
        "description": "",
        "image": IMAGE,
        "gpu_share": 0.25,
        "gpu_mem_mb": None,
        "cpu": 2.0,
        "memory_gb": 8.0,
        "max_session_s": 4 * 3600,
        "courses": ["DL-101"],
    }
    assert APIClient().get("/api/v1/profiles/").status_code == 401


def test_start_answers_202_queued_with_a_position(course, profiles):
    ada = enrolled(course)
    response = client_for(ada).post(URL, {"profile": "dl-only"}, format="json")
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "queued" and body["position"] == 1 and body["url"] is None
    assert body["profile"] == "dl-only" and body["owner"] == "ada" and body["course"] == "DL-101"
    assert client_for(ada).get(f"{URL}{body['id']}/").json()["position"] == 1
    listed = client_for(ada).get(URL, {"mine": "true"}).json()
    assert [row["id"] for row in listed] == [body["id"]]


@pytest.mark.parametrize(
    "payload",
    [{}, {"profile": ""}, {"profile": ["quarter"]}, {"profile": {"a": 1}}, {"profile": "x" * 500}, {"profile": None}],
)
def test_bad_bodies_are_400_naming_the_profile_field(course, profiles, payload):
    response = client_for(enrolled(course)).post(URL, payload, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid" and "profile" in response.json()["fields"]
    assert NotebookSession.objects.count() == 0


@pytest.mark.parametrize("slug", ["nope", "whole", "retired", "dl-only"])
def test_unknown_forbidden_and_retired_profiles_read_the_same(course, profiles, slug):
    outsider = UserFactory(username="bob")  # not in DL-101
    response = client_for(outsider).post(URL, {"profile": slug}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid" and list(body["fields"]) == ["profile"]
    assert "no profile" in body["detail"].lower()
    assert NotebookSession.objects.count() == 0


def test_malformed_json_is_400_and_not_a_500(course, profiles):
    response = client_for(enrolled(course)).post(URL, '{"profile": ', content_type="application/json")
    assert response.status_code == 400 and response.json()["code"] == "parse_error"


def test_the_second_notebook_is_403_with_the_limit(course, profiles):
    ada = enrolled(course)
    client = client_for(ada)
    assert client.post(URL, {"profile": "quarter"}, format="json").status_code == 202
    response = client.post(URL, {"profile": "dl-only"}, format="json")
    assert response.status_code == 403
    assert response.json() | {"detail": ""} == {
        "detail": "",
        "code": "quota_exceeded",
        "limit": "max_notebooks",
        "used": 1,
        "allowed": 1,
        "help": "/help/#limit-max_notebooks",
    }
    assert "Stop one first" in response.json()["detail"]


@pytest.mark.django_db(transaction=True)
def test_twenty_parallel_presses_by_one_student_through_the_api_leave_one_session():
    course = CourseFactory(code="DL-101")
    NotebookProfile.objects.create(slug="quarter", name="Quarter", image=IMAGE, roles=["student"])
    ada = enrolled(course)
    clients = [client_for(ada) for _ in range(20)]
    barrier = threading.Barrier(20)
    codes: list = [None] * 20

    def press(n: int) -> None:
        try:
            barrier.wait()
            codes[n] = clients[n].post(URL, {"profile": "quarter"}, format="json").status_code
        finally:
            connection.close()

    threads = [threading.Thread(target=press, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(codes) == [202] + [403] * 19
    assert NotebookSession.objects.filter(user=ada).count() == 1


def test_who_may_see_and_stop_a_notebook(course, profiles):
    ada, bob = enrolled(course, "ada"), enrolled(course, "bob")
    teacher = UserFactory(username="grace", role="teacher")
    course.teachers.add(teacher)
    other_teacher = UserFactory(username="alan", role="teacher")
    admin = UserFactory(username="root", role="admin")
    # Started under DL-101's profile: booked to DL-101, its teacher's to see (a personal one is not:
    # tests/portal/test_work_visibility.py).
    session_id = client_for(ada).post(URL, {"profile": "dl-only"}, format="json").json()["id"]

    for stranger in (bob, other_teacher):
        assert client_for(stranger).get(f"{URL}{session_id}/").status_code == 404
        assert client_for(stranger).delete(f"{URL}{session_id}/").status_code == 404
        assert client_for(stranger).post(f"{URL}{session_id}/extend/").status_code == 404
        assert session_id not in [row["id"] for row in client_for(stranger).get(URL).json()]
    assert client_for(teacher).get(f"{URL}{session_id}/").status_code == 200
    assert client_for(admin).get(f"{URL}{session_id}/").status_code == 200
    assert APIClient().delete(f"{URL}{session_id}/").status_code == 401
    assert NotebookSession.objects.get(pk=session_id).status == NotebookStatus.QUEUED

    # Extending is the owner's, and only for a running notebook.
    refused = client_for(teacher).post(f"{URL}{session_id}/extend/")
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
    not_yet = client_for(ada).post(f"{URL}{session_id}/extend/")
    assert not_yet.status_code == 409 and "running" in not_yet.json()["detail"]

    stopped = client_for(teacher).delete(f"{URL}{session_id}/")
    assert stopped.status_code == 202 and stopped.json()["status"] == "stopped"
    again = client_for(ada).delete(f"{URL}{session_id}/")
    assert again.status_code == 202 and again.json()["status"] == "stopped"


def test_list_filters_and_their_bad_values(course, profiles):
    ada = enrolled(course)
    client = client_for(ada)
    client.post(URL, {"profile": "quarter"}, format="json")
    assert len(client.get(URL, {"status": "queued"}).json()) == 1
    assert client.get(URL, {"status": "ready"}).json() == []
    for params in ({"status": "running-ish"}, {"limit": "0"}, {"limit": "many"}, {"mine": "perhaps"}):
        response = client.get(URL, params)
        assert response.status_code == 400 and response.json()["code"] == "invalid", params
    assert client.get(f"{URL}999999/").status_code == 404


@pytest.mark.usefixtures("hub_settings")
def test_a_started_notebook_has_its_url_and_extend_adds_time(course, profiles):
    from labs.notebooks.passes import notebooks_pass
    from tests.jobs.factories import wait_until

    NodeFactory(name="gpu01")
    ada = enrolled(course)
    client = client_for(ada)
    session_id = client.post(URL, {"profile": "quarter"}, format="json").json()["id"]

    def is_ready():
        notebooks_pass()
        return client.get(f"{URL}{session_id}/").json()["status"] == "ready"

    wait_until(is_ready, timeout=30, step=0.1)
    body = client.get(f"{URL}{session_id}/").json()
    assert body["position"] is None and body["node"] == "gpu01"
    assert body["url"].endswith(f"/user/u{ada.pk}/nb{session_id}/")
    extended = client.post(f"{URL}{session_id}/extend/")
    assert extended.status_code == 200 and extended.json()["ends_at"] >= body["ends_at"]
    assert client.delete(f"{URL}{session_id}/").json()["status"] == "stopping"
    wait_until(lambda: notebooks_pass() and client.get(f"{URL}{session_id}/").json()["status"] == "stopped", 30, 0.1)
