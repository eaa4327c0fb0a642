"""The course-work tick (beat, every COURSEWORK_TICK_S): release what is due, collect what is past its deadline."""

import logging

from celery import shared_task

log = logging.getLogger(__name__)


@shared_task(name="labs.tasks.coursework_tick", soft_time_limit=600, time_limit=660)
def coursework_tick() -> str:
    from labs.coursework.services import coursework_tick as tick

    report = tick()
    log.info("coursework tick: %s", report)
    return str(report)
