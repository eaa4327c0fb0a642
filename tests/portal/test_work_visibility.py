"""Who sees whose work, per course and term (accounts.selectors.work_visible_to), through every door: the jobs
list, page, API, logs (plain and followed, under WSGI and the ASGI follower), the notebooks pages and API, the usage
API, its CSV and the course page's CSV.

It is Wednesday 11 March 2026, 12:00 in the lab's zone. bo is a student of DL-101 and CV-201 (both in term) and of
ML-100, whose term ended yesterday. ada teaches DL-101 and ML-100, tina assists DL-101, eve teaches CV-201; cy is
another student of DL-101 and root an admin. bo's work: some booked to DL-101, some to no course ("personal"), some
to CV-201, some to ML-100 during its term ("old") and some booked to ML-100 after its term ended ("late": an admin's
booking, a term moved). The rule: a teacher sees the work booked to their course in its term, also once the term is
over; never a student's personal work or work booked to another course; an assistant the same of the course's
students (notebooks and usage; nobody's jobs); admins everything; everyone their own.
"""

from __future__ import annotations

import asyncio
import csv
import datetime as dt
import io
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken, User
from accounts.services import token_issue
from jobs.models import JobState
from labs.models import Allocation, NotebookProfile, NotebookSession, NotebookStatus
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, NodeFactory, UserFactory
from tests.jobs.factories import JobFactory, local_backend_fixture  # noqa: F401

NOW = "2026-03-11 12:00"
BOS = ("dl", "personal", "cv", "old", "late")
# What each viewer sees of bo's work. Notebooks are never booked after a term here (a session needs the course
# active to count for it), so "old" and "late" are jobs and ledger entries only.
JOBS = {"bo": set(BOS), "cy": set(), "ada": {"dl", "old"}, "tina": set(), "eve": {"cv"}, "root": set(BOS)}
NOTEBOOKS = {"bo": {"dl", "personal", "cv"}, "cy": set(), "ada": {"dl"}, "tina": {"dl"}, "eve": {"cv"}}
NOTEBOOKS["root"] = NOTEBOOKS["bo"]
USAGE = {**JOBS, "tina": {"dl"}}
VIEWERS = tuple(JOBS)  # student (bo himself, and cy), teacher (ada, eve), assistant (tina), admin (root)


def local(text: str) -> dt.datetime:
    return timezone.make_aware(dt.datetime.fromisoformat(text))


def build_lab() -> dict:
    term = {"term_start": dt.date(2026, 2, 1), "term_end": dt.date(2026, 7, 31)}
    dl, cv = CourseFactory(code="DL-101", **term), CourseFactory(code="CV-201", **term)
    ml = CourseFactory(code="ML-100", term_start=dt.date(2025, 10, 1), term_end=dt.date(2026, 3, 10))
    people = {name: UserFactory(username=name, role="student") for name in ("bo", "cy", "tina")}
    people |= {name: UserFactory(username=name, role="teacher") for name in ("ada", "eve")}
    people["root"] = UserFactory(username="root", role="admin")
    dl.teachers.add(people["ada"])
    ml.teachers.add(people["ada"])
    cv.teachers.add(people["eve"])
    for course in (dl, cv, ml):
        EnrollmentFactory(user=people["bo"], course=course)
    EnrollmentFactory(user=people["cy"], course=dl)
    EnrollmentFactory(user=people["tina"], course=dl, role="assistant")
    now = timezone.now()
    booked = {"dl": (dl, now), "personal": (None, now), "cv": (cv, now)}
    booked |= {"old": (ml, local("2026-03-05 10:00")), "late": (ml, now)}
    jobs = {
        name: JobFactory(
            owner=people["bo"],
            name=f"bo-{name}",
            course=course,
            env={"SECRET": f"secret-{name}"},
            state=JobState.SUCCEEDED,
            node_names=["gpu01"],
            submitted_at=at - dt.timedelta(hours=2),
            queued_since=at - dt.timedelta(hours=2),
            started_at=at - dt.timedelta(hours=1),
            finished_at=at,
        )
        for name, (course, at) in booked.items()
    }
    profile = NotebookProfile.objects.create(slug="quarter", name="Quarter", image="python:3.12", roles=["student"])
    sessions = {
        name: NotebookSession.objects.create(
            user=people["bo"], profile=profile, course=booked[name][0], hub_user="bo", requested_at=now
        )
        for name in ("dl", "personal", "cv")
    }
    gpu = NodeFactory(name="gpu01").gpus.first()
    entries = {
        name: Allocation.objects.create(
            user=people["bo"],
            course=course,
            gpu=gpu,
            kind="job",
            ref=f"job:{jobs[name].pk}#1",
            share=Decimal("1"),
            starts_at=at - dt.timedelta(hours=1),
            ends_at=at,
        )
        for name, (course, at) in booked.items()
    }
    return {"people": people, "jobs": jobs, "sessions": sessions, "entries": entries}


