"""The one place that sends the job queue's Celery tasks: services call these, never `jobs.tasks` itself.

The names are the tasks' registered names (jobs/tasks.py declares them with these; in-flight messages and the
beat schedule in portal/settings/workers.py name them too, so they never change). A task is looked up by name in the
With a worker (not CELERY_TASK_ALWAYS_EAGER) a task goes by name (`send_task`): the web process need not import the
task modules, and two requests at once cannot race on that import (one saw `NotRegistered` while the other was
half-way through it). Eager (the tests, the embedded run) it is looked up in the Celery app's registry and run
in-process with `apply_async`, where `send_task` would ignore that setting; the task modules are imported once,
under a lock, as a worker does at start, through Celery's autodiscovery.

Most sends wait for the commit of the transaction that decided them (`*_after_commit`): the worker must see the
rows the service wrote, and a rolled-back decision sends nothing.
"""

from __future__ import annotations

import threading
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction

SCHEDULE_PASS = "jobs.tasks.schedule_pass"
DISPATCH = "jobs.tasks.dispatch"
STOP = "jobs.tasks.stop"
FOLLOW = "jobs.tasks.follow"


_IMPORTING = threading.Lock()


def _task(name: str) -> Any:
    if name not in current_app.tasks:
        with _IMPORTING:  # one thread imports; the others wait for the whole module, never a half-made one
            if name not in current_app.tasks:
                current_app.loader.import_default_modules()  # every app's tasks module, as a starting worker does
    return current_app.tasks[name]


def send(name: str, *args: Any) -> None:
    """Send the task now (eager settings: run it now)."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        _task(name).apply_async(args=args)
    else:
        current_app.send_task(name, args=args)


def send_after_commit(name: str, *args: Any) -> None:
    """Send the task once the current transaction commits (at once outside one); nothing if it rolls back."""
    transaction.on_commit(lambda: send(name, *args))


def schedule_pass_after_commit() -> None:
    """GPUs came free or the queue changed: run a scheduling pass once this commits."""
    send_after_commit(SCHEDULE_PASS)


def dispatch_after_commit(job_id: int, attempt: int) -> None:
    """Start the placed attempt in the backend once its placement is committed."""
    send_after_commit(DISPATCH, job_id, attempt)


def stop_after_commit(job_id: int, attempt: int, grace_s: int) -> None:
    """Stop the attempt in the backend (SIGTERM, `grace_s`, SIGKILL) once the stop request is committed."""
    send_after_commit(STOP, job_id, attempt, grace_s)


def dispatch_again(job_id: int, attempt: int) -> None:
    """The follower found a dispatch lost: send it again now (the follower writes nothing it must wait for)."""
    send(DISPATCH, job_id, attempt)


def stop_again(job_id: int, attempt: int) -> None:
    """The follower found a stop overdue: ask again now, with no grace left."""
    send(STOP, job_id, attempt, 0)
