"""Idle GPUs in running jobs (jobs.idle): simulated telemetry in the store and a fixed clock moved by hand."""

import datetime as dt

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from accounts.models import Notice
from jobs.idle import jobs_idle_upkeep
from jobs.models import Job, JobState, StopReason
from labs.telemetry import store
from labs.telemetry.samples import gpu_key
from tests.factories import UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory, JobFactory, lab

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 3, 3, 10, 0, tzinfo=dt.UTC)
MIN = dt.timedelta(minutes=1)


@pytest.fixture(autouse=True)
def rules(settings):
    settings.TELEMETRY_STALE_AFTER_S = 60
    settings.JOBS_IDLE_GPU_PCT = 5
    settings.JOBS_IDLE_GPU_WARN_S = 30 * 60
    settings.JOBS_IDLE_GPU_ACTION_S = 60 * 60
    settings.JOBS_IDLE_GPU_ACTION = "cancel"
    cache.delete(store.LATEST_KEY)
    yield
    cache.delete(store.LATEST_KEY)


def telemetry(at: dt.datetime, **utils: float | None) -> None:
    """The store's latest tick at `at`: gpu01=3.0 means gpu01's GPU 0 at 3 %."""
    gpus = {gpu_key(node, 0): {"util_pct": util, "sampled_at": at.isoformat()} for node, util in utils.items()}
    store.write_latest(seq=int(at.timestamp()), at=at.timestamp(), gpus=gpus)


def running_job(owner=None, node="gpu01", **fields):
    return JobFactory(
        owner=owner or UserFactory(role="student"),
        state=JobState.RUNNING,
        started_at=T0,
        running_at=T0,
        submitted_at=T0 - MIN,
        queued_since=T0 - MIN,
        node_names=[node],
        gpu_indices=[[0]],
        **fields,
    )


def upkeep_at(now):
    telemetry_now = getattr(upkeep_at, "utils", {})
    telemetry(now, **telemetry_now)
    return jobs_idle_upkeep(now=now)


def test_an_idle_job_is_warned_then_cancelled(django_capture_on_commit_callbacks):
    job = running_job()
    upkeep_at.utils = {"gpu01": 0.0}
    with django_capture_on_commit_callbacks() as stops:
        for minutes in (5, 29):
            assert upkeep_at(T0 + minutes * MIN).warned == 0
        assert upkeep_at(T0 + 31 * MIN).warned == 1
        assert upkeep_at(T0 + 40 * MIN).warned == 0  # once
        warning = Notice.objects.get(user=job.owner)
        assert f"“{job.name}” ({job.pk}) has held its GPUs idle for 31 minutes" in warning.text
        assert "it will be cancelled at" in warning.text
        assert Job.objects.get(pk=job.pk).stop_requested_at is None
        assert upkeep_at(T0 + 61 * MIN).stopped == 1
    job.refresh_from_db()
    assert job.stop_reason == StopReason.CANCELLED and "idle" in job.stop_note
    assert len(stops) == 1  # the stop task, after commit
    assert Notice.objects.filter(user=job.owner, text__contains="was cancelled").count() == 1


def test_requeue_as_the_lab_decides(settings, django_capture_on_commit_callbacks):
    settings.JOBS_IDLE_GPU_ACTION = "requeue"
    job = running_job()
    upkeep_at.utils = {"gpu01": 1.0}
    with django_capture_on_commit_callbacks():
        upkeep_at(T0 + 61 * MIN)
    job.refresh_from_db()
    assert job.stop_reason == StopReason.PREEMPTED  # the follower requeues it as attempt 2


def test_off_only_warns(settings):
    settings.JOBS_IDLE_GPU_ACTION = "off"
    job = running_job()
    upkeep_at.utils = {"gpu01": 0.0}
    report = upkeep_at(T0 + 3 * 60 * MIN)
    assert (report.warned, report.stopped) == (1, 0)
    assert Job.objects.get(pk=job.pk).stop_requested_at is None