@pytest.fixture
def lab(db, frozen_now):
    frozen_now(NOW)
    return build_lab()


def api_of(name: str | None) -> APIClient:
    client = APIClient()
    if name is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=User.objects.get(username=name))}")
    return client


def page_of(name: str | None) -> Client:
    client = Client()
    if name is not None:
        assert client.login(username=name, password=PASSWORD)
    return client


def write_logs(local_backend, jobs) -> None:
    for name, job in jobs.items():
        directory = local_backend.root / f"job-{job.pk}-a1"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "rank-0.log").write_bytes(f"log of {name}\n".encode())


# --- Jobs ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("viewer", VIEWERS)
def test_the_jobs_api_shows_a_job_with_its_env_and_logs_only_to_whom_the_rule_allows(lab, local_backend, viewer):
    write_logs(local_backend, lab["jobs"])
    client = api_of(viewer)
    listed = {job["name"] for job in client.get("/api/v1/jobs/", {"limit": 100}).json()}
    assert {name for name in BOS if f"bo-{name}" in listed} == JOBS[viewer]
    for name, job in lab["jobs"].items():
        detail = client.get(f"/api/v1/jobs/{job.pk}/")
        logs = client.get(f"/api/v1/jobs/{job.pk}/logs/")
        if name in JOBS[viewer]:
            assert detail.status_code == 200 and detail.json()["env"] == {"SECRET": f"secret-{name}"}
            assert logs.status_code == 200 and logs.content == f"log of {name}\n".encode()
        else:
            for response in (detail, logs):
                assert response.status_code == 404, (name, response.content)
                assert response.json() == {"detail": "No such job.", "code": "not_found"}  # no existence leak
            cancel = client.post(f"/api/v1/jobs/{job.pk}/cancel/")
            assert cancel.status_code == 404


@pytest.mark.parametrize("viewer", VIEWERS)
def test_the_job_pages_show_a_job_only_to_whom_the_rule_allows(lab, viewer):
    client = page_of(viewer)
    listing = client.get("/jobs/").content.decode()
    assert {name for name in BOS if f"bo-{name}<" in listing} == JOBS[viewer]
    for name, job in lab["jobs"].items():
        assert client.get(f"/jobs/{job.pk}/").status_code == (200 if name in JOBS[viewer] else 404), name


