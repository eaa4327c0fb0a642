"""The GPU utilisation the notebooks' idle culling reads (labs.telemetry.selectors.gpu_util_of)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.cache import cache

from labs.telemetry import store
from labs.telemetry.samples import gpu_key
from labs.telemetry.selectors import GpuUtil, gpu_util_of

NOW = dt.datetime(2025, 3, 3, 10, 0, tzinfo=dt.UTC)


@pytest.fixture
def latest(settings):
    """The store's latest tick, forgotten after the test; samples older than 30 s are stale."""
    settings.TELEMETRY_STALE_AFTER_S = 30
    cache.delete(store.LATEST_KEY)
    yield
    cache.delete(store.LATEST_KEY)


def test_fresh_stale_missing_and_unmeasured_gpus(latest):
    store.write_latest(
        seq=1,
        at=NOW.timestamp(),
        gpus={
            gpu_key("gpu01", 0): {"util_pct": 3.0, "sampled_at": (NOW - dt.timedelta(seconds=30)).isoformat()},
            gpu_key("gpu01", 1): {"util_pct": 3.0, "sampled_at": (NOW - dt.timedelta(seconds=31)).isoformat()},
            gpu_key("gpu02", 0): {"util_pct": None, "sampled_at": NOW.isoformat()},
            gpu_key("gpu03", 0): {"util_pct": 80.0, "sampled_at": ""},
        },
    )
    asked = [("gpu01", 0), ("gpu01", 1), ("gpu02", 0), ("gpu03", 0), ("gpu04", 0)]
    assert gpu_util_of(asked, now=NOW) == {
        ("gpu01", 0): GpuUtil(util_pct=3.0, fresh=True),
        ("gpu01", 1): GpuUtil(util_pct=3.0, fresh=False),
        ("gpu02", 0): GpuUtil(util_pct=None, fresh=True),
        ("gpu03", 0): GpuUtil(util_pct=80.0, fresh=False),
    }
    assert gpu_util_of([("gpu01", 0)], now=NOW + dt.timedelta(minutes=5)) == {
        ("gpu01", 0): GpuUtil(util_pct=3.0, fresh=False)
    }


def test_nothing_collected_yet_reads_as_no_gpu(latest):
    assert gpu_util_of([("gpu01", 0)], now=NOW) == {}
