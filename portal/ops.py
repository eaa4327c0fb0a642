"""Operations endpoints: liveness, readiness, Prometheus metrics."""

from __future__ import annotations

import hmac
import logging

from django.conf import settings
from django.db import connection
from django.db.models import Count
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
    from labs.models import Allocation, Node
    from portal.accounts.models import User

    registry = CollectorRegistry()
    users = Gauge("portal_users", "People with an account, by role.", ["role"], registry=registry)
    for row in User.objects.filter(is_active=True).values("role").annotate(n=Count("id")):
        users.labels(role=row["role"]).set(row["n"])
    nodes = Gauge("portal_nodes", "Nodes of the lab, by status.", ["status"], registry=registry)
    for status in ("ready", "cordoned", "down"):
        nodes.labels(status=status).set(0)
    for row in Node.objects.values("status").annotate(n=Count("id")):
        nodes.labels(status=row["status"]).set(row["n"])
    held = Gauge("portal_allocations_open", "Ledger entries still holding a GPU, by kind.", ["kind"], registry=registry)
    for kind in ("notebook", "job", "reservation"):
        held.labels(kind=kind).set(0)
    for row in Allocation.objects.filter(ends_at__isnull=True).values("kind").annotate(n=Count("id")):
        held.labels(kind=row["kind"]).set(row["n"])
    return registry


@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    if settings.METRICS_TOKEN:
        supplied = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(supplied, settings.METRICS_TOKEN):
            return HttpResponse("metrics need the bearer token\n", status=401, content_type="text/plain")
    return HttpResponse(generate_latest(_registry()), content_type=CONTENT_TYPE_LATEST)
