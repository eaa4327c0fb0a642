"""The simulated backend (bench_portal's stand-in): pending, running, succeeded on time, with no process at all;
its log, cancel, the reconciler's list, and a job through the portal's own tasks."""

import time

import pytest
from django.core.management import call_command

from accounts.errors import BackendError
from jobs.backends import get_job_backend
from jobs.backends.base import JobRef, JobSpec
from jobs.backends.simulated import SimulatedJobs
from jobs.models import JobState
from jobs.services import job_submit
from jobs.services.dispatch import job_logs, jobs_follow
from tests.factories import UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory, lab, wait_until


def spec(job_id=1, attempt=1, **overrides) -> JobSpec:
    fields = dict(job_id=job_id, attempt=attempt, image="any", command=("python", "-c", "print('hi there')"),
                  gpus_per_node=1, max_runtime_s=60, node_names=("gpu01",))  # fmt: skip
    return JobSpec(**{**fields, **overrides})


def test_an_attempt_is_pending_then_running_then_succeeded_without_a_process(tmp_path):
    backend = SimulatedJobs(tmp_path, start_s=1, run_s=2)
    created = time.time()
    first = backend.create(spec())
    assert first.phase == "pending" and backend.logs(JobRef(1, 1)).data == b""
    ref = JobRef(1, 1)
    assert backend.status(ref, now=created + 1.5).phase == "running"
    done = backend.status(ref, now=created + 3.5)
    assert done.phase == "succeeded" and done.exit_codes == (0,) and done.pods[0].node == "gpu01"
    assert done.finished_at - done.started_at == pytest.approx(2)
    assert backend.status(JobRef(2, 1)).phase == "missing"


def test_create_twice_is_the_same_attempt_and_a_bad_spec_is_refused(tmp_path):
    backend = SimulatedJobs(tmp_path, start_s=0, run_s=60)
    backend.create(spec())
    started = backend.status(JobRef(1, 1)).started_at
    backend.create(spec())
    assert backend.status(JobRef(1, 1)).started_at == started
    with pytest.raises(BackendError):
        backend.create(spec(job_id=3, command=()))


def test_the_log_says_it_was_simulated_and_pages_like_a_real_one(tmp_path):
    backend = SimulatedJobs(tmp_path, start_s=0, run_s=60)
    backend.create(spec())
    whole = backend.logs(JobRef(1, 1))
    assert whole.text == "[simulated run, no process] rank 0: python -c 'print('\"'\"'hi there'\"'\"')'\n"
    assert whole.size == len(whole.data) and not whole.truncated
    page = backend.logs(JobRef(1, 1), offset=10, limit_bytes=5)
    assert page.data == whole.data[10:15] and (page.start, page.end) == (10, 15)
    assert backend.logs(JobRef(1, 1), tail_lines=1).data == whole.data


def test_cancel_fails_it_and_the_reconciler_lists_only_those_not_finished(tmp_path):
    backend = SimulatedJobs(tmp_path, start_s=0, run_s=60)
    backend.create(spec(1))
    backend.create(spec(2))
    SimulatedJobs(tmp_path, start_s=0, run_s=0).create(spec(3))
    assert [ref.job_id for ref in backend.list_running()] == [1, 2]
    backend.delete(JobRef(2, 1))
    cancelled = backend.status(JobRef(2, 1))
    assert cancelled.phase == "failed" and cancelled.message == "cancelled"
    assert [ref.job_id for ref in backend.list_running()] == [1]
    backend.purge(1)
    assert backend.status(JobRef(1, 1)).phase == "missing" and backend.output_roots(1, 1) == {}


@pytest.mark.django_db
def test_a_job_runs_to_succeeded_through_the_portal_on_the_simulated_backend(
    settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.JOBS_BACKEND, settings.JOBS_LOCAL_DIR = "simulated", tmp_path
    settings.JOBS_SIMULATED_START_S, settings.JOBS_SIMULATED_RUN_S = 0, 1
    assert isinstance(get_job_backend(), SimulatedJobs)
    ImageRuleFactory()
    lab(2)
    sam = UserFactory(username="sam", role="student")
    with django_capture_on_commit_callbacks(execute=True):
        job = job_submit(user=sam, name="tiny", image=IMAGE, command=["python", "-c", "print(1)"], gpus=1,
                         max_runtime_s=600)  # fmt: skip

    def done():
        with django_capture_on_commit_callbacks(execute=True):
            jobs_follow()
        job.refresh_from_db()
        return job.state == JobState.SUCCEEDED

    wait_until(done, timeout=20, step=0.2)
    assert job.exit_code == 0 and "[simulated run, no process]" in job_logs(job=job).text


def test_the_deploy_check_refuses_the_simulated_backend(settings):
    settings.JOBS_BACKEND = "simulated"
    with pytest.raises(Exception, match="jobs.E006"):
        call_command("check", "--deploy", "--fail-level", "ERROR")
