import logging

from celery import shared_task

from labs.backends.inventory import get_inventory_backend
from labs.services import inventory_sync as inventory_sync_service
from portal.errors import BackendError

log = logging.getLogger(__name__)


@shared_task(bind=True, max_retries=3, default_retry_delay=15)
def inventory_sync(self) -> str:
    """Bring the node inventory in line with its source; safe to run any number of times."""
    backend = get_inventory_backend()
    try:
        specs = backend.list_nodes()
    except BackendError as exc:
        if exc.retryable:
            raise self.retry(exc=exc) from exc
        log.error("inventory sync failed: %s", exc)
        raise
    report = inventory_sync_service(specs=specs, source=backend.name, prune=backend.name == "kubernetes")
    log.info("inventory sync: %s", report)
    return str(report)


@shared_task(soft_time_limit=300, time_limit=360)
def reconcile() -> str:
    """Heal drift between the ledger, jobs, notebooks and the backends (beat, every RECONCILE_INTERVAL_S)."""
    from labs.reconcile import reconcile as run

    report = run()
    log.info("reconcile: %s", report)
    return str(report)


# --- Notebooks

PASS_LOCK = "notebooks:pass-lock"
PASS_AGAIN = "notebooks:pass-again"
FOLLOW_UP = "notebooks:follow-up"
# On PostgreSQL the pass lock is a session advisory lock (any constant no other part of the portal uses): it goes
# with the connection, so a worker killed inside a pass frees it at once. The cache lock it replaced outlived a killed
# worker by its 150 s time-out, and the redelivered pass gave up on seeing it.
NOTEBOOKS_PASS_LOCK_KEY = 0x6E627073  # "nbps"


def _take_pass_lock() -> bool:
    from django.core.cache import cache
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [NOTEBOOKS_PASS_LOCK_KEY])
            return bool(cursor.fetchone()[0])
    return cache.add(PASS_LOCK, 1, timeout=150)


def _release_pass_lock() -> None:
    from django.core.cache import cache
    from django.db import DatabaseError, connection

    if connection.vendor != "postgresql":
        cache.delete(PASS_LOCK)
        return
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [NOTEBOOKS_PASS_LOCK_KEY])
    except DatabaseError:
        log.warning("notebooks pass: could not release its lock; it goes with the connection", exc_info=True)


@shared_task(soft_time_limit=120, time_limit=150)
def notebooks_pass(upkeep: bool = False) -> str:
    """Move the notebook queue and follow the hub. One pass at a time; a kick during a pass makes it go round again."""
    from django.conf import settings
    from django.core.cache import cache

    from labs.notebooks.services import notebooks_pass as run_pass

    if not _take_pass_lock():
        cache.set(PASS_AGAIN, 1, timeout=150)
        return "another pass is running; it goes round again"
    try:
        reports = []
        for _round in range(20):
            cache.delete(PASS_AGAIN)
            report = run_pass(upkeep=upkeep)
            reports.append(str(report))
            upkeep = False
            if not cache.get(PASS_AGAIN):
                break
    finally:
        _release_pass_lock()
    # Spawns under way: look again in a second rather than at the next tick (a worker only; in-process runs tick).
    if report.starting and not settings.CELERY_TASK_ALWAYS_EAGER and cache.add(FOLLOW_UP, 1, timeout=1):
        notebooks_pass.apply_async((False,), countdown=1)
    log.debug("notebooks pass: %s", reports)
    return "; ".join(reports)


@shared_task
def notebooks_tick() -> str:
    """The periodic pass (beat): also looks after running notebooks (idle, session length, weekly quota)."""
    return notebooks_pass(True)
