"""The budgets' Celery tasks (beat runs both): the alert check and the weekly usage report.

Their names are `labs.tasks.…` like the lab's other periodic tasks; each is safe to run twice or at once on two
workers (the rows they claim are unique per budget, period and threshold, and per person and week).
"""

import logging

from celery import shared_task

from labs.budgets.alerts import budgets_check as budgets_check_service
from labs.budgets.report import usage_weekly_report as usage_weekly_report_service

log = logging.getLogger(__name__)


@shared_task(name="labs.tasks.budgets_check")
def budgets_check(user_ids: list[int] | None = None, course_ids: list[int] | None = None) -> str:
    """Tell budget thresholds crossed (all budgets, or those of these people and courses after their work ended)."""
    report = budgets_check_service(user_ids=user_ids or (), course_ids=course_ids or ())
    log.info("budgets check: %s", report)
    return str(report)


@shared_task(name="labs.tasks.usage_weekly_report")
def usage_weekly_report() -> str:
    """Send last week's usage summary to the teachers and admins who have not had it."""
    report = usage_weekly_report_service()
    log.info("weekly usage report: %s", report)
    return str(report)
