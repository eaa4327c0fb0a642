"""Celery: the broker, how tasks run, and the beat schedule, built here in one place from the intervals the other
modules define (`manage.py run_periodic` runs the same schedule in-process for the embedded setup)."""

from __future__ import annotations

from celery.schedules import crontab

from accounts.env import envbool, envint
from portal.settings.data import REDIS_URL
from portal.settings.jobs import JOBS_FOLLOW_INTERVAL_S, JOBS_SCHEDULE_INTERVAL_S, JOBS_STORAGE_MEASURE_S
from portal.settings.lab import INVENTORY_BACKEND, INVENTORY_SYNC_INTERVAL_S, RECONCILE_INTERVAL_S, RESERVATION_TICK_S
from portal.settings.notebooks import COURSEWORK_TICK_S, NOTEBOOKS_TICK_S
from portal.settings.people import REQUESTS_SWEEP_S
from portal.settings.signin import LDAP_SERVER_URI, SIGNIN_SYNC_HOUR
from portal.settings.usage import BUDGETS_CHECK_INTERVAL_S, USAGE_EFFICIENCY_REFRESH_S, USAGE_REPORT_CHECK_S

# --- Celery ----------------------------------------------------------------------------

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
# Without a broker, tasks run in-process through the same code path as on a worker.
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", default=not REDIS_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = envint("CELERY_TASK_TIME_LIMIT", 300, minimum=10)
CELERY_TASK_SOFT_TIME_LIMIT = envint("CELERY_TASK_SOFT_TIME_LIMIT", 240, minimum=5)
# A worker killed outright (the OOM killer, a node crash) leaves its task unacknowledged in Redis; the next worker to
# start (or a running one's sweep) gives it back after this many seconds. It must exceed the longest task with its
# countdown (the task limits are 300 s), or a slow task would run twice.
BROKER_VISIBILITY_TIMEOUT_S = envint("CELERY_VISIBILITY_TIMEOUT_S", 3600, minimum=1)
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": BROKER_VISIBILITY_TIMEOUT_S}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = "UTC"

# --- The beat schedule -----------------------------------------------------------------
# Task names are an API (jobs/enqueue.py): they never change. Intervals in seconds, from the module named beside each.


def _every(task: str, seconds: int) -> dict:
    return {"task": task, "schedule": float(seconds)}


CELERY_BEAT_SCHEDULE = {
    "reservations-tick": _every("labs.tasks.reservations_tick", RESERVATION_TICK_S),  # lab.py
    "maintenance-tick": _every("labs.tasks.maintenance_tick", RESERVATION_TICK_S),  # lab.py (the same tick)
    # The cluster's nodes, with the kubernetes inventory only (lab.py).
    **(
        {"inventory-sync": _every("labs.tasks.inventory_sync", INVENTORY_SYNC_INTERVAL_S)}
        if INVENTORY_BACKEND == "kubernetes"
        else {}
    ),
    "jobs-schedule": _every("jobs.tasks.schedule_pass", JOBS_SCHEDULE_INTERVAL_S),  # jobs.py
    "jobs-follow": _every("jobs.tasks.follow", JOBS_FOLLOW_INTERVAL_S),  # jobs.py
    "jobs-storage-measure": _every("jobs.tasks.storage_measure", JOBS_STORAGE_MEASURE_S),  # jobs.py
    "reconcile": _every("labs.tasks.reconcile", RECONCILE_INTERVAL_S),  # lab.py
    # The nightly LDAP sync at SIGNIN_SYNC_HOUR:15 (UTC), with LDAP only (signin.py).
    **(
        {"signin-sync": {"task": "accounts.tasks.signin_sync", "schedule": crontab(hour=SIGNIN_SYNC_HOUR, minute=15)}}
        if LDAP_SERVER_URI
        else {}
    ),
    "notebooks-tick": _every("labs.tasks.notebooks_tick", NOTEBOOKS_TICK_S),  # notebooks.py
    "coursework-tick": _every("labs.tasks.coursework_tick", COURSEWORK_TICK_S),  # notebooks.py
    "usage-efficiency-refresh": _every("labs.tasks.usage_efficiency_refresh", USAGE_EFFICIENCY_REFRESH_S),  # usage.py
    "budgets-check": _every("labs.tasks.budgets_check", BUDGETS_CHECK_INTERVAL_S),  # usage.py
    "usage-weekly-report": _every("labs.tasks.usage_weekly_report", USAGE_REPORT_CHECK_S),  # usage.py
    # Overrides from requests for more end (warned a day before); old audit entries go (people.py).
    "requests-expire": _every("accounts.tasks.more_requests_expire", REQUESTS_SWEEP_S),
    "audit-prune": _every("accounts.tasks.audit_prune", REQUESTS_SWEEP_S),
    "notify-sweep": _every("accounts.tasks.notify_sweep", 60),  # notify.py
    "usage-efficiency-summary": _every("labs.tasks.usage_efficiency_summary", USAGE_REPORT_CHECK_S),  # usage.py
}
