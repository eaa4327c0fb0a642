"""The reservation tick as a Celery task (beat runs it every RESERVATION_TICK_S).

Its name stays `labs.tasks.reservations_tick`: the beat schedule and messages already queued name it.
"""

import dataclasses
import logging

from celery import shared_task

from labs.maintenance.tick import maintenance_tick
from labs.reservations.tick import reservations_tick as reservations_tick_service

log = logging.getLogger(__name__)


@shared_task(name="labs.tasks.reservations_tick")
def reservations_tick() -> str:
    """Warn ahead of reservations, start and end them, release no-shows, move maintenance windows along (safe to
    run twice or late)."""
    report = reservations_tick_service()
    moved = any(dataclasses.astuple(report))
    log.log(logging.INFO if moved else logging.DEBUG, "reservations tick: %s", report)
    # Maintenance windows ride the same tick: announced ahead, drained and cordoned at the start, restored at the end.
    maintenance = maintenance_tick()
    if any(dataclasses.astuple(maintenance)):
        log.info("maintenance tick: %s", maintenance)
    return str(report)
