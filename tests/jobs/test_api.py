"""The jobs API for every role: submit, list, detail, cancel, logs, preview; bad input is a 4xx naming fields."""

import datetime as dt

import pytest
from django.utils import timezone

from accounts.models import User
from jobs.models import Job, JobState
from jobs.services import scheduling_pass
from tests.conftest import ROLES
from tests.factories import CourseFactory, EnrollmentFactory, UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory, JobFactory, lab, local_backend_fixture, wait_until  # noqa: F401

pytestmark = pytest.mark.django_db

URL = "/api/v1/jobs/"
GOOD = {"name": "mnist", "image": IMAGE, "command": ["python", "train.py"], "gpus": 1, "max_runtime_s": 3600}


@pytest.fixture(autouse=True)
def _lab():
    ImageRuleFactory()
    lab(2)


def me(role: str) -> User:
    return User.objects.get(username=f"{role}-x")


# --- anonymous ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", URL),
        ("post", URL),
        ("post", URL + "preview/"),
        ("get", URL + "1/"),
        ("post", URL + "1/cancel/"),
        ("get", URL + "1/logs/"),
    ],
)
def test_anonymous_gets_401_everywhere(api_as, method, path):
    response = getattr(api_as("anonymous"), method)(path, GOOD, format="json")
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"
    assert not Job.objects.exists()


# --- submit ------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", [r for r in ROLES if r != "anonymous"])
def test_every_role_submits_and_gets_201_queued_with_a_position(api_as, role):
    client = api_as(role)
    response = client.post(URL, {**GOOD, "env": {"EPOCHS": "3"}}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    job = Job.objects.get()
    assert body["id"] == job.pk and body["status"] == "queued" and body["position"] == 1
    assert body["attempt"] == 1 and body["node_names"] == [] and body["reason"] == "starting now"
    assert body["command"] == ["python", "train.py"] and body["env"] == {"EPOCHS": "3"}
    assert job.owner == me(role)
    assert client.get("/api/v1/me/").json()["usage"]["jobs_queued"] == 1


BAD_BODIES = [
    ({"image": "docker.io/evil/miner:1"}, "image"),
    ({"command": "python train.py; rm -rf ~"}, "command"),
    ({"command": ["python", 1]}, "command"),
    ({"command": None}, "command"),
    ({"gpus": 0}, "gpus"),
    ({"gpus": -2}, "gpus"),
    ({"gpus": "two"}, "gpus"),
    ({"gpus": 9}, "gpus"),
    ({"nodes": 0}, "nodes"),
    ({"max_runtime_s": 0}, "max_runtime_s"),
    ({"max_runtime_s": 10**9}, "max_runtime_s"),
    ({"env": {"BAD NAME": "x"}}, "env"),
    ({"env": {"MASTER_ADDR": "evil"}}, "env"),
    ({"env": "EPOCHS=3"}, "env"),
    ({"priority": "urgent"}, "priority"),
    ({"reservation": 424242}, "reservation"),
    ({"reservation": "x"}, "reservation"),
    ({"datasets": ["nope"]}, "datasets"),
    ({"name": ""}, "name"),
]


@pytest.mark.parametrize(("change", "field"), BAD_BODIES)
def test_bad_input_is_400_naming_the_field_and_queues_nothing(api_as, change, field):
    response = api_as("student").post(URL, {**GOOD, **change}, format="json")
    assert response.status_code == 400, response.json()
    body = response.json()
    assert body["code"] == "invalid" and field in body["fields"]
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("name", "reader"),
    [
        ("LD_PRELOAD", "the system's program loader"),
        ("LD_LIBRARY_PATH", "the system's program loader"),
        ("GCONV_PATH", "the C library"),
        ("MALLOC_CHECK_", "the C library"),
        ("GLIBC_TUNABLES", "the C library"),
        ("PYTHONPATH", "Python when it starts"),
    ],
)
def test_a_variable_the_loader_libc_or_python_reads_is_a_400_naming_it(api_as, name, reader):
    response = api_as("student").post(URL, {**GOOD, "env": {"EPOCHS": "3", name: "/tmp/x"}}, format="json")
    assert response.status_code == 400, response.json()
    body = response.json()
    assert body["code"] == "invalid" and set(body["fields"]) == {"env"}
    sentence = f"{name} is read by {reader} and may not be set by a job"
    assert sentence in str(body["fields"]["env"]) and sentence in body["detail"]
    assert not Job.objects.exists()


def test_ordinary_and_harmless_python_variables_are_accepted(api_as):
    env = {"ld_preload": "x", "PYTHONHASHSEED": "0", "PYTHONUNBUFFERED": "1", "WANDB_MODE": "offline"}
    response = api_as("student").post(URL, {**GOOD, "env": env}, format="json")
    assert response.status_code == 201, response.json()
    assert Job.objects.get().env == env


