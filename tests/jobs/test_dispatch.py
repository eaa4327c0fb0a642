"""Dispatch, follow, stop and logs through the Celery tasks: the local backend with real short processes,
and the Kubernetes backend against the fake batch/v1 server."""

import datetime as dt
import os

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from jobs import tasks
from jobs.backends.base import JobRef
from jobs.backends.local import LocalJobs
from jobs.models import Job, JobState, StopReason
from jobs.services import job_cancel, job_submit, scheduling_pass
from jobs.services.dispatch import job_logs, job_spec, jobs_follow
from labs.models import Allocation, Reservation, ReservationNode, ReservationStatus
from labs.reservations.tick import reservations_tick
from tests.factories import UserFactory
from tests.fakes.kube import FakeKube
from tests.jobs.factories import IMAGE, ImageRuleFactory, lab, local_backend_fixture, wait_until  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def sam():
    ImageRuleFactory()
    lab(2)
    return UserFactory(username="sam", role="student")


def python_job(user, code: str, **overrides):
    fields = dict(name="tiny", image=IMAGE, command=["python", "-c", code], gpus=1, max_runtime_s=600)
    fields.update(overrides)
    return job_submit(user=user, **fields)


def follow_until(job, *states, timeout=20.0):
    def done():
        jobs_follow()
        job.refresh_from_db()
        return job.state in states

    wait_until(done, timeout=timeout, step=0.1)
    return job


def test_submit_to_finish_through_the_tasks(local_backend, sam, django_capture_on_commit_callbacks):
    code = "import os; print('rank', os.environ['NODE_RANK'], 'gpus', os.environ['CUDA_VISIBLE_DEVICES'])"
    with django_capture_on_commit_callbacks(execute=True):
        job = python_job(sam, code)  # on commit: a pass places it, and dispatch starts it
    job.refresh_from_db()
    assert job.state in (JobState.STARTING, JobState.RUNNING, JobState.SUCCEEDED)
    assert local_backend.status(JobRef(job.pk, 1)).phase != "missing"
    with django_capture_on_commit_callbacks(execute=True):
        follow_until(job, JobState.SUCCEEDED)
    assert job.exit_code == 0 and job.finished_at is not None
    assert job_logs(job=job).text == "rank 0 gpus 0\n"
    states = list(job.events.values_list("to_state", flat=True))
    assert states == ["queued", "starting", "running", "succeeded"]
    assert not Allocation.objects.filter(ends_at__isnull=True).exists()
    assert Allocation.objects.get(ref=f"job:{job.pk}#1").ends_at == job.finished_at


