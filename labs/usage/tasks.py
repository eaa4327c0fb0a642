"""Usage's periodic task: refresh the efficiency rows of running holders and of holders that ended without one.

Its name stays `labs.tasks.usage_efficiency_refresh`: the beat schedule (portal/settings/workers.py) names it."""

from celery import shared_task

from labs.usage.efficiency import efficiency_refresh


@shared_task(name="labs.tasks.usage_efficiency_refresh", ignore_result=True)
def usage_efficiency_refresh() -> int:
    return efficiency_refresh()


@shared_task(name="labs.tasks.usage_efficiency_summary", ignore_result=True)
def usage_efficiency_summary() -> dict[str, int]:
    """Each person's weekly efficiency summary (labs.usage.summary), once per week."""
    from labs.usage.summary import efficiency_summaries_send

    return efficiency_summaries_send()
