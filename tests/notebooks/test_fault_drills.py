"""Fault drills for notebooks against a real JupyterHub on loopback: two passes at once, a worker SIGKILLed inside a
pass, and the telemetry source down for five minutes. Each ends with the ledger clean and, counted in rows and in the
hub's start calls, no notebook spawned twice. The job queue's drills are in tests/test_fault_drills.py."""

from __future__ import annotations

import datetime as dt
import threading
import time
import types
import uuid
from collections import Counter
from decimal import Decimal

import pytest
from celery import Celery
from django.conf import settings
from django.db import connection

from accounts.errors import BackendError
from accounts.models import Notice
from labs.ledger_check import ledger_violations
from labs.models import Allocation, NotebookProfile, NotebookSession, NotebookStatus
from labs.notebooks import tasks
from labs.notebooks.hub_client import HubClient
from labs.notebooks.passes import notebooks_pass
from labs.notebooks.services import notebook_request
from labs.telemetry import store
from labs.telemetry.collector import Collector
from labs.telemetry.health import HealthWatch
from labs.telemetry.samples import gpu_key
from tests.factories import CourseFactory, NodeFactory
from tests.fault_tools import Worker, backend_alive, lock_waiters, pg_connect, wait_for
from tests.labs.telemetry.test_collector import ScriptedSource, clean_store, reading  # noqa: F401 - a fixture
from tests.notebooks.test_notebooks import (  # noqa: F401 - the hub is emptied after each test
    _clean_hub,
    ready,
    reload,
    run_until,
    student,
)

pytestmark = [pytest.mark.usefixtures("hub_settings"), pytest.mark.django_db(transaction=True)]
VISIBILITY_S = 2


@pytest.fixture
def course(db):
    return CourseFactory(code="DL-101")


@pytest.fixture
def quarter(course):
    profile = NotebookProfile.objects.create(
        slug="quarter", name="Quarter GPU", image="quay.io/jupyter/base-notebook:latest", gpu_share=Decimal("0.25")
    )
    profile.courses.add(course)
    return profile


@pytest.fixture
def watch():
    """Sees the portal's connections (outside any transaction: a transaction sees one snapshot of them)."""
    conn = pg_connect()
    yield conn
    conn.close()


@pytest.fixture
def holder():
    """Holds the locks the portal's passes wait on."""
    conn = pg_connect()
    yield conn
    conn.close()


@pytest.fixture
def hub_starts(monkeypatch):
    """Every start the portal asks the hub for, by server, counted on the way (the real call still goes out)."""
    seen: Counter = Counter()
    real = HubClient.start

    def counting(self, user, server, options):
        seen[(user, server)] += 1
        return real(self, user, server, options)

    monkeypatch.setattr(HubClient, "start", counting)
    return seen


def hold_row(conn, session: NotebookSession):
    conn.execute("BEGIN")
    conn.execute(f"SELECT id FROM {NotebookSession._meta.db_table} WHERE id = %s FOR UPDATE", [session.pk])
    return lambda: conn.execute("ROLLBACK")


def assert_each_spawned_once(sessions: list[NotebookSession]) -> None:
    for session in sessions:
        row = reload(session)
        assert row.status == NotebookStatus.READY and row.start_attempts == 1, (row.pk, row.status, row.reason)
        assert Allocation.objects.filter(ref=row.ref).count() == 1
    assert Allocation.objects.count() == len(sessions)
    assert ledger_violations() == []


# --- 1. Two beat schedulers: two notebook passes at once -------------------------------------------------------------


@pytest.mark.postgresql_only
def test_drill_two_notebook_passes_at_once_spawn_each_notebook_once(course, quarter, watch, holder, hub_starts):
    NodeFactory(name="gpu01")
    sessions = [notebook_request(user=student(course, f"s{n}"), profile="quarter") for n in range(3)]
    # Both passes read the same queue, then both wait to place its first session: the drill holds that row.
    release = hold_row(holder, sessions[0])
    errors = []

    def one_pass():
        try:
            notebooks_pass(upkeep=False)
        except Exception as exc:  # noqa: BLE001 - the drill reports it
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=one_pass, daemon=True) for _ in range(2)]
    for thread in threads:
        thread.start()
    waiting = wait_for(lambda: len(lock_waiters(watch)) >= 2 and lock_waiters(watch))
    release()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == [] and len(waiting) == 2
    run_until(lambda: all(ready(s) for s in sessions), timeout=60)
    assert hub_starts == Counter({(s.hub_user, s.server_name): 1 for s in sessions})
    assert_each_spawned_once(sessions)


@pytest.mark.postgresql_only
def test_two_notebook_tasks_at_once_one_runs_the_other_makes_it_go_round_again(course, quarter, watch):
    NodeFactory(name="gpu01")
    session = notebook_request(user=student(course, "ada"), profile="quarter")
    watch.execute("SELECT pg_advisory_lock(%s)", [tasks.NOTEBOOKS_PASS_LOCK_KEY])  # a pass on another worker
    try:
        assert tasks.notebooks_pass(False) == "another pass is running; it goes round again"
        assert reload(session).status == NotebookStatus.QUEUED
    finally:
        watch.execute("SELECT pg_advisory_unlock(%s)", [tasks.NOTEBOOKS_PASS_LOCK_KEY])
    tasks.notebooks_pass(False)
    assert reload(session).status in (NotebookStatus.STARTING, NotebookStatus.READY)


# --- 2. A worker SIGKILLed inside a notebook pass --------------------------------------------------------------------


