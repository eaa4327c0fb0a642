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


@shared_task(soft_time_limit=120, time_limit=150)
def notebooks_pass(upkeep: bool = False) -> str:
    """Move the notebook queue and follow the hub. One pass at a time; a kick during a pass makes it go round again."""
    from django.conf import settings
    from django.core.cache import cache

    from labs.notebooks.services import notebooks_pass as run_pass

    if not cache.add(PASS_LOCK, 1, timeout=150):
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
        cache.delete(PASS_LOCK)
    # Spawns under way: look again in a second rather than at the next tick (a worker only; in-process runs tick).
    if report.starting and not settings.CELERY_TASK_ALWAYS_EAGER and cache.add(FOLLOW_UP, 1, timeout=1):
        notebooks_pass.apply_async((False,), countdown=1)
    log.debug("notebooks pass: %s", reports)
    return "; ".join(reports)


@shared_task
def notebooks_tick() -> str:
    """The periodic pass (beat): also looks after running notebooks (idle, session length, weekly quota)."""
    return notebooks_pass(True)