@pytest.mark.parametrize("missing", ["name", "image", "command", "gpus", "max_runtime_s"])
def test_missing_fields_are_named(api_as, missing):
    body = {k: v for k, v in GOOD.items() if k != missing}
    response = api_as("student").post(URL, body, format="json")
    assert response.status_code == 400 and missing in response.json()["fields"]
    assert not Job.objects.exists()


def test_not_json_is_a_400(api_as):
    response = api_as("student").post(URL, "{not json", content_type="application/json")
    assert response.status_code == 400 and response.json()["code"] == "parse_error"


def test_quota_is_a_403_with_the_limit(api_as):
    client = api_as("student")
    response = client.post(URL, {**GOOD, "nodes": 2}, format="json")
    assert response.status_code == 403
    assert response.json() | {"detail": ""} == {
        "detail": "",
        "code": "quota_exceeded",
        "limit": "max_gpus_per_job",
        "used": 2,
        "allowed": 1,
        "help": "/help/#limit-max_gpus_per_job",
    }
    assert not Job.objects.exists()


def test_students_may_not_ask_for_high_priority_but_teachers_may(api_as):
    assert api_as("student").post(URL, {**GOOD, "priority": "high"}, format="json").status_code == 400
    assert api_as("teacher").post(URL, {**GOOD, "priority": "high"}, format="json").status_code == 201


def test_someone_elses_reservation_is_403(api_as):
    import datetime as dt

    from django.utils import timezone

    from labs.models import Reservation, ReservationStatus

    ada = UserFactory(username="ada", role="teacher")
    now = timezone.now()
    reservation = Reservation.objects.create(
        owner=ada, created_by=ada, title="x", starts_at=now, ends_at=now + dt.timedelta(hours=3),
        status=ReservationStatus.APPROVED,
    )  # fmt: skip
    response = api_as("student").post(URL, {**GOOD, "reservation": reservation.pk}, format="json")
    assert response.status_code == 403 and "reservation" in response.json()["fields"]
    assert not Job.objects.exists()


# --- who sees what ----------------------------------------------------------------------------------


@pytest.fixture
def jobs_of_everyone():
    course = CourseFactory(code="DL-101")
    student, other = UserFactory(username="student-x", role="student"), UserFactory(username="other", role="student")
    teacher = UserFactory(username="teacher-x", role="teacher")
    course.teachers.add(teacher)
    EnrollmentFactory(user=student, course=course)
    return {
        "student": JobFactory(owner=student, name="student's", course=course),  # booked to the teacher's course
        "personal": JobFactory(owner=student, name="personal's"),  # the same student's, booked to no course
        "other": JobFactory(owner=other, name="other's"),
        "teacher": JobFactory(owner=teacher, name="teacher's"),
        "admin": JobFactory(owner=UserFactory(username="admin-x", role="admin"), name="admin's"),
    }


VISIBLE = {
    "student": {"student", "personal"},
    "teacher": {"teacher", "student"},  # never the student's personal job
    "admin": {"student", "personal", "other", "teacher", "admin"},
}


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_list_and_detail_show_only_what_the_role_may_see(api_as, jobs_of_everyone, role):
    client = api_as(role)
    names = {job["name"] for job in client.get(URL).json()}
    assert names == {f"{owner}'s" for owner in VISIBLE[role]}
    for owner, job in jobs_of_everyone.items():
        response = client.get(f"{URL}{job.pk}/")
        if owner in VISIBLE[role]:
            assert response.status_code == 200
            body = response.json()
            assert body["events"] == [] and body["status"] == "queued" and body["attempt"] == 1
        else:
            assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_list_filters(api_as, jobs_of_everyone):
    client = api_as("admin")
    assert len(client.get(URL, {"mine": "true"}).json()) == 1
    assert client.get(URL, {"status": "running"}).json() == []
    assert client.get(URL, {"status": "bogus"}).status_code == 400
    assert client.get(URL, {"limit": 0}).status_code == 400


def test_pages_by_before_give_every_job_once_newest_first(api_as):
    student = UserFactory(username="student-x", role="student")
    now = timezone.now()
    # Ids and submission times in the other order for two of them: two submits that committed crosswise.
    made = [JobFactory(owner=student, submitted_at=now - dt.timedelta(minutes=n)) for n in (5, 4, 3, 2, 1)]
    Job.objects.filter(pk=made[2].pk).update(submitted_at=now, queued_since=now)
    client = api_as("student")
    seen, before = [], None
    while True:
        page = client.get(URL, {"limit": 2, **({"before": before} if before else {})}).json()
        if not page:
            break
        seen += [job["id"] for job in page]
        before = page[-1]["id"]
    assert seen == sorted((job.pk for job in made), reverse=True)