@pytest.fixture
def workers(redis_server, hub):
    started: list[Worker] = []
    queue = f"drill-{uuid.uuid4().hex[:8]}"

    def start() -> Worker:
        env = {
            "NOTEBOOKS_HUB_API_URL": hub.api_url,
            "NOTEBOOKS_HUB_PUBLIC_URL": hub.public_url,
            "NOTEBOOKS_HUB_TOKEN": settings.NOTEBOOKS_HUB_TOKEN,
            "CELERY_VISIBILITY_TIMEOUT_S": str(VISIBILITY_S),
        }
        worker = Worker(queue=queue, redis_url=redis_server.url, env=env).start()
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.mark.postgresql_only
def test_drill_a_worker_killed_inside_a_notebook_pass_the_next_one_spawns_it_once(
    course, quarter, watch, holder, workers, redis_server, hub
):
    NodeFactory(name="gpu01")
    session = notebook_request(user=student(course, "ada"), profile="quarter")
    # The pass takes its lock, drives stops, reads the queue, and waits to place the session: the drill holds its row.
    release = hold_row(holder, session)
    first = workers()
    broker = Celery("drill", broker=redis_server.url)
    try:
        sent = broker.send_task("labs.tasks.notebooks_pass", args=[False], queue=first.queue)
        (stuck,) = wait_for(lambda: lock_waiters(watch))
        first.kill()
        killed_at = time.monotonic()
        release()
        wait_for(lambda: not backend_alive(watch, stuck))
    finally:
        broker.close()
    row = reload(session)
    assert row.status == NotebookStatus.QUEUED and row.start_attempts == 0 and not Allocation.objects.exists()
    client = HubClient(hub.api_url, settings.NOTEBOOKS_HUB_TOKEN, timeout_s=10)
    assert client.server(session.hub_user, session.server_name) is None

    # The task comes back after the visibility time-out; the new worker's pass places it, spawns it, follows it.
    wait_for(lambda: time.monotonic() - killed_at > VISIBILITY_S + 0.5)
    second = workers()
    wait_for(lambda: ready(session), timeout=90)
    log = second.output()
    assert f"labs.tasks.notebooks_pass[{sent.id}] received" in log
    assert "another pass is running" not in log  # the dead worker's lock went with its connection
    assert_each_spawned_once([session])


# --- 5. The telemetry source down for five minutes -------------------------------------------------------------------


class FlakySource(ScriptedSource):
    """A telemetry source that can be taken down: then each collect fails as an unreachable exporter does."""

    down = False

    def collect(self, targets, now):
        if self.down:
            raise BackendError("dcgm-exporter on gpu01 is not answering", retryable=True)
        return super().collect(targets, now)


@pytest.mark.usefixtures("clean_store")
def test_drill_telemetry_down_for_five_minutes_stale_never_culled_fresh_again(
    course, quarter, settings, monkeypatch, api_as
):
    settings.NOTEBOOKS_IDLE_MIN, settings.NOTEBOOKS_WARN_MIN = 3, 1  # shorter than the outage
    NodeFactory(name="gpu01")
    ada = student(course, "ada")
    session = notebook_request(user=ada, profile="quarter")
    run_until(lambda: ready(session))
    source = FlakySource()
    collector = Collector(source=source, interval_s=1, stale_after_s=30, health=HealthWatch(hold_s=0))
    t0 = time.time()
    clock = types.SimpleNamespace(time=lambda: t0)
    monkeypatch.setattr("labs.telemetry.selectors.time", clock)  # what the API calls "now"
    admin = api_as("admin")

    def at(offset_s: float) -> dt.datetime:
        clock.time = lambda: t0 + offset_s
        return dt.datetime.fromtimestamp(t0 + offset_s, dt.UTC)

    def gpu_in_api() -> dict:
        (gpu,) = admin.get("/api/v1/gpus/").json()
        return gpu

    def tick(offset_s: float, util: float | None = None) -> None:
        source.samples = [] if util is None else [reading("gpu01", at=t0 + offset_s, util=util)]
        from asgiref.sync import async_to_sync

        async_to_sync(collector.tick)(now=t0 + offset_s)

    tick(0, util=0.0)  # a quiet GPU, freshly sampled
    assert gpu_in_api()["stale"] is False

    source.down = True
    for offset in range(15, 301, 15):  # five minutes without a word from the exporter, a pass every 15 s
        tick(offset)
        notebooks_pass(now=at(offset))
    latest = store.read_latest()["gpus"][gpu_key("gpu01", 0)]
    assert latest["stale"] is True and gpu_in_api()["stale"] is True
    row = reload(session)
    assert row.status == NotebookStatus.READY  # no telemetry is never idleness
    assert not Notice.objects.filter(user=ada, text__contains="looks idle").exists()
    assert Allocation.objects.filter(ref=session.ref, ends_at__isnull=True).count() == 1

    source.down = False
    tick(301, util=0.0)
    notebooks_pass(now=at(301))
    fresh = gpu_in_api()
    assert fresh["stale"] is False and fresh["util_pct"] == 0
    assert store.read_latest()["gpus"][gpu_key("gpu01", 0)]["sampled_at"].startswith(at(301).isoformat()[:19])
    assert reload(session).status == NotebookStatus.READY  # the idle clock starts when the data came back
    assert ledger_violations() == []

    # Fresh data that says "quiet" for NOTEBOOKS_IDLE_MIN does cull: the outage changed nothing else.
    for offset in range(331, 301 + 3 * 60 + 31, 30):
        tick(offset, util=0.0)
        notebooks_pass(now=at(offset))
    row = reload(session)
    assert row.status in (NotebookStatus.STOPPING, NotebookStatus.STOPPED) and "idle" in row.reason
    run_until(lambda: reload(session).status == NotebookStatus.STOPPED, now=lambda: at(520))
    assert Allocation.objects.get(ref=session.ref).ends_at is not None
    assert ledger_violations() == []
