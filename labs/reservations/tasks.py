"""The reservation tick as a Celery task (beat runs it every RESERVATION_TICK_S).

Its name stays `labs.tasks.reservations_tick`: the beat schedule and messages already queued name it.
"""

import dataclasses
import logging

from celery import shared_task

from labs.reservations.tick import reservations_tick as reservations_tick_service

log = logging.getLogger(__name__)


@shared_task(name="labs.tasks.reservations_tick")
def reservations_tick() -> str:
    """Warn ahead of reservations, start and end them, release no-shows (safe to run twice or late)."""
    report = reservations_tick_service()
    moved = any(dataclasses.astuple(report))
    log.log(logging.INFO if moved else logging.DEBUG, "reservations tick: %s", report)
    return str(report)
