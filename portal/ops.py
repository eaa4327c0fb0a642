"""Operations endpoints: liveness, readiness, Prometheus metrics."""

from __future__ import annotations

import hmac
import logging

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Gauge, generate_latest

log = logging.getLogger(__name__)


@never_cache
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
    return registry


@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    if settings.METRICS_TOKEN:
        supplied = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(supplied, settings.METRICS_TOKEN):
            return HttpResponse("metrics need the bearer token\n", status=401, content_type="text/plain")
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)
