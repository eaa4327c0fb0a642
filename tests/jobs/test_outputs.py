"""A job's outputs and checkpoint: attempt 2 of a preempted job resumes from what attempt 1 wrote (local, real
processes; the cluster's manifests), the files on the API (who may list and download them, no way out of the tree),
"run again from this checkpoint", and the notice before they are removed."""

import datetime as dt
import os

import kubernetes_validate
import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import Notice
from jobs.backends.base import JobRef
from jobs.backends.manifests import ClusterConfig, checkpoint_claim_manifest, job_manifest
from jobs.models import Job, JobState, StopReason
from jobs.outputs import outputs_purge_notices
from jobs.services import job_request_stop, job_submit
from jobs.services.dispatch import job_logs, job_spec, jobs_follow
from tests.factories import UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory, JobFactory, lab, local_backend_fixture, wait_until  # noqa: F401

pytestmark = pytest.mark.django_db

# Attempt 1 writes its step to the checkpoint and waits to be preempted; a later attempt reads it and finishes.
RESUMABLE = (
    "import os, time\n"
    "p = os.path.join(os.environ['CHECKPOINT_DIR'], 'step.txt')\n"
    "if os.path.exists(p):\n"
    "    print('resumed at', open(p).read(), 'in attempt', os.environ['PORTAL_ATTEMPT'])\n"
    "else:\n"
    "    open(p, 'w').write('epoch 3')\n"
    "    time.sleep(120)\n"
)


@pytest.fixture
def sam():
    ImageRuleFactory()
    lab(2)
    return UserFactory(username="sam", role="student")


def follow_until(job, condition, capture=None, timeout=30.0):
    """Follow the job (and run what each step queues after commit: passes, dispatches) until `condition`."""

    def done():
        if capture is None:
            jobs_follow()
        else:
            with capture(execute=True):
                jobs_follow()
        job.refresh_from_db()
        return condition(job)

    wait_until(done, timeout=timeout, step=0.1)
    return job


def test_attempt_2_of_a_preempted_job_resumes_from_what_attempt_1_wrote(
    local_backend, sam, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = job_submit(user=sam, name="resnet", image=IMAGE, command=["python", "-c", RESUMABLE], gpus=1,
                         max_runtime_s=600)  # fmt: skip
    follow_until(job, lambda j: j.state == JobState.RUNNING, django_capture_on_commit_callbacks)
    checkpoint = local_backend.checkpoint_dir(job.pk) / "step.txt"
    wait_until(checkpoint.exists)
    with django_capture_on_commit_callbacks(execute=True):
        assert job_request_stop(job=job, why=StopReason.PREEMPTED, note="a reservation", grace_s=1)
    follow_until(job, lambda j: j.state == JobState.SUCCEEDED, django_capture_on_commit_callbacks, timeout=40)
    assert job.attempt == 2
    assert job.events.filter(to_state="queued", attempt=2).exists()
    assert job_logs(job=job, attempt=2).text == "resumed at epoch 3 in attempt 2\n"
    # Its page lists the checkpoint it resumed from, with its size.
    client = APIClient()
    client.force_authenticate(sam)
    listed = client.get(f"/api/v1/jobs/{job.pk}/outputs/").json()
    assert {"path": "checkpoint/step.txt", "kind": "file", "size": 7} in [
        {k: f[k] for k in ("path", "kind", "size")} for f in listed["files"]
    ]


def test_both_attempts_mount_the_same_checkpoint_claim_on_the_cluster():
    job = JobFactory(state=JobState.QUEUED, attempt=1)
    config = ClusterConfig()
    first = job_spec(job)
    Job.objects.filter(pk=job.pk).update(attempt=2)
    job.refresh_from_db()
    second = job_spec(job)
    claims = []
    for spec in (first, second):
        manifest = job_manifest(spec, config)
        kubernetes_validate.validate(manifest, "1.33", strict=True)
        pod = manifest["spec"]["template"]["spec"]
        volume = next(v for v in pod["volumes"] if v["name"] == "checkpoint")
        mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "checkpoint")
        env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
        claims.append((volume["persistentVolumeClaim"]["claimName"], mount["mountPath"], env["CHECKPOINT_DIR"]))
    assert claims[0] == claims[1] == (f"job-{job.pk}-checkpoint", "/checkpoint", "/checkpoint")
    assert first.name != second.name  # two Jobs, one volume
    assert checkpoint_claim_manifest(first, config) == checkpoint_claim_manifest(second, config)


