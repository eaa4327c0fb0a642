"""Operations endpoints: liveness, readiness, Prometheus metrics (composed of each app's own, see METRICS)."""

from __future__ import annotations

import hmac
import logging

from django.conf import settings
from django.core import checks
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Gauge, generate_latest

from accounts import metrics as accounts_metrics
from jobs import metrics as jobs_metrics
from labs import metrics as labs_metrics
from portal import netcheck

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
    # Reported, never failed on: every web pod shares the cluster's network, so failing readiness over it would take
    # the whole portal down for a setting no restart changes (portal/netcheck.py).
    policies = netcheck.verdict()
    body["checks"]["netpolicy"] = policies.state
    body["details"] = {"netpolicy": policies.detail}
    if failed:
        log.warning("readyz failing: %s", failed)
    return JsonResponse(body, status=200 if not failed else 503)


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


def _register_celery_queues(registry: CollectorRegistry) -> None:
    queues = Gauge("portal_celery_queue_length", "Tasks waiting in a Celery queue.", ["queue"], registry=registry)
    for queue, length in _celery_queue_lengths().items():
        queues.labels(queue=queue).set(length)


# Each app says its own figures; the scrape is their sum, in this order. Read at scrape time from the database,
# so every web process answers the same.
METRICS = (
    accounts_metrics.register_metrics,
    labs_metrics.register_metrics,
    _register_celery_queues,
    jobs_metrics.register_metrics,
)


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry()
    for register in METRICS:
        register(registry)
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
