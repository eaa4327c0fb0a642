"""Usage's periodic task: refresh the efficiency rows of running holders and of holders that ended without one.

Its name stays `labs.tasks.usage_efficiency_refresh`: the beat schedule (portal/settings/workers.py) names it."""

from celery import shared_task

from labs.usage.efficiency import efficiency_refresh


@shared_task(name="labs.tasks.usage_efficiency_refresh", ignore_result=True)
def usage_efficiency_refresh() -> int:
    return efficiency_refresh()