def test_a_job_run_again_clones_the_earlier_checkpoint_claim_on_the_cluster():
    earlier = JobFactory(state=JobState.SUCCEEDED, finished_at=timezone.now())
    job = JobFactory(resumed_from=earlier)
    claim = checkpoint_claim_manifest(job_spec(job), ClusterConfig(checkpoint_storage_class="cephfs"))
    kubernetes_validate.validate(claim, "1.33", strict=True)
    assert claim["metadata"]["name"] == f"job-{job.pk}-checkpoint"
    assert claim["spec"]["dataSource"] == {"kind": "PersistentVolumeClaim", "name": f"job-{earlier.pk}-checkpoint"}


# --- The files on the API --------------------------------------------------------------------------------------


@pytest.fixture
def finished(local_backend, sam, tmp_path):
    """A finished job of sam's with a checkpoint, a work file, a link out of the tree and a FIFO."""
    job = JobFactory(owner=sam, state=JobState.SUCCEEDED, finished_at=timezone.now())
    checkpoint = local_backend.checkpoint_dir(job.pk)
    checkpoint.mkdir(parents=True)
    (checkpoint / "model.pt").write_bytes(b"weights")
    (checkpoint / "sub").mkdir()
    (checkpoint / "sub" / "opt.pt").write_bytes(b"adam")
    secret = tmp_path / "secret.txt"
    secret.write_text("not yours")
    os.symlink(secret, checkpoint / "escape")
    os.mkfifo(checkpoint / "pipe")
    work = local_backend.root / f"job-{job.pk}-a1" / "work"
    work.mkdir(parents=True)
    (work / "metrics.csv").write_text("epoch,loss\n1,0.5\n")
    return job


def client_of(user):
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def test_the_owner_lists_and_downloads_outputs(finished, sam):
    answer = client_of(sam).get(f"/api/v1/jobs/{finished.pk}/outputs/")
    assert answer.status_code == 200
    body = answer.json()
    rows = {f["path"]: (f["kind"], f["size"]) for f in body["files"]}
    assert rows == {
        "checkpoint/escape": ("other", 0),
        "checkpoint/model.pt": ("file", 7),
        "checkpoint/pipe": ("other", 0),
        "checkpoint/sub": ("dir", 0),
        "checkpoint/sub/opt.pt": ("file", 4),
        "work/metrics.csv": ("file", 17),
    }
    assert body["total_bytes"] == 28 and body["available"] and not body["truncated"]
    assert body["kept_until"] is not None
    download = client_of(sam).get(f"/api/v1/jobs/{finished.pk}/outputs/checkpoint/sub/opt.pt")
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == b"adam"
    assert 'filename="opt.pt"' in download["Content-Disposition"]


@pytest.mark.parametrize(
    "path",
    ["checkpoint/escape", "checkpoint/pipe", "checkpoint/sub", "checkpoint/../checkpoint/model.pt",
     "checkpoint//model.pt", "nowhere/model.pt", "checkpoint", "checkpoint/%2e%2e/x", "work/./metrics.csv"],
)  # fmt: skip
def test_links_fifos_directories_and_traversal_are_not_served(finished, sam, path):
    answer = client_of(sam).get(f"/api/v1/jobs/{finished.pk}/outputs/{path}")
    assert answer.status_code == 404
    assert b"not yours" not in answer.content


def test_a_file_over_the_cap_is_refused(finished, sam, settings):
    settings.JOBS_OUTPUTS_DOWNLOAD_MAX_BYTES = 1024
    checkpoint = settings.JOBS_LOCAL_DIR / "checkpoints" / f"job-{finished.pk}-checkpoint"
    (checkpoint / "big.bin").write_bytes(b"x" * 2048)
    answer = client_of(sam).get(f"/api/v1/jobs/{finished.pk}/outputs/checkpoint/big.bin")
    assert answer.status_code == 409 and answer.json()["code"] == "conflict"


