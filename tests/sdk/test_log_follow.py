"""GET /api/v1/jobs/{id}/logs/?follow=1 on the live portal (uvicorn, Celery, the local backend): lines arrive while the
job writes them, the stream ends with the job, `since` resumes, and followers hold neither threads nor connections."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import psycopg
import pytest

from bench.kit import process_tree

pytestmark = pytest.mark.postgresql_only

SLOW = "import time\nfor i in range({n}):\n    print(f'line {{i}}', flush=True)\n    time.sleep({gap})\n"


def slow_job(portal, token: str, *, n: int = 6, gap: float = 1.0, name: str = "slow", course: str = "") -> int:
    body = {
        "name": name,
        "image": "python:3.12-slim",
        "command": ["python", "-c", SLOW.format(n=n, gap=gap)],
        "gpus": 1,
        "max_runtime_s": 600,
    }
    if course:
        body["course"] = course
    answer = httpx.post(f"{portal.url}/api/v1/jobs/", json=body, headers=auth(token), timeout=30)
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Token {token}"}


def status(portal, token: str, job_id: int) -> str:
    return httpx.get(f"{portal.url}/api/v1/jobs/{job_id}/", headers=auth(token), timeout=30).json()["status"]


def wait_status(portal, token, job_id, wanted, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = status(portal, token, job_id)
        if now in wanted:
            return now
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} never got to {wanted}")


def test_a_followed_log_arrives_line_by_line_while_the_job_runs_and_ends_with_it(portal):
    token = portal.tokens["ada"]
    job_id = slow_job(portal, token)
    seen: list[tuple[str, str]] = []  # (line, the job's status when the line arrived)
    url = f"{portal.url}/api/v1/jobs/{job_id}/logs/"
    timeout = httpx.Timeout(30, read=120)
    with httpx.stream("GET", url, params={"follow": "1"}, headers=auth(token), timeout=timeout) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/plain")
        assert r.headers["x-log-start"] == "0"
        for line in r.iter_lines():
            if line:
                seen.append((line, status(portal, token, job_id)))
    assert [line for line, _ in seen] == [f"line {i}" for i in range(6)]
    # The first lines came while the job was still running: they were streamed, not handed over at the end.
    assert seen[0][1] in ("starting", "running"), seen
    # The stream ended because the job did.
    assert status(portal, token, job_id) == "succeeded"


def test_since_resumes_where_a_stream_was_cut_and_a_finished_job_ends_the_stream_at_once(portal):
    token = portal.tokens["ada"]
    job_id = slow_job(portal, token, n=3, gap=0.1, name="short")
    wait_status(portal, token, job_id, {"succeeded"})
    url = f"{portal.url}/api/v1/jobs/{job_id}/logs/"
    whole = httpx.get(url, params={"follow": "1"}, headers=auth(token), timeout=60).text
    assert whole == "line 0\nline 1\nline 2\n"
    cut = len("line 0\n")
    rest = httpx.get(url, params={"follow": "1", "since": cut}, headers=auth(token), timeout=60)
    assert rest.headers["x-log-start"] == str(cut)
    assert rest.text == "line 1\nline 2\n"
    # The paged log without follow is as it was.
    page = httpx.get(url, headers=auth(token), timeout=60)
    assert page.text == whole and page.headers["x-log-end"] == str(len(whole))


@pytest.mark.parametrize(
    "params,field",
    [({"follow": "1", "tail": "5"}, "follow"), ({"follow": "1", "offset": "0"}, "follow"), ({"since": "3"}, "since")],
)
def test_follow_with_paging_parameters_is_a_clear_400(portal, params, field):
    token = portal.tokens["ada"]
    job_id = slow_job(portal, token, n=1, gap=0, name="params")
    answer = httpx.get(f"{portal.url}/api/v1/jobs/{job_id}/logs/", params=params, headers=auth(token), timeout=30)
    assert answer.status_code == 400
    assert answer.json()["code"] == "invalid" and field in answer.json()["fields"]


def test_another_students_log_is_not_followed(portal):
    job_id = slow_job(portal, portal.tokens["ada"], n=1, gap=0, name="private")
    url = f"{portal.url}/api/v1/jobs/{job_id}/logs/"
    answer = httpx.get(url, params={"follow": "1"}, headers=auth(portal.tokens["bob"]), timeout=30)
    assert answer.status_code == 404


def test_forty_followers_hold_neither_a_thread_nor_a_database_connection_each(portal):
    token = portal.tokens["tess"]
    job_id = slow_job(portal, token, n=400, gap=0.1, name="watched")
    wait_status(portal, token, job_id, {"running"})
    followers, first_line = 40, threading.Barrier(40 + 1, timeout=120)
    stop = threading.Event()

    def follow():
        url = f"{portal.url}/api/v1/jobs/{job_id}/logs/"
        with httpx.stream("GET", url, params={"follow": "1"}, headers=auth(token), timeout=60) as r:
            lines = r.iter_lines()
            next(lines)
            first_line.wait()
            for _ in lines:
                if stop.is_set():
                    return

    threads = [threading.Thread(target=follow, daemon=True) for _ in range(followers)]
    for thread in threads:
        thread.start()
    try:
        first_line.wait()  # every follower has its stream open and reading
        server_threads = sum(len(list(Path(f"/proc/{pid}/task").iterdir())) for pid in process_tree(portal.pids["web"]))
        database = portal.env["DATABASE_URL"]
        with psycopg.connect(database, autocommit=True) as watch:
            connections = watch.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()[0]
        print(f"{followers} followers: {server_threads} server threads, {connections} database connections")
        # The web process's pool holds 8 connections at most: were they the followers', nothing else would answer.
        assert status(portal, token, job_id) == "running"
        assert server_threads < followers, server_threads
        # The worker, beat and collector hold a few; the followers none of their own.
        assert connections < followers // 2, connections
    finally:
        stop.set()
        httpx.post(f"{portal.url}/api/v1/jobs/{job_id}/cancel/", headers=auth(token), timeout=30)
        for thread in threads:
            thread.join(timeout=60)


# --- who may follow: the follower signs the caller in itself, and answers as the API does ---------------------------

PEOPLE = """
import json
from importlib import import_module
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from accounts.models import Course, CourseRole, Enrollment, Role, User
from accounts.services import token_issue