def test_a_failing_job_is_failed_with_its_exit_code(local_backend, sam, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = python_job(sam, "import sys; print('boom', file=sys.stderr); sys.exit(3)")
    follow_until(job, JobState.FAILED)
    assert job.exit_code == 3
    assert "exit code 3" in job.events.last().reason
    assert "boom" in job_logs(job=job).text


def test_a_job_past_its_disk_quota_fails_with_its_usage_on_its_page_and_in_the_api(
    local_backend, sam, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.JOBS_DISK_QUOTA = "2Mi"
    settings.JOBS_LOCAL_UID_BASE = 2_000_000_000 + (os.getpid() % 1_000_000) * 1000
    settings.JOBS_LOCAL_UID_COUNT = 1000
    monkeypatch.setattr(LocalJobs, "disk_check_s", 0.2)
    code = (
        "import os, time\n"
        "open(os.path.join(os.environ['HOME'], 'big'), 'wb').write(os.urandom(3 * 1024 * 1024))\n"
        "print('wrote', os.getuid(), flush=True)\n"
        "time.sleep(60)\n"
    )
    with django_capture_on_commit_callbacks(execute=True):
        job = python_job(sam, code, max_runtime_s=120)
    with django_capture_on_commit_callbacks(execute=True):
        follow_until(job, JobState.FAILED, timeout=60)
    assert job_logs(job=job).text == f"wrote {settings.JOBS_LOCAL_UID_BASE + sam.pk}\n"  # sam's own uid
    limit = "more than its disk quota of 2.0 MiB (JOBS_DISK_QUOTA)"
    assert job.message.startswith("stopped: its work and checkpoint directories held ") and limit in job.message
    assert job.events.get(to_state="failed").reason == f"failed (exit code 137): {job.message}"
    client = APIClient()
    client.force_authenticate(sam)
    body = client.get(f"/api/v1/jobs/{job.pk}/").json()
    assert body["status"] == "failed" and body["reason"] == job.message and body["exit_code"] == 137
    client.force_login(sam)
    assert limit in client.get(f"/jobs/{job.pk}/").content.decode()
    assert not Allocation.objects.filter(ends_at__isnull=True).exists()


def test_a_dispatch_interrupted_after_create_is_completed_by_redelivery_and_runs_once(local_backend, sam, tmp_path):
    """The worker died after backend.create and before the database heard of it; the broker re-delivers."""
    # A job writes only in its own directories (the sandbox): the checkpoints outlive the attempt.
    job = python_job(
        sam, "import os; open(os.path.join(os.environ['CHECKPOINT_DIR'], 'runs.txt'), 'a').write('ran\\n')"
    )
    marker = local_backend.checkpoint_dir(job.pk) / "runs.txt"
    scheduling_pass()  # on_commit callbacks do not run here: dispatch is not sent
    job.refresh_from_db()
    assert job.state == JobState.STARTING
    local_backend.create(job_spec(job))  # what the dead worker did
    wait_until(lambda: local_backend.status(JobRef(job.pk, 1)).finished)
    assert Job.objects.get(pk=job.pk).state == JobState.STARTING  # nothing recorded
    assert tasks.dispatch.apply(args=(job.pk, 1)).get() == "succeeded"  # the re-delivery
    assert tasks.dispatch.apply(args=(job.pk, 1)).get() == "nothing to do"  # and once more
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED
    assert marker.read_text() == "ran\n"


def test_a_lost_dispatch_is_sent_again_by_the_follower(local_backend, sam, django_capture_on_commit_callbacks):
    job = python_job(sam, "print('hi')")
    scheduling_pass()
    job.refresh_from_db()
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - dt.timedelta(minutes=5))
    with django_capture_on_commit_callbacks(execute=True):
        report = jobs_follow()  # the backend never heard of it: dispatch again
    assert report.changed == {"redispatched": 1}
    follow_until(job, JobState.SUCCEEDED)


def test_cancel_a_running_job_stops_its_process(local_backend, sam, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = python_job(sam, "import time; print('start', flush=True); time.sleep(60)")
    follow_until(job, JobState.RUNNING)
    wait_until(lambda: "start" in job_logs(job=job).text)
    with django_capture_on_commit_callbacks(execute=True):
        job = job_cancel(user=sam, job=job)  # on commit: the stop task deletes it
    assert job.stop_reason == StopReason.CANCELLED
    with django_capture_on_commit_callbacks(execute=True):
        follow_until(job, JobState.CANCELLED)
    assert job.events.last().reason == "cancelled by its owner"
    assert not Allocation.objects.filter(ends_at__isnull=True).exists()


def test_an_image_the_backend_refuses_fails_the_job_without_retrying(local_backend, sam, monkeypatch):
    from accounts.errors import BackendError

    job = python_job(sam, "print(1)")
    scheduling_pass()

    def refuse(self, spec):
        raise BackendError("admission webhook denied the image", retryable=False)

    monkeypatch.setattr(type(local_backend), "create", refuse)
    assert tasks.dispatch.apply(args=(job.pk, 1)).get() == "refused"
    job.refresh_from_db()
    assert job.state == JobState.FAILED and "admission webhook" in job.message
    assert not Allocation.objects.filter(ends_at__isnull=True).exists()


def test_a_reservation_window_preempts_and_requeues_a_running_job(
    local_backend, sam, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = python_job(sam, "import time; time.sleep(60)")
    follow_until(job, JobState.RUNNING)
    node = job.node_names[0]
    ada = UserFactory(username="ada", role="teacher")
    start = timezone.now() - dt.timedelta(seconds=1)
    reservation = Reservation.objects.create(
        owner=ada,
        created_by=ada,
        title="DL lab",
        starts_at=start,
        ends_at=start + dt.timedelta(hours=2),
        status=ReservationStatus.APPROVED,
    )
    from labs.models import Node

    ReservationNode.objects.create(
        reservation=reservation,
        node=Node.objects.get(name=node),
        starts_at=reservation.starts_at,
        ends_at=reservation.ends_at,
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert reservations_tick().evicted == 1  # on commit: allocations_ended -> stop
    job.refresh_from_db()
    assert job.stop_reason == StopReason.PREEMPTED
    with django_capture_on_commit_callbacks(execute=True):

        def requeued():
            jobs_follow()
            return Job.objects.get(pk=job.pk).attempt == 2

        wait_until(requeued, step=0.1)
    job.refresh_from_db()
    assert job.attempt == 2
    requeue = job.events.filter(to_state="queued", attempt=2).get()
    assert "reserved for “DL lab”" in requeue.reason
    # Attempt 2 goes to the other node, never the reserved one.
    if job.node_names:
        assert job.node_names != [node]


# --- Kubernetes, against the fake API server ---------------------------------------------------------


@pytest.fixture
def kube(settings):
    fake = FakeKube().start()
    settings.JOBS_BACKEND = "kubernetes"
    settings.KUBERNETES_API_URL = fake.url
    settings.KUBERNETES_TOKEN = "test-token"
    settings.KUBERNETES_TIMEOUT_S = 2
    yield fake
    fake.stop()


def test_kubernetes_dispatch_follow_and_finish(kube, sam, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job = python_job(sam, "print(1)", env={"EPOCHS": "3"})
    job.refresh_from_db()
    name = f"job-{job.pk}-a1"
    created = kube.job(name)
    assert created is not None and job.state == JobState.STARTING
    labels = created["metadata"]["labels"]
    assert labels["portal.gpulab.io/job-id"] == str(job.pk) and labels["portal.gpulab.io/attempt"] == "1"
    # Dispatching again (a re-delivery) finds it: 409 is success, nothing new is created.
    assert tasks.dispatch.apply(args=(job.pk, 1)).get() in ("pending", "started")
    assert sum(1 for r in kube.requests if r[0] == "POST" and r[1].split("?")[0].endswith("/jobs")) == 2
    kube.add_pod(f"{name}-0", labels=labels, node=job.node_names[0], log="epoch 1\n", job_name=name)
    jobs_follow()
    job.refresh_from_db()
    assert job.state == JobState.RUNNING
    assert job_logs(job=job).text == "epoch 1\n"
    kube.finish_job(name)
    kube.add_pod(f"{name}-0", labels=labels, node=job.node_names[0], exit_code=0, phase="Succeeded", job_name=name)
    with django_capture_on_commit_callbacks(execute=True):
        jobs_follow()
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and job.exit_code == 0


# --- A real worker, killed in the middle of dispatch ----------------------------------------------------

WORKER = """
import os, sys
sys.path.insert(0, {root!r})
import django
django.setup()
from jobs.backends.local import LocalJobs

original = LocalJobs.create

def create(self, spec):
    status = original(self, spec)
    marker = os.environ["CRASH_MARKER"]
    if not os.path.exists(marker):  # the first delivery dies right after the backend started the attempt
        open(marker, "w").write("died")
        os._exit(1)
    return status

LocalJobs.create = create
from celery.bin.celery import main
sys.argv = ["celery", "-A", "portal", "worker", "--pool", "prefork", "-c", "1", "-Q", {queue!r},
            "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info"]
main()
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")
def test_a_worker_killed_mid_dispatch_dispatches_the_job_exactly_once(tmp_path, settings):
    import os
    import subprocess
    import sys
    import uuid
    from pathlib import Path

    from portal.celery import app as celery_app

    root = Path(__file__).resolve().parents[2]
    settings.JOBS_LOCAL_DIR = tmp_path / "jobs"
    ImageRuleFactory()
    lab(1)
    job = Job.objects.create(
        owner=UserFactory(username="sam"),
        name="once",
        image=IMAGE,
        command=["python", "-c", "import os; open(os.environ['CHECKPOINT_DIR'] + '/runs.txt', 'a').write('ran\\n')"],
        gpus_per_node=1,
        max_runtime_s=600,
        state=JobState.STARTING,
        started_at=timezone.now(),
        node_names=["gpu01"],
        gpu_indices=[[0]],
    )
    runs = tmp_path / "jobs" / "checkpoints" / f"job-{job.pk}-checkpoint" / "runs.txt"
    db = settings.DATABASES["default"]
    queue = f"test-{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "crashed"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "JOBS_LOCAL_DIR": str(settings.JOBS_LOCAL_DIR),
        "CRASH_MARKER": str(marker),
    }
    script = tmp_path / "worker.py"
    script.write_text(WORKER.format(root=str(root), queue=queue))
    worker = subprocess.Popen(
        [sys.executable, str(script)], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        celery_app.send_task("jobs.tasks.dispatch", args=[job.pk, 1], queue=queue)

        wait_until(lambda: marker.exists(), timeout=60, step=0.2)  # the first worker process died after create
        # No follower runs here: only the re-delivered dispatch can record the attempt.
        wait_until(lambda: Job.objects.get(pk=job.pk).state != JobState.STARTING, timeout=60, step=0.2)
        follow_until(job, JobState.SUCCEEDED, timeout=60)
    finally:
        worker.terminate()
        output = worker.communicate(timeout=30)[0]
    assert marker.read_text() == "died"
    assert runs.read_text() == "ran\n", output  # started once, though dispatched twice
    # The broker re-delivered the task that died with its process, and the second delivery completed.
    assert "WorkerLostError" in output, output
    assert "Task jobs.tasks.dispatch[" in output and "] succeeded" in output, output


@pytest.mark.parametrize("status", [500, 503, 429, 0], ids=["500", "503", "429", "timeout"])
def test_a_retryable_api_error_on_dispatch_keeps_the_job_starting_and_the_retry_creates_it_once(
    kube, sam, status, django_capture_on_commit_callbacks
):
    from accounts.errors import BackendError
    from jobs.services.dispatch import job_dispatch

    with django_capture_on_commit_callbacks(execute=False):
        job = python_job(sam, "print(1)")
        scheduling_pass()
    job.refresh_from_db()
    assert job.state == JobState.STARTING
    kube.fail_next(status, "ServiceUnavailable", method="POST", path="/apis/batch/v1/namespaces/gpu-lab-jobs/jobs")
    with pytest.raises(BackendError) as caught:
        job_dispatch(job_id=job.pk, attempt=1)
    assert caught.value.retryable
    job.refresh_from_db()
    assert job.state == JobState.STARTING and job.attempt == 1
    assert Allocation.objects.filter(ref=f"job:{job.pk}#1", ends_at__isnull=True).count() == 1  # GPUs kept
    # The task's retry: the Job is created exactly once (a timeout's lost answer is found, not doubled).
    job_dispatch(job_id=job.pk, attempt=1)
    job_dispatch(job_id=job.pk, attempt=1)
    assert kube.job(f"job-{job.pk}-a1") is not None
    assert sum(1 for (kind, _ns, name) in kube.objects if kind == "jobs" and name.startswith(f"job-{job.pk}-")) == 1
    job.refresh_from_db()
    assert job.state == JobState.STARTING


@pytest.mark.parametrize("status,reason", [(422, "Invalid"), (404, "NotFound"), (403, "Forbidden")])
def test_a_refusal_on_dispatch_fails_the_job_says_why_and_frees_its_gpus(
    kube, sam, status, reason, django_capture_on_commit_callbacks
):
    from jobs.services.dispatch import job_dispatch

    with django_capture_on_commit_callbacks(execute=False):
        job = python_job(sam, "print(1)")
        scheduling_pass()
    kube.fail_next(status, reason, method="POST", path="/apis/batch/v1/namespaces/gpu-lab-jobs/jobs")
    job_dispatch(job_id=job.pk, attempt=1)
    job.refresh_from_db()
    assert job.state == JobState.FAILED
    assert job.events.filter(to_state=JobState.FAILED).exists()
    assert kube.job(f"job-{job.pk}-a1") is None
    assert not Allocation.objects.filter(ref=f"job:{job.pk}#1", ends_at__isnull=True).exists()
