"""A job run through the jobs services (placed by the scheduling pass, finished as the backend reports it) gets its
efficiency row from the simulated telemetry when its attempt ends: the embedded path end to end, minus the process."""

from __future__ import annotations

import datetime as dt

import pytest

from jobs.backends.base import JobStatus
from jobs.models import Job, JobState
from jobs.services import job_submit, scheduling_pass
from jobs.services.dispatch import job_observe
from labs.models import Allocation, Gpu, HolderEfficiency
from tests.factories import UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory, lab
from tests.labs.usage.test_efficiency import simulate

pytestmark = pytest.mark.django_db
START = dt.datetime(2026, 3, 11, 9, 0, tzinfo=dt.UTC)


def test_a_finished_job_attempt_has_its_efficiency_row(frozen_now, django_capture_on_commit_callbacks):
    ImageRuleFactory()
    lab(2)
    sam = UserFactory(username="sam", role="student")
    frozen_now(START)
    job = job_submit(user=sam, name="mnist", image=IMAGE, command=["python", "train.py"], gpus=1, max_runtime_s=3600)
    scheduling_pass()
    job.refresh_from_db()
    assert job_observe(job=job, status=JobStatus(name="x", phase="running")) in ("running", "started")
    held = Allocation.objects.get(ref=f"job:{job.pk}#1")
    simulate(list(Gpu.objects.select_related("node")), held={held.gpu_id}, start=START, minutes=12)
    frozen_now(START + dt.timedelta(minutes=10))
    with django_capture_on_commit_callbacks(execute=True):
        job_observe(job=Job.objects.get(pk=job.pk), status=JobStatus(name="x", phase="succeeded"))
    assert Job.objects.get(pk=job.pk).state == JobState.SUCCEEDED
    row = HolderEfficiency.objects.get(holder_ref=f"job:{job.pk}#1")
    assert row.holder_kind == "job" and row.attempt == 1 and row.user == sam and row.ended_at is not None
    assert row.gpu_hours == pytest.approx((row.ended_at - row.started_at).total_seconds() / 3600)
    assert row.telemetry_minutes >= 9 and row.mean_util_pct > 30 and row.energy_wh > 0
