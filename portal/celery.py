"""The Celery app of workers and beat (`celery -A portal worker|beat`).

Celery sets Django up when it imports the task modules (its Django fix-up, on the import_modules signal) and runs
the system checks without looking at what they find; a worker or beat must refuse to start on a check error as the
web server does, so a receiver connected after the fix-up's raises it (Celery re-raises what those receivers
raise).
"""

import functools
import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
# There is no result backend (CELERY_RESULT_BACKEND = None): the disabled one serves every thread alike. Unless told
# so, Celery builds it again in each new thread, scanning every installed package's entry points; under ASGI each
# request runs in a thread of its own, so every request that queues a task (pressing Start, submitting a job) paid
# some 10 ms of CPU for it (bench_portal, issue 32). Not a CELERY_* setting: Celery reads it from its own conf only.
app.conf.result_backend_thread_safe = True
app.autodiscover_tasks()
# Capabilities inside an app keep their tasks in their own folder.
app.autodiscover_tasks(["labs.reservations"])
app.autodiscover_tasks(["labs.notebooks"])
app.autodiscover_tasks(["labs.budgets"])
app.autodiscover_tasks(["labs.usage"])
app.autodiscover_tasks(["labs.maintenance"])
app.autodiscover_tasks(["labs.coursework"])


@signals.import_modules.connect
def check_at_start(sender=None, **kwargs) -> None:
    """At a worker's or beat's start, after the fix-up's django.setup(): stop on any check error.

    Only there (the loader marks itself worker_initialized just before), and once: the task modules are imported
    again elsewhere too (jobs/enqueue.py, in web processes), where the checks have run at the start already."""
    if sender is app and app.loader.worker_initialized:
        _check_once()


@functools.cache
def _check_once() -> None:
    from portal.checks import refuse_to_start_misconfigured

    refuse_to_start_misconfigured()