other = Course.objects.create(code="SDK-202", name="Elsewhere", term_start="2000-01-01", term_end="2999-01-01")
tara = User.objects.create(username="tara", role=Role.STUDENT)
Enrollment.objects.create(user=tara, course=other, role=CourseRole.ASSISTANT)
ada = User.objects.get(username="ada")
session = import_module(settings.SESSION_ENGINE).SessionStore()
session[SESSION_KEY] = str(ada.pk)
session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
session[HASH_SESSION_KEY] = ada.get_session_auth_hash()
session.save()
print(json.dumps({"tara": token_issue(user=tara), "cookie": {settings.SESSION_COOKIE_NAME: session.session_key}}))
"""


@pytest.fixture(scope="module")
def people(portal) -> dict:
    """tara, a teaching assistant of another course (her token), and a session cookie of ada's."""
    return portal.shell(PEOPLE)


@pytest.fixture(scope="module")
def done(portal) -> str:
    """The log address of a finished job of ada's (a student of SDK-101, which tess teaches), booked to SDK-101."""
    job_id = slow_job(portal, portal.tokens["ada"], n=1, gap=0, name="roles", course="SDK-101")
    wait_status(portal, portal.tokens["ada"], job_id, {"succeeded"})
    return f"{portal.url}/api/v1/jobs/{job_id}/logs/"


@pytest.fixture(scope="module")
def personal(portal) -> str:
    """The log address of a finished job of ada's booked to no course: hers alone."""
    job_id = slow_job(portal, portal.tokens["ada"], n=1, gap=0, name="personal")
    wait_status(portal, portal.tokens["ada"], job_id, {"succeeded"})
    return f"{portal.url}/api/v1/jobs/{job_id}/logs/"


def both(url: str, **kwargs) -> tuple[httpx.Response, httpx.Response]:
    """The follower's answer and the API's own (the same request without follow, answered by Django)."""
    return httpx.get(url, params={"follow": "1"}, timeout=30, **kwargs), httpx.get(url, timeout=30, **kwargs)


@pytest.mark.parametrize("who", ["ada", "tess", "root"])
def test_the_owner_the_courses_teacher_and_an_admin_follow_the_log(portal, done, who):
    answer = httpx.get(done, params={"follow": "1"}, headers=auth(portal.tokens[who]), timeout=30)
    assert answer.status_code == 200 and answer.text == "line 0\n"
    assert answer.headers["x-log-start"] == "0"