@pytest.mark.parametrize("before", ["abc", "0", "-3", str(2**60), "1.5"])
def test_a_bad_before_is_400_naming_it(api_as, before):
    UserFactory(username="student-x", role="student")
    response = api_as("student").get(URL, {"before": before})
    assert response.status_code == 400
    assert "before" in response.json()["fields"]


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_cancel_per_role(api_as, jobs_of_everyone, role):
    client = api_as(role)
    for owner, job in jobs_of_everyone.items():
        response = client.post(f"{URL}{job.pk}/cancel/")
        if owner not in VISIBLE[role]:
            assert response.status_code == 404
        elif jobs_of_everyone[owner].owner.username == f"{role}-x" or role == "admin":
            assert response.status_code == 200, response.json()
            assert response.json()["status"] == "cancelled"
            assert response.json()["events"][-1]["to_state"] == "cancelled"
        else:  # a teacher sees a student's job but may not cancel it
            assert response.status_code == 403 and response.json()["code"] == "permission_denied"
        job.refresh_from_db()
        assert (job.state == JobState.CANCELLED) == (response.status_code == 200)


def test_cancelling_twice_is_a_409(api_as):
    client = api_as("student")
    job_id = client.post(URL, GOOD, format="json").json()["id"]
    assert client.post(f"{URL}{job_id}/cancel/").status_code == 200
    response = client.post(f"{URL}{job_id}/cancel/")
    assert response.status_code == 409 and response.json()["code"] == "conflict"


# --- logs and preview ---------------------------------------------------------------------------------


def test_logs_are_text(api_as, local_backend, django_capture_on_commit_callbacks):
    client = api_as("student")
    with django_capture_on_commit_callbacks(execute=True):
        job_id = client.post(URL, {**GOOD, "command": ["python", "-c", "print('epoch 1')"]}, format="json").json()["id"]
    from jobs.services.dispatch import jobs_follow

    def done():
        jobs_follow()
        return Job.objects.get(pk=job_id).state == JobState.SUCCEEDED

    wait_until(done, step=0.1)
    response = client.get(f"{URL}{job_id}/logs/")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    assert response.content == b"epoch 1\n"
    assert client.get(f"{URL}{job_id}/logs/", {"rank": 1}).status_code == 400
    assert client.get(f"{URL}{job_id}/logs/", {"attempt": 2}).status_code == 400
    assert api_as("teacher").get(f"{URL}{job_id}/logs/").status_code == 404


def test_logs_of_a_queued_job_are_empty(api_as):
    client = api_as("student")
    job_id = client.post(URL, GOOD, format="json").json()["id"]
    response = client.get(f"{URL}{job_id}/logs/")
    assert response.status_code == 200 and response.content == b""


def finished_job(owner) -> Job:
    return JobFactory(owner=owner, state=JobState.SUCCEEDED, node_names=["gpu01"], finished_at=timezone.now())


def big_log(local_backend, job, megabytes: int = 8) -> bytes:
    """A finished job's rank-0 log of `megabytes` MiB, written where the local backend keeps it (running a job
    to write it would be slow): 12-byte numbered lines."""
    lines = megabytes * 1024 * 1024 // 12
    data = b"".join(b"line %06d\n" % (n % 1_000_000) for n in range(1, lines + 1))
    directory = local_backend.root / f"job-{job.pk}-a1"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "rank-0.log").write_bytes(data)
    return data


def test_a_huge_log_is_answered_capped_with_its_end(api_as, local_backend, settings):
    client = api_as("student")
    job = finished_job(me("student"))
    log = big_log(local_backend, job)
    cap = settings.JOBS_LOG_RESPONSE_MAX_BYTES
    assert cap == 1024 * 1024 and len(log) > 8 * cap - 12

    response = client.get(f"{URL}{job.pk}/logs/")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    assert len(response.content) == cap and response.content == log[-cap:]
    assert response["X-Log-Truncated"] == "true" and response["X-Log-Size"] == str(len(log))
    assert (response["X-Log-Start"], response["X-Log-End"]) == (str(len(log) - cap), str(len(log)))
    assert response["X-Log-Max-Bytes"] == str(cap)

    response = client.get(f"{URL}{job.pk}/logs/", {"tail": 2})
    assert response.content == log[-24:] and response["X-Log-Truncated"] == "false"

    response = client.get(f"{URL}{job.pk}/logs/", {"offset": 120, "limit_bytes": 36})
    assert response.content == b"line 000011\nline 000012\nline 000013\n"
    assert (response["X-Log-Start"], response["X-Log-End"], response["X-Log-Truncated"]) == ("120", "156", "false")
    response = client.get(f"{URL}{job.pk}/logs/", {"offset": 156, "limit_bytes": 10 * cap})
    assert response.content == log[156 : 156 + cap] and response["X-Log-Truncated"] == "true"
    assert response["X-Log-End"] == str(156 + cap)  # where the next page starts


