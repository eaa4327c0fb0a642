"""Right after work ends (labs.signals.holders_closed), check the budgets of its people and courses.

With a worker the check goes to Celery by name (`labs.tasks.budgets_check`); with tasks run in-process (the run
command, tests) it runs here, after the commit that closed the entries.
"""

from __future__ import annotations

import logging

from celery import current_app
from django.conf import settings

from labs.budgets.alerts import budgets_check

log = logging.getLogger(__name__)
BUDGETS_CHECK = "labs.tasks.budgets_check"


def on_holders_closed(sender, *, user_ids: list[int], course_ids: list[int], **kwargs) -> None:
    if not settings.BUDGETS_CHECK_ON_END:
        return
    if settings.CELERY_TASK_ALWAYS_EAGER:
        try:
            budgets_check(user_ids=user_ids, course_ids=course_ids)
        except Exception:  # the work ended all the same; beat's next check tells
            log.exception("budget check after work ended failed")
        return
    current_app.send_task(BUDGETS_CHECK, kwargs={"user_ids": user_ids, "course_ids": course_ids})
