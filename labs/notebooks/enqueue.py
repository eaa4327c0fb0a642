"""The one module that knows the notebooks' Celery task names and sends them, after the commit that made the work.

Services never import tasks (labs.notebooks.tasks imports the services that would import it back): they call
`pass_soon()`. The names are the tasks' old dotted names (`labs.tasks.…`): the beat schedule and messages already
queued name them, so they never change.
"""

from __future__ import annotations

from celery import current_app
from django.conf import settings
from django.db import transaction

NOTEBOOKS_PASS = "labs.tasks.notebooks_pass"
NOTEBOOKS_TICK = "labs.tasks.notebooks_tick"


def pass_soon() -> None:
    """Run a notebook pass on a Celery worker once the current transaction commits (at once outside one).

    Without a worker (tasks run in-process, CELERY_TASK_ALWAYS_EAGER: the run command, the tests) nothing is sent:
    the pass would run inside the request that pressed Start, hub calls and all; there the periodic runner's next
    tick (NOTEBOOKS_TICK_S) takes it. With a worker the task goes by name, so the web process need not have imported
    the task module (Celery's autodiscovery imports it in workers only).
    """
    transaction.on_commit(_send_pass)


def _send_pass() -> None:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return
    current_app.send_task(NOTEBOOKS_PASS, args=[False])
