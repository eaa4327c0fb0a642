"""The maintenance tick as a Celery task, beside the reservation tick and at its interval (RESERVATION_TICK_S)."""

import dataclasses
import logging

from celery import shared_task

from labs.maintenance.tick import maintenance_tick as maintenance_tick_service

log = logging.getLogger(__name__)


@shared_task(name="labs.tasks.maintenance_tick")
def maintenance_tick() -> str:
    """Tell people ahead of maintenance, drain and cordon its nodes at its start, restore them at its end (safe to run
    twice or late)."""
    report = maintenance_tick_service()
    log.log(logging.INFO if any(dataclasses.astuple(report)) else logging.DEBUG, "maintenance tick: %s", report)
    return str(report)