@pytest.mark.parametrize("who", ["other student", "teacher", "anonymous", "admin"])
def test_who_else_may_list_and_download(finished, who):
    user = {
        "other student": lambda: UserFactory(role="student"),
        "teacher": lambda: UserFactory(role="teacher"),
        "anonymous": lambda: None,
        "admin": lambda: UserFactory(role="admin"),
    }[who]()
    listed = client_of(user).get(f"/api/v1/jobs/{finished.pk}/outputs/")
    got = client_of(user).get(f"/api/v1/jobs/{finished.pk}/outputs/checkpoint/model.pt")
    expected = {"anonymous": 401, "admin": 200}.get(who, 404)
    assert (listed.status_code, got.status_code) == (expected, expected)


def test_the_job_page_lists_outputs_and_offers_to_run_again(finished, sam, client):
    client.force_login(sam)
    page = client.get(f"/jobs/{finished.pk}/").content.decode()
    assert "checkpoint/model.pt" in page and "work/metrics.csv" in page
    assert f"/api/v1/jobs/{finished.pk}/outputs/checkpoint/model.pt" in page
    assert 'data-testid="resume-button"' in page


# --- Run again from this checkpoint ----------------------------------------------------------------------------


def test_run_again_copies_the_checkpoint_into_the_new_job(
    finished, sam, local_backend, django_capture_on_commit_callbacks, client
):
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_of(sam).post(f"/api/v1/jobs/{finished.pk}/resume/")
    assert answer.status_code == 201
    body = answer.json()
    assert body["resumed_from"] == finished.pk and body["status"] == "queued" and body["owner"] == "sam"
    new = Job.objects.get(pk=body["id"])
    assert "from the checkpoint of job" in new.events.first().reason
    follow_until(new, lambda j: j.is_finished, django_capture_on_commit_callbacks)
    copy = local_backend.checkpoint_dir(new.pk)
    assert (copy / "model.pt").read_bytes() == b"weights"
    assert (copy / "sub" / "opt.pt").read_bytes() == b"adam"
    assert not os.path.lexists(copy / "escape") and not os.path.lexists(copy / "pipe")
    assert local_backend.status(JobRef(new.pk, 1)).phase == "succeeded"
    client.force_login(sam)
    assert f'href="/jobs/{finished.pk}/"' in client.get(f"/jobs/{new.pk}/").content.decode()


@pytest.mark.parametrize("who,status", [("other student", 404), ("teacher", 404), ("anonymous", 401)])
def test_only_the_owner_or_an_admin_runs_it_again(finished, who, status):
    user = {"other student": UserFactory(role="student"), "teacher": UserFactory(role="teacher"),
            "anonymous": None}[who]  # fmt: skip
    assert client_of(user).post(f"/api/v1/jobs/{finished.pk}/resume/").status_code == status
    assert Job.objects.count() == 1


def test_a_job_still_running_is_not_run_again(sam):
    job = JobFactory(owner=sam, state=JobState.QUEUED)
    answer = client_of(sam).post(f"/api/v1/jobs/{job.pk}/resume/")
    assert answer.status_code == 409 and Job.objects.count() == 1


# --- Kept for a while, then removed with notice ----------------------------------------------------------------


def test_the_owner_is_told_once_before_outputs_are_removed(sam, settings):
    settings.JOBS_LOCAL_KEEP_DAYS = 7
    settings.JOBS_OUTPUTS_NOTICE_DAYS = 2
    now = dt.datetime(2026, 3, 10, 12, 0, tzinfo=dt.UTC)
    soon = JobFactory(owner=sam, name="soon", state=JobState.SUCCEEDED, finished_at=now - dt.timedelta(days=5, hours=1))
    JobFactory(owner=sam, name="fresh", state=JobState.FAILED, finished_at=now - dt.timedelta(days=1))
    JobFactory(owner=sam, name="gone", state=JobState.FAILED, finished_at=now - dt.timedelta(days=8))
    assert outputs_purge_notices(now=now) == 1
    assert outputs_purge_notices(now=now + dt.timedelta(hours=1)) == 0
    notice = Notice.objects.get(user=sam)
    assert "“soon”" in notice.text and "2026-03-12" in notice.text
    soon.refresh_from_db()
    assert soon.outputs_notice_at == now