def test_the_owners_session_cookie_follows_the_log(done, people):
    answer = httpx.get(done, params={"follow": "1"}, cookies=people["cookie"], timeout=30)
    assert answer.status_code == 200 and answer.text == "line 0\n"


def test_the_courses_teacher_gets_404_on_a_job_booked_to_no_course(portal, personal):
    followed, paged = both(personal, headers=auth(portal.tokens["tess"]))
    assert followed.status_code == paged.status_code == 404
    assert followed.json() == paged.json() and followed.json()["code"] == "not_found"
    mine = httpx.get(personal, params={"follow": "1"}, headers=auth(portal.tokens["ada"]), timeout=30)
    assert mine.status_code == 200 and mine.text == "line 0\n"


def test_a_teaching_assistant_of_another_course_gets_404(done, people):
    followed, paged = both(done, headers=auth(people["tara"]))
    assert followed.status_code == paged.status_code == 404
    assert followed.json() == paged.json() and followed.json()["code"] == "not_found"


def test_anonymous_gets_the_apis_401(done):
    followed, paged = both(done)
    assert followed.status_code == paged.status_code == 401
    assert followed.json() == paged.json() and followed.json()["code"] == "not_authenticated"
    assert followed.headers["www-authenticate"] == paged.headers["www-authenticate"] == "Token"


def test_a_bad_token_gets_the_apis_401(done):
    followed, paged = both(done, headers=auth("not-a-token"))
    assert followed.status_code == paged.status_code == 401
    assert followed.json() == paged.json() and followed.json()["code"] == "authentication_failed"
    assert followed.headers["www-authenticate"] == paged.headers["www-authenticate"] == "Token"


def test_a_host_not_allowed_gets_the_apis_400(portal, done):
    followed, paged = both(done, headers={**auth(portal.tokens["ada"]), "Host": "portal.evil.example"})
    assert followed.status_code == paged.status_code == 400
    assert followed.json() == paged.json()


def test_the_last_follow_value_counts_as_the_view_reads_it(portal, done):
    token = portal.tokens["ada"]
    paged = httpx.get(f"{done}?follow=1&follow=0", headers=auth(token), timeout=30)
    assert paged.status_code == 200 and paged.text == "line 0\n"
    assert paged.headers["x-log-truncated"] == "false"  # a page (Django's view): follow=0 counted
    followed = httpx.get(f"{done}?follow=0&follow=1", headers=auth(token), timeout=30)
    assert followed.status_code == 200 and followed.text == "line 0\n"
    assert "x-log-truncated" not in followed.headers and followed.headers["x-log-attempt"] == "1"  # a stream


REVOCABLE = """
import json
from accounts.models import User
from accounts.services import token_create
token, key = token_create(user=User.objects.get(username="ada"), name="to be revoked")
print(json.dumps({"id": token.pk, "key": key}))
"""


def test_revoking_the_token_ends_the_log_it_follows_and_resuming_says_why(portal):
    token = portal.shell(REVOCABLE)
    job_id = slow_job(portal, token["key"], n=1200, gap=0.05, name="revoked")  # a minute of output
    url = f"{portal.url}/api/v1/jobs/{job_id}/logs/"
    try:
        with httpx.stream("GET", url, params={"follow": "1"}, headers=auth(token["key"]), timeout=60) as r:
            assert r.status_code == 200
            lines = r.iter_lines()
            assert next(lines) == "line 0"
            portal.shell(
                "from accounts.models import User\nfrom accounts.services import token_revoke\n"
                f"token_revoke(user=User.objects.get(username='ada'), token_id={token['id']})\nprint('{{}}')"
            )
            received = 1 + sum(1 for _ in lines)  # the stream ends within CREDENTIAL_RECHECK_S, not with the job
        assert status(portal, portal.tokens["ada"], job_id) == "running"
        assert received < 1200
        resumed = httpx.get(url, params={"follow": "1", "since": 7}, headers=auth(token["key"]), timeout=30)
        assert resumed.status_code == 401 and resumed.json()["detail"].startswith("This API token was revoked on ")
    finally:
        httpx.post(f"{portal.url}/api/v1/jobs/{job_id}/cancel/", headers=auth(portal.tokens["ada"]), timeout=30)
