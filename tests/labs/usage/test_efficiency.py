"""Efficiency rows from the simulated telemetry: written when the ledger closes a job attempt or a notebook session,
refreshed for long runners and for holders closed without one (Celery beat's task)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import transaction

from labs.ledger import GpuShare, Ref, allocation_open, allocations_close
from labs.models import Allocation, GpuMinute, HolderEfficiency
from labs.telemetry.history import MinuteBuckets, minutes_save
from labs.telemetry.samples import GpuTarget
from labs.telemetry.simulator import GpuSimulator
from labs.usage.tasks import usage_efficiency_refresh

pytestmark = pytest.mark.django_db
START = dt.datetime(2026, 3, 11, 9, 0, tzinfo=dt.UTC)


def simulate(gpus, *, held: set[int], start: dt.datetime, minutes: int) -> None:
    """The simulator's samples, every 5 s, through the collector's one-minute buckets into the history."""
    simulator, buckets = GpuSimulator(seed=7), MinuteBuckets()
    targets = [
        GpuTarget(gpu.pk, gpu.node.name, gpu.index, None, gpu.model, gpu.memory_mb, "ready", held=gpu.pk in held)
        for gpu in gpus
    ]
    for step in range(minutes * 12):
        now = start.timestamp() + step * 5
        for target, sample in zip(targets, simulator.sample(targets, now), strict=True):
            buckets.add(target.gpu_id, sample)
    minutes_save(rows=buckets.due(start.timestamp() + minutes * 60 + 60, everything=True))


def test_every_finished_job_and_notebook_gets_a_row(lab, settings, django_capture_on_commit_callbacks):
    settings.USAGE_IDLE_UTIL_PCT = 5
    busy, quiet = lab.gpus[0], lab.gpus[1]
    job, notebook = Ref.job(41, 1), Ref.notebook(9)
    with transaction.atomic():
        allocation_open(ref=job, user_id=lab.alice.pk, shares=[GpuShare(busy.pk)], at=START, course_id=lab.course.pk)
        allocation_open(ref=notebook, user_id=lab.bob.pk, shares=[GpuShare(quiet.pk, 0.25)], at=START)
    simulate(lab.gpus, held={busy.pk}, start=START, minutes=30)
    assert GpuMinute.objects.filter(gpu=busy).count() >= 30
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        allocations_close(ref=job, at=START + dt.timedelta(minutes=30))
        allocations_close(ref=notebook, at=START + dt.timedelta(minutes=20))
    rows = {row.holder_ref: row for row in HolderEfficiency.objects.all()}
    assert set(rows) == {"job:41#1", "notebook:9"}
    trained = rows["job:41#1"]
    assert trained.gpu_hours == pytest.approx(0.5) and trained.ended_at == START + dt.timedelta(minutes=30)
    assert trained.telemetry_minutes == 30 and trained.mean_util_pct > 30 and trained.p95_util_pct >= 35
    assert trained.energy_wh > 0 and trained.peak_mem_mb > 0 and trained.idle_gpu_hours < trained.gpu_hours
    assert trained.course == lab.course and trained.node.name == "gpu01" and trained.attempt == 1
    idle = rows["notebook:9"]
    assert idle.gpu_hours == pytest.approx(0.25 * 20 / 60)
    assert idle.idle_gpu_hours == pytest.approx(idle.gpu_hours) and idle.mean_util_pct < 5


def test_the_refresh_covers_long_runners_and_holders_closed_without_a_row(lab, frozen_now):
    running, missed = Ref.job(50, 2), Ref.notebook(51)
    allocation_open(ref=running, user_id=lab.alice.pk, shares=[GpuShare(lab.gpus[0].pk)], at=START)
    allocation_open(ref=missed, user_id=lab.bob.pk, shares=[GpuShare(lab.gpus[1].pk)], at=START)
    simulate(lab.gpus, held={lab.gpus[0].pk, lab.gpus[1].pk}, start=START, minutes=15)
    allocations_close(ref=missed, at=START + dt.timedelta(minutes=10))  # no commit hook ran: no row yet
    assert not HolderEfficiency.objects.exists()
    frozen_now(START + dt.timedelta(minutes=15))
    usage_efficiency_refresh.apply()
    rows = {row.holder_ref: row for row in HolderEfficiency.objects.all()}
    assert rows["job:50#2"].ended_at is None and rows["job:50#2"].gpu_hours == pytest.approx(0.25)
    assert rows["notebook:51"].gpu_hours == pytest.approx(10 / 60) and rows["notebook:51"].telemetry_minutes == 10
    assert Allocation.objects.filter(ends_at__isnull=True).count() == 1


def test_history_is_kept_long_enough_for_the_refresh(settings):
    assert settings.TELEMETRY_HISTORY_DAYS >= settings.USAGE_EFFICIENCY_DAYS + 7
    assert "usage-efficiency-refresh" in settings.CELERY_BEAT_SCHEDULE
    assert settings.CELERY_BEAT_SCHEDULE["usage-efficiency-refresh"]["task"] == "labs.tasks.usage_efficiency_refresh"


def test_a_running_holder_on_several_gpus_counts_once_toward_the_refresh_limit(lab):
    from labs.usage.efficiency import holders_to_refresh

    # The one-GPU job began first; the notebook took a GPU more at each of three later times.
    allocation_open(ref=Ref.job(60, 1), user_id=lab.alice.pk, shares=[GpuShare(lab.gpus[0].pk)], at=START)
    for minutes, gpu in ((10, lab.gpus[1]), (20, lab.gpus[2]), (30, lab.gpus[0])):
        at = START + dt.timedelta(minutes=minutes)
        allocation_open(ref=Ref.notebook(61), user_id=lab.bob.pk, shares=[GpuShare(gpu.pk, 0.25)], at=at)
    refs = holders_to_refresh(now=START + dt.timedelta(hours=1), limit=2)
    assert sorted(str(ref) for ref in refs) == ["job:60#1", "notebook:61"]