def test_the_signed_out_see_no_job(lab):
    job = lab["jobs"]["dl"]
    for path in ("/api/v1/jobs/", f"/api/v1/jobs/{job.pk}/", f"/api/v1/jobs/{job.pk}/logs/"):
        assert APIClient().get(path).status_code == 401
    response = Client().get(f"/jobs/{job.pk}/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def asgi_follow(user: User | None, job_id: int) -> tuple[int, bytes]:
    """GET /api/v1/jobs/{id}/logs/?follow=1 through the ASGI follower (portal/log_follow_app.py), signed in with an
    API token as portal.ws_auth signs a token in (the follower looks at its credential again while it streams)."""
    from portal.log_follow_app import follow_app

    scope = {
        "type": "http",
        "method": "GET",
        "path": f"/api/v1/jobs/{job_id}/logs/",
        "query_string": b"follow=1",
        "headers": [(b"host", b"testserver")],
        "user": user,
    }
    if user is not None:
        token_issue(user=user)
        scope.update(auth="token", auth_token_id=ApiToken.objects.filter(user=user).latest("pk").pk)
    sent: list[dict] = []

    async def receive():
        await asyncio.sleep(3600)  # the client stays until the answer ends

    async def send(message):
        sent.append(message)

    async def run():
        task = asyncio.ensure_future(follow_app(scope, receive, send))
        while not (sent and sent[-1]["type"] == "http.response.body" and not sent[-1].get("more_body")):
            await asyncio.sleep(0.01)
        task.cancel()

    asyncio.run(asyncio.wait_for(run(), timeout=30))
    body = b"".join(message.get("body", b"") for message in sent if message["type"] == "http.response.body")
    return sent[0]["status"], body


@pytest.mark.django_db(transaction=True)  # the followers read the job from other threads
@pytest.mark.parametrize("viewer", ["cy", "ada", "tina", "eve", "root"])
def test_a_followed_log_is_only_for_whom_may_see_the_job(frozen_now, local_backend, settings, viewer):
    frozen_now(NOW)
    settings.JOBS_LOG_FOLLOW_POLL_MS = 20
    built = build_lab()
    write_logs(local_backend, built["jobs"])
    client, user = api_of(viewer), User.objects.get(username=viewer)
    for name, job in built["jobs"].items():
        wsgi = client.get(f"/api/v1/jobs/{job.pk}/logs/", {"follow": 1})
        status, body = asgi_follow(user, job.pk)
        if name in JOBS[viewer]:
            assert wsgi.status_code == 200 and b"".join(wsgi) == f"log of {name}\n".encode()
            assert (status, body) == (200, f"log of {name}\n".encode())
        else:
            assert wsgi.status_code == 404 and wsgi.json()["code"] == "not_found", name
            assert status == 404 and b'"not_found"' in body and b"secret" not in body, name


# --- Notebooks -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("viewer", VIEWERS)
def test_the_notebooks_api_and_pages_show_a_session_only_to_whom_the_rule_allows(lab, viewer):
    client = api_of(viewer)
    listed = {row["id"] for row in client.get("/api/v1/notebooks/").json()}
    ids = {session.pk: name for name, session in lab["sessions"].items()}
    assert {ids[pk] for pk in listed if pk in ids} == NOTEBOOKS[viewer]
    pages = page_of(viewer)
    for name, session in lab["sessions"].items():
        expected = 200 if name in NOTEBOOKS[viewer] else 404
        assert client.get(f"/api/v1/notebooks/{session.pk}/").status_code == expected, name
        assert pages.get(f"/notebooks/{session.pk}/stop/").status_code == expected, name
        if expected == 404:
            assert client.delete(f"/api/v1/notebooks/{session.pk}/").status_code == 404
            assert pages.post(f"/notebooks/{session.pk}/stop/", {"confirm": "yes"}).status_code == 404
    assert set(NotebookSession.objects.values_list("status", flat=True)) == {NotebookStatus.QUEUED}


def test_the_course_notebooks_page_shows_only_what_was_booked_to_the_course(lab):
    for viewer in ("ada", "tina"):
        html = page_of(viewer).get("/notebooks/course/").content.decode()
        shown = {name for name, session in lab["sessions"].items() if f'data-notebook-id="{session.pk}"' in html}
        assert shown == {"dl"}, viewer


def test_a_teacher_stopping_all_of_a_course_leaves_the_students_other_notebooks(lab):
    response = page_of("ada").post("/notebooks/course/DL-101/stop/", {"confirm": "yes"})
    assert response.status_code == 302
    status = {name: NotebookSession.objects.get(pk=s.pk).status for name, s in lab["sessions"].items()}
    assert status == {"dl": NotebookStatus.STOPPED, "personal": NotebookStatus.QUEUED, "cv": NotebookStatus.QUEUED}


# --- Usage -----------------------------------------------------------------------------------------------------------


def entries_seen(response, lab) -> set[str]:
    rows = csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode()))
    refs = {entry.ref: name for name, entry in lab["entries"].items()}
    return {refs[row["ref"]] for row in rows if row["ref"] in refs}


