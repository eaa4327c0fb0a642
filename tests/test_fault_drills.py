"""Fault drills for the job queue, Redis and PostgreSQL: two schedulers at once, a worker SIGKILLed inside a pass,
Redis restarted under load, the database's connections cut in the middle of a pass. Each ends with the ledger clean
(`ledger_violations()` empty) and, counted in rows, every job placed once per attempt and created once in the
cluster. The notebook drills and the telemetry outage are in tests/notebooks/test_fault_drills.py.

Nothing here sleeps for a fixed time: each step waits for what it needs (a backend waiting on a lock, a row changed,
a worker's task), with generous time-outs, so a loaded machine is slower, not flaky.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections import Counter

import pytest
from celery import Celery
from django.conf import settings
from django.core.signals import request_started
from django.db import connection
from rest_framework.test import APIClient

from accounts.services import token_issue
from jobs.models import Job, JobEvent, JobState
from jobs.services import scheduling_pass
from jobs.services.scheduling import PASS_LOCK_KEY
from labs.ledger_check import ledger_violations
from labs.models import Allocation, Gpu
from tests.factories import UserFactory
from tests.fakes.kube import FakeKube
from tests.fault_tools import Worker, backend_alive, lock_waiters, pg_connect, wait_for
from tests.jobs.factories import ImageRuleFactory, JobFactory, lab

pytestmark = [pytest.mark.postgresql_only, pytest.mark.django_db(transaction=True)]
VISIBILITY_S = 2  # the drill worker's CELERY_VISIBILITY_TIMEOUT_S: a killed worker's task comes back after it


@pytest.fixture
def kube(settings):
    fake = FakeKube().start()
    settings.KUBERNETES_API_URL = fake.url
    settings.KUBERNETES_TOKEN = "test-token"
    settings.JOBS_BACKEND = "kubernetes"
    yield fake
    fake.stop()


@pytest.fixture
def workers(redis_server, kube):
    """Start drill workers on the private Redis, dispatching to the fake cluster; all are stopped at the end."""
    started: list[Worker] = []
    queue = f"drill-{uuid.uuid4().hex[:8]}"

    def start() -> Worker:
        env = {
            "JOBS_BACKEND": "kubernetes",
            "KUBERNETES_API_URL": kube.url,
            "KUBERNETES_TOKEN": "test-token",
            "CELERY_VISIBILITY_TIMEOUT_S": str(VISIBILITY_S),
        }
        worker = Worker(queue=queue, redis_url=redis_server.url, env=env).start()
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def broker(redis_server):
    """The drill's side of the broker: sends tasks by name to the private Redis, as the web process would."""
    app = Celery("drill", broker=redis_server.url)
    app.conf.broker_connection_retry_on_startup = True
    yield app
    app.close()


@pytest.fixture
def watch():
    """A connection of the drill's own that sees (and ends) the portal's connections; never inside a transaction,
    since PostgreSQL shows a transaction one snapshot of pg_stat_activity."""
    conn = pg_connect()
    yield conn
    conn.close()


@pytest.fixture
def holder():
    """Another of the drill's connections: it holds the locks the portal's passes wait on."""
    conn = pg_connect()
    yield conn
    conn.close()


def queued_jobs(count: int) -> list[Job]:
    """`count` one-GPU jobs of one teacher (a teacher may run 8). One person, so that the fair share does not
    reorder them between passes (a job started in its turn is not preempted for that any more: see
    tests/jobs/test_services.py, two passes in a row over 6 students' jobs)."""
    owner = UserFactory(username="drill-teacher", role="teacher")
    return [JobFactory(owner=owner, name=f"train {n}") for n in range(count)]


def created_in_cluster(kube) -> Counter:
    """How many times each Job name was created in the fake cluster (a second create would be a 409, still counted)."""
    return Counter(
        body["metadata"]["name"]
        for method, path, body in kube.requests
        if method == "POST" and path.split("?")[0].endswith("/jobs") and body
    )


