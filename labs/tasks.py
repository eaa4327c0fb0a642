import logging

from celery import shared_task

from accounts.errors import BackendError
from labs.backends.inventory import get_inventory_backend
from labs.services import inventory_sync as inventory_sync_service

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
