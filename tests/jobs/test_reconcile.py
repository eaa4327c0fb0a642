"""The jobs' reconcile steps against the fake batch/v1 server: Jobs the portal does not know are stopped after the
grace (someone else's never), attempts whose Job vanished are requeued or failed, a cluster answering 500s changes
nothing; every test ends with the ledger clean, and a second pass does nothing."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone

from jobs.backends.base import JobRef, JobSpec
from jobs.backends.kubernetes import KubernetesJobs
from jobs.backends.manifests import ClusterConfig, selector_labels
from jobs.models import Job, JobState
from jobs.services import job_submit, scheduling_pass
from jobs.services.dispatch import job_dispatch, jobs_follow
from labs.ledger_check import ledger_violations
from labs.models import Allocation
from labs.reconcile import reconcile
from tests.factories import UserFactory
from tests.fakes.kube import FakeKube
from tests.jobs.factories import IMAGE, ImageRuleFactory, JobFactory, lab, local_backend_fixture  # noqa: F401

pytestmark = pytest.mark.django_db
NS = "gpu-lab-jobs"
GRACE = dt.timedelta(seconds=300)


@pytest.fixture
def kube(settings, tmp_path):
    fake = FakeKube().start()
    settings.KUBERNETES_API_URL = fake.url
    settings.KUBERNETES_TOKEN = "test-token"
    settings.KUBERNETES_TIMEOUT_S = 1
    settings.JOBS_BACKEND = "kubernetes"
    settings.RECONCILE_GRACE_S = int(GRACE.total_seconds())
    settings.NOTEBOOKS_HUB_API_URL = "http://127.0.0.1:9/hub/api"  # no hub here: its steps are skipped
    yield fake
    fake.stop()


@pytest.fixture
def sam():
    ImageRuleFactory()
    lab(2)
    return UserFactory(username="sam", role="student")


def spec(job_id: int, attempt: int = 1) -> JobSpec:
    return JobSpec(
        job_id=job_id,
        attempt=attempt,
        image=IMAGE,
        command=("python", "train.py"),
        gpus_per_node=1,
        max_runtime_s=3600,
        node_names=("gpu01",),
        owner="someone",
    )


def running_job(kube, user, **overrides) -> Job:
    """A job placed by a pass, created in the fake cluster and seen running by the follower."""
    fields = dict(name="train", image=IMAGE, command=["python", "train.py"], gpus=1, max_runtime_s=3600)
    fields.update(overrides)
    job = job_submit(user=user, **fields)
    scheduling_pass()
    job.refresh_from_db()
    job_dispatch(job_id=job.pk, attempt=job.attempt)
    name = f"job-{job.pk}-a{job.attempt}"
    labels = selector_labels(job.pk, job.attempt)
    kube.add_pod(f"{name}-x", labels=labels, node=job.node_names[0], job_name=name)
    jobs_follow()
    job.refresh_from_db()
    assert job.state == JobState.RUNNING
    return job


def clean_ledger():
    assert ledger_violations() == []


def test_list_running_lists_this_portals_unfinished_jobs_only(kube, sam):
    ours = KubernetesJobs()
    ours.create(spec(7))
    ours.create(spec(8))
    kube.finish_job("job-8-a1")
    KubernetesJobs(config=dataclasses.replace(ClusterConfig.from_settings(), instance="staging")).create(spec(9))
    kube.objects[("jobs", NS, "job-10-a1")] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "job-10-a1", "namespace": NS, "labels": {"portal.gpulab.io/job-id": "10"}},
        "status": {},
    }
    assert [(r.job_id, r.attempt) for r in ours.list_running()] == [(7, 1)]
    (ref,) = ours.list_running()
    assert ref.created_at is not None and abs(ref.created_at - timezone.now().timestamp()) < 60
    (_, path, _) = [r for r in kube.requests if r[0] == "GET" and "/jobs?" in r[1]][-1]
    selector = parse_qs(urlsplit(path).query)["labelSelector"][0].split(",")
    assert "portal.gpulab.io/instance=default" in selector and "app.kubernetes.io/managed-by=gpu-lab-portal" in selector


def test_an_unknown_job_is_stopped_after_the_grace_and_someone_elses_never(kube, sam):
    KubernetesJobs().create(spec(4242))  # a Job of this portal for a job it has no row of (a restored database)
    KubernetesJobs(config=dataclasses.replace(ClusterConfig.from_settings(), instance="staging")).create(spec(4243))
    now = timezone.now()

    assert reconcile(now=now).actions == []  # within the grace: left alone
    later = now + GRACE + dt.timedelta(seconds=5)
    dry = reconcile(now=later, dry_run=True)
    assert [(a.kind, a.target, a.done) for a in dry.actions] == [("unknown_job", "job-4242-a1", False)]
    assert kube.job("job-4242-a1") is not None  # the dry run changed nothing

    report = reconcile(now=later)
    assert [(a.kind, a.target) for a in report.actions] == [("unknown_job", "job-4242-a1")]
    assert report.actions[0].sentence == "stopped job-4242-a1, which the portal does not run (no such job)"
    assert kube.job("job-4242-a1") is None
    assert kube.job("job-4243-a1") is not None  # another instance's Job is not ours to stop
    assert reconcile(now=later).actions == []
    clean_ledger()


def test_an_attempt_still_running_after_its_job_was_requeued_is_stopped_with_an_event(kube, sam):
    job = running_job(kube, sam)
    # The database moved on (the attempt was requeued) but the stop never reached the cluster.
    Job.objects.filter(pk=job.pk).update(
        state=JobState.QUEUED, attempt=2, updated_at=timezone.now() - GRACE, started_at=None, running_at=None
    )
    from labs.ledger import Ref, allocations_close

    allocations_close(ref=Ref.job(job.pk, 1), at=timezone.now())
    report = reconcile(now=timezone.now() + GRACE)
    assert [(a.kind, a.target) for a in report.actions] == [("unknown_job", f"job-{job.pk}-a1")]
    assert kube.job(f"job-{job.pk}-a1") is None
    event = job.events.last()
    assert event.attempt == 1 and "attempt 1 was still running in the cluster; stopped" in event.reason
    clean_ledger()


def test_a_running_job_whose_job_vanished_is_requeued_as_the_next_attempt(kube, sam):
    job = running_job(kube, sam)
    kube.objects.pop(("jobs", NS, f"job-{job.pk}-a1"))  # someone deleted the Job in the cluster
    now = timezone.now()

    assert [a.kind for a in reconcile(now=now, dry_run=True).actions] == ["lost_job"]
    assert Job.objects.get(pk=job.pk).state == JobState.RUNNING

    report = reconcile(now=now)
    assert [(a.kind, a.target) for a in report.actions] == [("lost_job", f"job:{job.pk}#1")]
    job.refresh_from_db()
    assert job.state == JobState.QUEUED and job.attempt == 2
    assert job.events.last().reason == ("attempt 1 lost: its Job vanished from the cluster; queued again as attempt 2")
    assert Allocation.objects.get(ref=f"job:{job.pk}#1").ends_at == now
    assert reconcile(now=now).actions == []
    clean_ledger()


def test_a_job_that_may_not_be_preempted_fails_when_its_job_vanished(kube, sam, settings):
    job = running_job(kube, sam)
    Job.objects.filter(pk=job.pk).update(preemptible=False)
    kube.objects.pop(("jobs", NS, f"job-{job.pk}-a1"))
    reconcile()
    job.refresh_from_db()
    assert job.state == JobState.FAILED and job.message == "its Job vanished from the cluster"
    assert not Allocation.objects.filter(ends_at__isnull=True).exists()
    clean_ledger()


def test_a_starting_job_the_cluster_never_shows_is_given_up_after_the_grace(kube, sam, settings):
    settings.JOBS_LOST_MAX_ATTEMPTS = 1  # no second attempt: it fails
    job = job_submit(user=sam, name="t", image=IMAGE, command=["python", "t.py"], gpus=1, max_runtime_s=3600)
    scheduling_pass()  # placed; its dispatch never runs
    now = timezone.now()
    assert reconcile(now=now).actions == []  # the dispatch may still be on its way
    report = reconcile(now=now + GRACE)
    assert [a.kind for a in report.actions] == ["lost_job"]
    job.refresh_from_db()
    assert job.state == JobState.FAILED and job.message == "its Job never appeared in the cluster"
    clean_ledger()


def test_drill_the_cluster_answers_500s_for_a_while_then_loses_a_job(kube, sam):
    job = running_job(kube, sam)
    for _ in range(6):
        kube.fail_next(500)
    report = reconcile()
    assert report.actions == [] and any("jobs-" in error for error in report.errors)
    job.refresh_from_db()
    assert job.state == JobState.RUNNING  # an error is never taken for "gone"
    assert Allocation.objects.filter(ref=job.ref, ends_at__isnull=True).exists()

    kube.failures.clear()
    kube.objects.pop(("jobs", NS, f"job-{job.pk}-a1"))
    assert [a.kind for a in reconcile().actions] == ["lost_job"]
    job.refresh_from_db()
    assert job.state == JobState.QUEUED and job.attempt == 2
    assert reconcile().actions == []
    # Nothing lost, nothing run twice: the next pass starts attempt 2 once, and the cluster has only it.
    scheduling_pass()
    job.refresh_from_db()
    job_dispatch(job_id=job.pk, attempt=2)
    job_dispatch(job_id=job.pk, attempt=2)
    assert [(r.job_id, r.attempt) for r in KubernetesJobs().list_running()] == [(job.pk, 2)]
    clean_ledger()


def test_the_reconciler_closes_a_finished_attempts_open_entry_and_says_so_in_its_events(kube, sam):
    job = running_job(kube, sam)
    finished = timezone.now()
    # A worker died between the state change and the ledger write (as a crash between two transactions would).
    Job.objects.filter(pk=job.pk).update(state=JobState.SUCCEEDED, finished_at=finished)
    kube.finish_job(f"job-{job.pk}-a1")
    report = reconcile()
    assert [(a.kind, a.target) for a in report.actions] == [("orphan_entry", f"job:{job.pk}#1")]
    assert Allocation.objects.get(ref=f"job:{job.pk}#1").ends_at == finished
    assert "reconciler: closed 1 ledger entries" in job.events.last().reason
    assert reconcile().actions == []
    clean_ledger()


def test_jobref_identity_ignores_when_it_was_created():
    assert JobRef(1, 2, created_at=5.0) == JobRef(1, 2)


# --- the local backend's files ---------------------------------------------------------------------------------------


def leave_attempt(backend, job_id: int, attempt: int, finished: dt.datetime) -> Path:
    """An attempt's directory as its runner leaves it: exit status, log, work dir; and the job's checkpoints."""
    directory = backend.root / f"job-{job_id}-a{attempt}"
    (directory / "work").mkdir(parents=True)
    (directory / "work" / "scratch.bin").write_bytes(b"x" * 4096)
    (directory / "rank-0.log").write_text("epoch 1\n")
    stamp = finished.timestamp()
    (directory / "exit.json").write_text(json.dumps({"phase": "succeeded", "finished_at": stamp, "exit_codes": [0]}))
    backend.checkpoint_dir(job_id).mkdir(parents=True, exist_ok=True)
    (backend.checkpoint_dir(job_id) / "step").write_text("1")
    return directory


def test_old_local_work_dirs_and_the_checkpoints_of_jobs_over_go_after_the_keep_days(local_backend, sam, settings):
    settings.JOBS_LOCAL_KEEP_DAYS = 7
    settings.NOTEBOOKS_HUB_API_URL = "http://127.0.0.1:9/hub/api"  # no hub here: its steps are skipped
    now = timezone.now()
    old, recent = now - dt.timedelta(days=8), now - dt.timedelta(days=1)
    done = JobFactory(owner=sam, state=JobState.SUCCEEDED, finished_at=old)
    waiting = JobFactory(owner=sam, state=JobState.QUEUED, attempt=2)  # preempted 8 days ago, queued since
    fresh = JobFactory(owner=sam, state=JobState.FAILED, finished_at=recent)
    attempts = {
        "done": leave_attempt(local_backend, done.pk, 1, old),
        "waiting": leave_attempt(local_backend, waiting.pk, 1, old),
        "fresh": leave_attempt(local_backend, fresh.pk, 1, recent),
    }
    orphan = local_backend.checkpoint_dir(done.pk + 1000)  # a job that no longer exists
    orphan.mkdir()
    os.utime(orphan, (old.timestamp(), old.timestamp()))

    preview = reconcile(now=now, dry_run=True)
    expected = {
        str(attempts["done"] / "work"),
        str(attempts["waiting"] / "work"),
        str(local_backend.checkpoint_dir(done.pk)),
        str(orphan),
    }
    assert {a.target for a in preview.actions if a.kind == "expired_files"} == expected
    assert all(path.exists() for path in map(Path, expected))  # a dry run removes nothing

    report = reconcile(now=now)
    actions = [a for a in report.actions if a.kind == "expired_files"]
    assert {a.target for a in actions} == expected
    assert not [error for error in report.errors if error.startswith("jobs")]
    assert "over for more than 7 days (JOBS_LOCAL_KEEP_DAYS)" in actions[0].sentence
    assert not any(path.exists() for path in map(Path, expected))
    for directory in attempts.values():  # logs and exit status stay, for the job's page
        assert (directory / "rank-0.log").read_text() == "epoch 1\n" and (directory / "exit.json").exists()
    assert (local_backend.checkpoint_dir(waiting.pk) / "step").exists()  # it resumes from them
    assert (attempts["fresh"] / "work" / "scratch.bin").exists()
    assert (local_backend.checkpoint_dir(fresh.pk) / "step").exists()
    assert not [a for a in reconcile(now=now).actions if a.kind == "expired_files"]  # a second pass: nothing