def assert_each_placed_once(jobs: list[Job], *, placed: int) -> None:
    """`placed` of the jobs started once (one STARTING event, one ledger row each, on distinct GPUs); the rest wait."""
    rows = {job.pk: Job.objects.get(pk=job.pk) for job in jobs}
    started = [pk for pk, job in rows.items() if job.state in (JobState.STARTING, JobState.RUNNING)]
    assert len(started) == placed, {pk: job.state for pk, job in rows.items()}
    events = list(JobEvent.objects.order_by("job_id", "id").values_list("job_id", "attempt", "to_state", "reason"))
    assert all(job.attempt == 1 for job in rows.values()), "\n".join(map(str, events))
    assert all(rows[pk].state == JobState.QUEUED for pk in rows if pk not in started)
    starts = Counter(JobEvent.objects.filter(to_state=JobState.STARTING).values_list("job_id", flat=True))
    assert starts == Counter(started)
    entries = list(Allocation.objects.values_list("ref", "gpu_id", "ends_at"))
    assert sorted(ref for ref, _, _ in entries) == sorted(f"job:{pk}#1" for pk in started)
    assert len({gpu for _, gpu, _ in entries}) == placed and all(end is None for _, _, end in entries)
    assert ledger_violations() == []


class HeldLock:
    """A lock the drill holds on its own connection until it lets go: a GPU's row, or the pass's advisory lock."""

    def __init__(self, conn, sql: str, params: list) -> None:
        self.conn = conn
        conn.execute("BEGIN")
        conn.execute(sql, params)

    def release(self) -> None:
        self.conn.execute("ROLLBACK")


def hold_gpu_row(conn, gpu: Gpu) -> HeldLock:
    return HeldLock(conn, f"SELECT id FROM {Gpu._meta.db_table} WHERE id = %s FOR UPDATE", [gpu.pk])


def in_thread(target, errors: list) -> threading.Thread:
    def run():
        try:
            target()
        except Exception as exc:  # noqa: BLE001 - the drill reports it
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


# --- 1. Two beat schedulers started by mistake -----------------------------------------------------------------------


def test_drill_two_scheduling_passes_at_once_place_each_job_once(kube, watch, holder):
    ImageRuleFactory()
    lab(4)
    jobs = queued_jobs(6)
    # Both passes are provably at the door at once: the drill holds their advisory lock until both wait on it.
    door = HeldLock(holder, "SELECT pg_advisory_xact_lock(%s)", [PASS_LOCK_KEY])
    reports, errors = [], []
    threads = [in_thread(lambda: reports.append(scheduling_pass()), errors) for _ in range(2)]
    waiting = wait_for(lambda: len(lock_waiters(watch)) >= 2 and lock_waiters(watch))
    door.release()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == [] and len(reports) == 2 and len(waiting) == 2
    started = [pk for report in reports for pk in report.started]
    assert sorted(started) == sorted(set(started)) and len(started) == 4  # the second pass saw the first's starts
    assert_each_placed_once(jobs, placed=4)
    assert created_in_cluster(kube) == Counter(f"job-{pk}-a1" for pk in started)


# --- 2. A worker SIGKILLed inside a scheduling pass ------------------------------------------------------------------


def test_drill_a_worker_killed_inside_a_scheduling_pass_the_next_one_does_it_once(kube, workers, broker, watch, holder):
    ImageRuleFactory()
    nodes = lab(2)
    jobs = queued_jobs(2)
    # The pass will write its second start on gpu02 with the GPU's row locked: the drill holds that row, so the
    # worker is inside the pass (lock, snapshot, decisions, in its transaction) when it dies.
    row = hold_gpu_row(holder, nodes[1].gpus.get())
    first = workers()
    sent = broker.send_task("jobs.tasks.schedule_pass", queue=first.queue)
    (stuck,) = wait_for(lambda: lock_waiters(watch))
    first.kill()
    killed_at = time.monotonic()
    row.release()  # the orphaned backend gets the row, finds its client gone and rolls back
    wait_for(lambda: not backend_alive(watch, stuck))
    assert not Allocation.objects.exists(), "nothing the killed pass wrote was committed"
    assert set(Job.objects.values_list("state", flat=True)) == {JobState.QUEUED}

    # Redis gives the unacknowledged task back once its visibility time-out has passed; a new worker runs it.
    wait_for(lambda: time.monotonic() - killed_at > VISIBILITY_S + 0.5)
    second = workers()
    wait_for(lambda: Job.objects.filter(state__in=(JobState.STARTING, JobState.RUNNING)).count() == 2, timeout=90)
    wait_for(lambda: len(created_in_cluster(kube)) == 2, timeout=90)
    assert f"jobs.tasks.schedule_pass[{sent.id}] received" in second.output()
    assert_each_placed_once(jobs, placed=2)
    assert created_in_cluster(kube) == Counter(f"job-{job.pk}-a1" for job in jobs)