@pytest.mark.parametrize(
    ("query", "field"),
    [({"tail": 5, "offset": 0}, "offset"), ({"limit_bytes": 0}, "limit_bytes"), ({"offset": -1}, "offset")],
)
def test_bad_log_queries_are_400_naming_the_field(api_as, local_backend, query, field):
    client = api_as("student")
    job = finished_job(me("student"))
    response = client.get(f"{URL}{job.pk}/logs/", query)
    assert response.status_code == 400 and field in response.json()["fields"]


def test_only_who_may_see_the_job_reads_its_log(api_as, local_backend):
    owner = UserFactory(role="student")
    job = finished_job(owner)
    big_log(local_backend, job, megabytes=1)
    response = api_as("student").get(f"{URL}{job.pk}/logs/")
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert api_as("teacher").get(f"{URL}{job.pk}/logs/").status_code == 404  # not a teacher of the owner's
    response = api_as("admin").get(f"{URL}{job.pk}/logs/", {"tail": 1})
    assert response.status_code == 200 and response.content.endswith(b"\n")


@pytest.mark.parametrize("role", ["student", "teacher", "admin"])
def test_preview_answers_and_queues_nothing(api_as, role):
    client = api_as(role)
    response = client.post(URL + "preview/", GOOD, format="json")
    assert response.status_code == 200
    assert response.json()["starts_now"] is True and response.json()["sentence"].startswith("Yes")
    assert client.post(URL + "preview/", {**GOOD, "gpus": 0}, format="json").status_code == 400
    assert not Job.objects.exists()


def test_a_queued_job_reports_its_reason_and_position(api_as):
    for name in ("kim", "lea"):
        JobFactory(owner=UserFactory(username=name))
    scheduling_pass()
    client = api_as("student")
    job_id = client.post(URL, GOOD, format="json").json()["id"]
    scheduling_pass()
    body = client.get(f"{URL}{job_id}/").json()
    assert body["status"] == "queued" and body["position"] == 1
    assert body["reason"].startswith("waiting for 1 GPU; first in line") and body["estimated_start"]


@pytest.mark.django_db(transaction=True)
def test_a_followed_log_of_a_finished_job_is_all_of_it_from_since_in_one_stream(api_as, local_backend):
    """The WSGI path (the DRF view; under ASGI portal/log_follow_app.py answers, tests/sdk): past the one-page cap."""
    client = api_as("student")
    job = finished_job(me("student"))
    log = big_log(local_backend, job, megabytes=3)
    response = client.get(f"{URL}{job.pk}/logs/", {"follow": 1, "since": 120})
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"].startswith("text/plain") and response["X-Log-Start"] == "120"
    assert response["X-Log-Attempt"] == "1"
    assert b"".join(response) == log[120:]  # as a WSGI server reads it
    assert client.get(f"{URL}{job.pk}/logs/", {"follow": 1, "tail": 3}).status_code == 400
    assert client.get(f"{URL}{job.pk}/logs/", {"since": 3}).status_code == 400
    assert api_as("teacher").get(f"{URL}{job.pk}/logs/", {"follow": 1}).status_code == 404


def test_polling_ones_own_job_and_its_log_reads_the_token_the_job_and_its_events_only(
    api_as, jobs_of_everyone, django_assert_num_queries
):
    client = api_as("student")  # "student-x", who owns two of the jobs
    client.get(f"{URL}{jobs_of_everyone['student'].pk}/")  # the token's last use is written once a minute: done here
    for owner in ("student", "personal"):
        job = jobs_of_everyone[owner]
        with django_assert_num_queries(3):  # the token with its account, the job with its owner, course, booking
            body = client.get(f"{URL}{job.pk}/").json()
        assert body["name"] == f"{owner}'s" and body["events"] == []  # ... and its events
        with django_assert_num_queries(2):
            assert client.get(f"{URL}{job.pk}/logs/").status_code == 200
    # Someone else's job, one that is not there, and an id no row can have: the same 404.
    for job_id in (jobs_of_everyone["other"].pk, jobs_of_everyone["admin"].pk + 1000, 2**70):
        for path in (f"{URL}{job_id}/", f"{URL}{job_id}/logs/"):
            response = client.get(path)
            assert response.status_code == 404 and response.json()["code"] == "not_found", path