@pytest.mark.parametrize("viewer", VIEWERS)
def test_the_usage_api_and_its_csv_show_only_the_entries_the_rule_allows(lab, viewer):
    client = api_of(viewer)
    window = {"from": "2026-03-01", "to": "2026-03-11"}
    response = client.get("/api/v1/usage/", {**window, "group_by": "entry", "format": "csv"})
    assert response.status_code == 200 and entries_seen(response, lab) == USAGE[viewer]
    by_user = client.get("/api/v1/usage/", {**window, "group_by": "user"}).json()
    bos = next((row["gpu_seconds"] for row in by_user["rows"] if row["key"] == "bo"), 0)
    assert bos == pytest.approx(3600 * len(USAGE[viewer]))
    named = client.get("/api/v1/usage/", {**window, "user": "bo"})
    if viewer == "cy":  # a classmate may not even name him
        assert named.status_code == 404 and named.json()["code"] == "not_found" and "bo" not in named.json()["detail"]
    else:  # himself, his teachers and the assistant of his course may: they see what the rule allows
        assert named.status_code == 200
        assert named.json()["total_gpu_seconds"] == pytest.approx(3600 * len(USAGE[viewer]))


def test_the_usage_of_the_signed_out_is_401(lab):
    assert APIClient().get("/api/v1/usage/", {"group_by": "entry", "format": "csv"}).status_code == 401
    assert Client().get("/usage/csv/course-students/", {"course": "DL-101"}).status_code == 302


@pytest.mark.parametrize("viewer,course", [("ada", "DL-101"), ("tina", "DL-101"), ("ada", "ML-100"), ("eve", "CV-201")])
def test_a_course_pages_students_csv_counts_only_what_was_booked_to_it_in_its_term(lab, viewer, course):
    """bo worked 5 hours this month: 1 booked to each course and 1 of his own. The course's table counts its hour
    (ML-100's ended yesterday: its hour of last week counts, the one booked to it today does not)."""
    response = page_of(viewer).get(
        "/usage/csv/course-students/", {"course": course, "from": "2026-03-01", "to": "2026-03-11"}
    )
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content
    rows = {row["Person"]: float(row["GPU-hours"]) for row in csv.DictReader(io.StringIO(body.decode()))}
    assert rows["bo"] == pytest.approx(1.0)


def test_a_course_of_someone_else_is_404_on_the_course_page_and_its_csv(lab):
    assert page_of("ada").get("/usage/courses/", {"course": "CV-201"}).status_code == 404
    assert page_of("ada").get("/usage/csv/course-students/", {"course": "CV-201"}).status_code == 404
    assert page_of("tina").get("/usage/csv/course-students/", {"course": "ML-100"}).status_code == 404


# --- The rule itself ------------------------------------------------------------------------------------------------


def test_the_rule_keeps_a_teachers_reading_of_a_term_that_ended_yesterday_and_nothing_booked_after(lab):
    """ML-100's term ended yesterday: ada still reads the job booked to it last week, not the one booked today."""
    from jobs.selectors import jobs_visible_to

    ada = lab["people"]["ada"]
    seen = set(jobs_visible_to(ada).filter(owner__username="bo").values_list("name", flat=True))
    assert seen == {"bo-dl", "bo-old"}
    assert timezone.localdate() == dt.date(2026, 3, 11)  # the fixed `now`, the day after ML-100's last


def test_one_enrolment_shows_nothing_of_the_rest(lab):
    """Enrolled in three courses, bo's personal work stays his: no teacher, assistant or classmate sees it."""
    from jobs.selectors import jobs_visible_to
    from labs.notebooks.selectors import notebooks_visible_to
    from labs.usage.selectors import allocations_visible_to

    for name in ("cy", "ada", "tina", "eve"):
        user = lab["people"][name]
        assert not jobs_visible_to(user).filter(pk=lab["jobs"]["personal"].pk).exists()
        assert not notebooks_visible_to(user).filter(pk=lab["sessions"]["personal"].pk).exists()
        assert not allocations_visible_to(user).filter(pk=lab["entries"]["personal"].pk).exists()