# --- 3. Redis restarted under load -----------------------------------------------------------------------------------


def test_drill_redis_restarted_under_load_the_worker_reconnects_and_nothing_is_lost(
    kube, workers, broker, redis_server
):
    ImageRuleFactory()
    lab(4)
    jobs = queued_jobs(2)
    worker = workers()
    broker.send_task("jobs.tasks.schedule_pass", queue=worker.queue)
    wait_for(lambda: len(created_in_cluster(kube)) == 2, timeout=90)

    later = [JobFactory(owner=jobs[0].owner, name=f"later {n}") for n in range(2)]
    for _ in range(50):  # a burst of passes in the queue when Redis dies; without persistence they go with it
        broker.send_task("jobs.tasks.schedule_pass", queue=worker.queue)
    redis_server.kill()
    redis_server.start()  # same port, empty
    assert worker.process.poll() is None, "the worker outlived the broker"

    # The truth is in PostgreSQL, and beat sends what heals from it: the next pass (every JOBS_SCHEDULE_INTERVAL_S)
    # places what is still queued, and the next follow (every JOBS_FOLLOW_INTERVAL_S) sends again the dispatch of an
    # attempt a pass placed just before the kill, whose message went with Redis (REDISPATCH_AFTER_S after placing).
    def placed_after_restart():
        broker.send_task("jobs.tasks.schedule_pass", queue=worker.queue)
        broker.send_task("jobs.tasks.follow", queue=worker.queue)
        return wait_for(lambda: len(created_in_cluster(kube)) == 4, timeout=5)

    try:
        wait_for(lambda: _tries(placed_after_restart), timeout=120)
    except AssertionError:
        raise AssertionError(f"nothing placed after the restart; the worker said:\n{worker.output()[-4000:]}") from None
    assert_each_placed_once(jobs + later, placed=4)
    assert created_in_cluster(kube) == Counter(f"job-{job.pk}-a1" for job in jobs + later)
    assert "Connection to broker lost" in worker.output()  # it noticed, and came back by itself


def _tries(step) -> bool:
    try:
        return bool(step())
    except AssertionError:
        return False


# --- 4. PostgreSQL "restarted": the portal's connections cut in the middle of a pass ---------------------------------


def test_drill_database_connections_cut_mid_pass_the_next_pass_and_request_recover(
    kube, workers, broker, watch, holder
):
    """We may not restart the shared PostgreSQL, and a restart is, for the portal, exactly this: every server
    process behind its connections ends (a restart's "terminating connection due to administrator command" is what
    pg_terminate_backend sends), open transactions are rolled back, and the next query on each old connection fails.
    So the drill ends the portal's backends from a second connection while a pass is inside its transaction, and
    shows that nothing half-written remains and that the next pass (on the same worker) and the next request (on the
    same connection, thanks to CONN_HEALTH_CHECKS) reconnect by themselves."""
    ImageRuleFactory()
    nodes = lab(2)
    jobs = queued_jobs(2)
    row = hold_gpu_row(holder, nodes[1].gpus.get())
    worker = workers()
    broker.send_task("jobs.tasks.schedule_pass", queue=worker.queue)
    (inside,) = wait_for(lambda: lock_waiters(watch))
    ended = watch.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> ALL(%s)",
        [[watch.info.backend_pid, holder.info.backend_pid, connection.connection.info.backend_pid]],
    ).fetchall()
    assert ended and all(ok for (ok,) in ended)
    wait_for(lambda: not backend_alive(watch, inside))
    row.release()
    assert not Allocation.objects.exists() and set(Job.objects.values_list("state", flat=True)) == {JobState.QUEUED}
    wait_for(lambda: "OperationalError" in worker.output() or "AdminShutdown" in worker.output())

    broker.send_task("jobs.tasks.schedule_pass", queue=worker.queue)  # beat's next tick, on the same worker
    wait_for(lambda: len(created_in_cluster(kube)) == 2, timeout=90)
    assert worker.process.poll() is None
    assert_each_placed_once(jobs, placed=2)

    # A request on a connection whose server went away: the health check at its first query reconnects.
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=jobs[0].owner)}")
    watch.execute("SELECT pg_terminate_backend(%s)", [connection.connection.info.backend_pid])
    request_started.send(sender=__name__)  # what the handler sends before each request (the test client does not)
    answer = client.get(f"/api/v1/jobs/{jobs[0].pk}/")
    assert answer.status_code == 200 and answer.json()["status"] in ("starting", "running")
    assert settings.DATABASES["default"]["CONN_HEALTH_CHECKS"] is True
    assert ledger_violations() == []


