"""Operations endpoints: liveness, readiness, Prometheus metrics."""

from __future__ import annotations

import hmac
import logging

from django.conf import settings
from django.core import checks
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, generate_latest

log = logging.getLogger(__name__)


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _check_database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        return f"database unreachable: {exc.__class__.__name__}"
    return None


def _check_redis() -> str | None:
    if not settings.REDIS_URL:
        return None
    import redis

    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:
        return f"redis unreachable: {exc.__class__.__name__}"
    return None


@never_cache
@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    checks = {"database": _check_database(), "redis": _check_redis()}
    failed = {name: problem for name, problem in checks.items() if problem}
    body = {
        "status": "ready" if not failed else "unavailable",
        "checks": {
            "database": checks["database"] or "ok",
            "redis": checks["redis"] or ("ok" if settings.REDIS_URL else "not configured"),
        },
    }
    if failed:
        log.warning("readyz failing: %s", failed)
    return JsonResponse(body, status=200 if not failed else 503)


def _registry() -> CollectorRegistry:
    # Read the numbers at scrape time from the database, so every web process answers the same.
    from labs.models import AllocationKind, NodeStatus
    from labs.selectors import lab_summary, open_allocations_by_kind
    from portal.accounts.selectors import people_by_role

    registry = CollectorRegistry()
    users = Gauge("portal_users", "People with an active account, by role.", ["role"], registry=registry)
    for role, count in people_by_role().items():
        users.labels(role=role).set(count)
    nodes = Gauge("portal_nodes", "Nodes of the lab, by status.", ["status"], registry=registry)
    summary = lab_summary()
    for status in NodeStatus.values:
        nodes.labels(status=status).set(summary[status])
    held = Gauge("portal_allocations_open", "Ledger entries still holding a GPU, by kind.", ["kind"], registry=registry)
    by_kind = open_allocations_by_kind()
    for kind in AllocationKind.values:
        held.labels(kind=kind).set(by_kind.get(kind, 0))
    _lab_activity(registry)
    return registry


METRICS_CLOSED = "/metrics is closed: set METRICS_TOKEN and scrape with Authorization: Bearer <token>.\n"


@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    if settings.METRICS_TOKEN:
        supplied = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(supplied.encode(), settings.METRICS_TOKEN.encode()):
            return HttpResponse(
                "metrics need the bearer token\n",
                status=401,
                content_type="text/plain",
                headers={"WWW-Authenticate": 'Bearer realm="metrics"'},
            )
    elif not settings.DEBUG:
        # The numbers say who uses the lab and how busy it is: not for anyone who can reach the port.
        return HttpResponse(METRICS_CLOSED, status=403, content_type="text/plain")
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)


def check_metrics_token(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Deploy check: without METRICS_TOKEN, /metrics answers 403 outside DEBUG and Prometheus reads nothing."""
    if settings.METRICS_TOKEN:
        return []
    return [
        checks.Warning(
            "METRICS_TOKEN is not set: /metrics answers 403 to everyone.",
            hint="Set METRICS_TOKEN and give Prometheus the same value as its bearer token.",
            id="portal.W001",
        )
    ]


# --- Telemetry: live GPUs, alerts, running work, queues ------------------------------------


def _celery_queue_lengths() -> dict[str, int]:
    """Tasks waiting in each Celery queue on the Redis broker (a Redis list per queue)."""
    if not settings.REDIS_URL:
        return {}
    import redis

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_connect_timeout=2, socket_timeout=2)
    try:
        return {queue: int(client.llen(queue)) for queue in settings.PORTAL_METRICS_QUEUES}
    except redis.RedisError as exc:
        log.warning("metrics: could not read the Celery queues: %s", exc.__class__.__name__)
        return {}
    finally:
        client.close()


def _lab_activity(registry: CollectorRegistry) -> None:
    from labs.telemetry.selectors import telemetry_summary

    summary = telemetry_summary()
    gpus = Gauge("portal_gpus", "GPUs by live state (stale: no sample lately).", ["state"], registry=registry)
    for state, count in summary["gpus"].items():
        gpus.labels(state=state).set(count)
    alerts = Gauge("portal_gpu_alerts_open", "Open GPU health alerts, by kind.", ["kind"], registry=registry)
    for kind, count in summary["alerts"].items():
        alerts.labels(kind=kind).set(count)
    running = Gauge("portal_running", "Notebooks and jobs holding GPUs now.", ["kind"], registry=registry)
    for kind, count in summary["running"].items():
        running.labels(kind=kind).set(count)
    age = Gauge(
        "portal_telemetry_tick_age_seconds",
        "Seconds since the telemetry collector last stored a tick.",
        registry=registry,
    )
    age.set(summary["tick_age_s"] if summary["tick_age_s"] is not None else float("nan"))
    dropped = Counter(
        "portal_telemetry_samples_dropped", "GPU samples dropped as impossible or unknown.", registry=registry
    )
    dropped.inc(summary["dropped_total"])
    queues = Gauge("portal_celery_queue_length", "Tasks waiting in a Celery queue.", ["queue"], registry=registry)
    for queue, length in _celery_queue_lengths().items():
        queues.labels(queue=queue).set(length)
    _job_queue(registry)


def _job_queue(registry: CollectorRegistry) -> None:
    """Training jobs by state, and how long the queue makes people wait."""
    import datetime as dt

    from django.db.models import Count, Min
    from django.utils import timezone

    from jobs.models import Job, JobState

    now = timezone.now()
    jobs = Gauge("portal_jobs", "Training jobs by state.", ["state"], registry=registry)
    by_state = dict(Job.objects.values_list("state").annotate(n=Count("id")).order_by())
    for state in JobState.values:
        jobs.labels(state=state).set(by_state.get(state, 0))
    waits = Gauge(
        "portal_job_queue_wait_seconds",
        "Queue waits: the oldest job still queued, and the mean wait of attempts that started in the last hour.",
        ["stat"],
        registry=registry,
    )
    oldest = Job.objects.filter(state=JobState.QUEUED).aggregate(at=Min("queued_since"))["at"]
    waits.labels(stat="oldest_queued").set((now - oldest).total_seconds() if oldest else 0)
    started = Job.objects.filter(started_at__gte=now - dt.timedelta(hours=1)).values_list("queued_since", "started_at")
    seconds = [(started_at - queued).total_seconds() for queued, started_at in started]
    waits.labels(stat="mean_last_hour").set(sum(seconds) / len(seconds) if seconds else 0)