def test_a_busy_gpu_resets_the_clock():
    job = running_job()
    upkeep_at.utils = {"gpu01": 0.0}
    upkeep_at(T0 + 31 * MIN)
    upkeep_at.utils = {"gpu01": 70.0}
    upkeep_at(T0 + 40 * MIN)
    upkeep_at.utils = {"gpu01": 0.0}
    assert upkeep_at(T0 + 95 * MIN).stopped == 0  # idle 55 minutes since 10:40
    assert upkeep_at(T0 + 101 * MIN).stopped == 1
    assert Job.objects.get(pk=job.pk).stop_requested_at is not None


@pytest.mark.parametrize("utils", [{}, {"gpu01": None}, "stale"])
def test_missing_or_stale_telemetry_never_stops_a_job(utils):
    job = running_job()
    if utils == "stale":
        telemetry(T0, gpu01=0.0)
        assert jobs_idle_upkeep(now=T0 + 3 * 60 * MIN).stopped == 0
    else:
        upkeep_at.utils = utils
        assert upkeep_at(T0 + 3 * 60 * MIN).stopped == 0
    assert Job.objects.get(pk=job.pk).stop_requested_at is None
    assert not Notice.objects.exists()


def test_a_job_that_says_why_is_exempt():
    job = running_job(idle_ok_reason="tokenising the corpus on the CPU first")
    upkeep_at.utils = {"gpu01": 0.0}
    report = upkeep_at(T0 + 3 * 60 * MIN)
    assert (report.warned, report.stopped) == (0, 0)
    assert Job.objects.get(pk=job.pk).stop_requested_at is None


def test_only_the_idle_job_of_two_is_stopped(django_capture_on_commit_callbacks):
    idle, busy = running_job(), running_job(node="gpu02")
    upkeep_at.utils = {"gpu01": 0.0, "gpu02": 90.0}
    with django_capture_on_commit_callbacks():
        upkeep_at(T0 + 61 * MIN)
    assert Job.objects.get(pk=idle.pk).stop_requested_at is not None
    assert Job.objects.get(pk=busy.pk).stop_requested_at is None


def test_the_warning_speaks_the_owners_language():
    job = running_job(owner=UserFactory(role="student", language="pt-br"))
    upkeep_at.utils = {"gpu01": 0.0}
    upkeep_at(T0 + 31 * MIN)
    assert Notice.objects.get(user=job.owner).text  # the catalogue is translated after merging


def test_idle_ok_reason_on_submission_through_the_api():
    ImageRuleFactory()
    lab(1)
    sam = UserFactory(role="student")
    client = APIClient()
    client.force_authenticate(sam)
    body = {"name": "prep", "image": IMAGE, "command": ["python", "prep.py"], "gpus": 1, "max_runtime_s": 600}
    answer = client.post("/api/v1/jobs/", {**body, "idle_ok_reason": "  CPU preprocessing  "}, format="json")
    assert answer.status_code == 201 and answer.json()["idle_ok_reason"] == "CPU preprocessing"
    assert Job.objects.get(pk=answer.json()["id"]).idle_ok_reason == "CPU preprocessing"
    long = client.post("/api/v1/jobs/", {**body, "idle_ok_reason": "x" * 301}, format="json")
    assert long.status_code == 400 and "idle_ok_reason" in long.json()["fields"]


def test_idle_ok_reason_on_the_job_form(client):
    from tests.jobs.factories import JOB_FORM

    ImageRuleFactory()
    lab(1)
    sam = UserFactory(role="student")
    client.force_login(sam)
    assert "idle_ok_reason" in client.get("/jobs/new/").content.decode()
    answer = client.post("/jobs/new/", {**JOB_FORM, "idle_ok_reason": "waiting on a debugger"})
    job = Job.objects.get()
    assert answer.status_code == 302 and job.idle_ok_reason == "waiting on a debugger"
    again = client.get(f"/jobs/new/?from={job.pk}").content.decode()
    assert "waiting on a debugger" in again  # edit and submit again keeps it