def test_drill_redis_restarted_the_live_gpu_view_comes_back_fresh(redis_server, settings):
    """The channel layer and the latest-state store live in Redis. After a restart (groups and state gone) the
    collector keeps ticking, each server's hub joins its group again, and a browser that saw a gap in the sequence
    asks for a snapshot (as static/js/gpus.js does): its view ends up fresh, every GPU at its latest reading."""
    import asyncio

    from asgiref.sync import async_to_sync

    from labs.inventory import demo_specs
    from labs.services import inventory_sync
    from labs.telemetry.collector import Collector
    from labs.telemetry.fanout import get_hub
    from labs.telemetry.health import HealthWatch
    from tests.labs.telemetry.test_collector import ScriptedSource, reading
    from tests.labs.telemetry.test_websocket import connect, token_headers

    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_server.url}
    }
    layer = settings.CHANNEL_LAYERS["default"]
    settings.CHANNEL_LAYERS = {
        "default": {
            **layer,
            "CONFIG": {**layer["CONFIG"], "hosts": [{"address": redis_server.url, "socket_timeout": None}]},
        }
    }
    settings.TELEMETRY_COLLECTOR = "process"
    inventory_sync(specs=demo_specs(4), source="demo")
    names = ["gpu01", "gpu02", "gpu03", "gpu04"]
    headers = token_headers(UserFactory(username="drill-admin", role="admin"))
    source = ScriptedSource()
    collector = Collector(source=source, interval_s=1, stale_after_s=30, health=HealthWatch(hold_s=0))
    t0 = time.time()

    async def tick(n: int) -> None:
        source.samples = [reading(name, at=t0 + n, util=float(n % 100)) for name in names]
        await collector.tick(now=t0 + n)

    async def scenario():
        view: dict[str, dict] = {}
        seen = {"resyncs": 0, "gap": False}  # ticks sent before the hub rejoined its group are lost: a gap

        def take(message):
            if message["type"] == "snapshot":
                view.clear()
            for gpu in message["gpus"]:
                view.setdefault(gpu["node"], {}).update(gpu)
            return message["seq"]

        await tick(1)
        socket, connected = await connect(headers)
        assert connected
        seq = take(await socket.receive_json_from(timeout=10))
        await tick(2)
        seq = take(await socket.receive_json_from(timeout=10))
        assert view["gpu01"]["util_pct"] == 2

        await asyncio.to_thread(redis_server.kill)
        await asyncio.to_thread(redis_server.start)  # same port, nothing in it

        n, deadline = 3, time.monotonic() + 90
        while time.monotonic() < deadline:
            # As the collector's loop does: a tick that fails (Redis refusing old connections) is tried again.
            with contextlib.suppress(Exception):
                await tick(n)
            if await socket.receive_nothing(timeout=0.5):  # (a time-out in receive_output would end the app)
                n += 1
                continue
            message = await socket.receive_json_from(timeout=10)
            if message["type"] == "update" and message["seq"] != seq + 1:
                seen["gap"] = True
                await socket.send_to(text_data='{"type": "resync"}')
                message = await socket.receive_json_from(timeout=10)
                assert message["type"] == "snapshot"
                seen["resyncs"] += 1
            seq = take(message)
            if all(view.get(name, {}).get("util_pct") == n % 100 for name in names):
                break
            n += 1
        await socket.disconnect()
        await get_hub().stop()
        return view, n, seen

    view, last, seen = async_to_sync(scenario)()
    assert sorted(view) == names
    assert all(gpu["util_pct"] == last % 100 and gpu["stale"] is False for gpu in view.values()), view
    assert last > 3 and seen["gap"] and seen["resyncs"] >= 1  # ticks went out while the hub was away; it resynced
