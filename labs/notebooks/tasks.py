"""The notebook pass as Celery tasks: one pass at a time, and the periodic one (beat, every NOTEBOOKS_TICK_S).

Their names stay `labs.tasks.notebooks_pass` and `labs.tasks.notebooks_tick`: the beat schedule and messages already
queued name them (labs.notebooks.enqueue sends the first by that name).
"""

import logging

from celery import shared_task
from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, connection

from labs.notebooks.passes import notebooks_pass as run_pass

log = logging.getLogger(__name__)

PASS_LOCK = "notebooks:pass-lock"
PASS_AGAIN = "notebooks:pass-again"
FOLLOW_UP = "notebooks:follow-up"
# On PostgreSQL the pass lock is a session advisory lock (any constant no other part of the portal uses): it goes
# with the connection, so a worker killed inside a pass frees it at once. The cache lock it replaced outlived a killed
# worker by its 150 s time-out, and the redelivered pass gave up on seeing it.
NOTEBOOKS_PASS_LOCK_KEY = 0x6E627073  # "nbps"


def _take_pass_lock() -> bool:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [NOTEBOOKS_PASS_LOCK_KEY])
            return bool(cursor.fetchone()[0])
    return cache.add(PASS_LOCK, 1, timeout=150)


def _release_pass_lock() -> None:
    if connection.vendor != "postgresql":
        cache.delete(PASS_LOCK)
        return
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [NOTEBOOKS_PASS_LOCK_KEY])
    except DatabaseError:
        log.warning("notebooks pass: could not release its lock; it goes with the connection", exc_info=True)


@shared_task(name="labs.tasks.notebooks_pass", soft_time_limit=120, time_limit=150)
def notebooks_pass(upkeep: bool = False) -> str:
    """Move the notebook queue and follow the hub. One pass at a time; a kick during a pass makes it go round again."""
    if not _take_pass_lock():
        cache.set(PASS_AGAIN, 1, timeout=150)
        return "another pass is running; it goes round again"
    try:
        reports = []
        for _round in range(20):
            cache.delete(PASS_AGAIN)
            report = run_pass(upkeep=upkeep)
            reports.append(str(report))
            upkeep = False
            if not cache.get(PASS_AGAIN):
                break
    finally:
        _release_pass_lock()
    # Spawns under way: look again in a second rather than at the next tick (a worker only; in-process runs tick).
    if report.starting and not settings.CELERY_TASK_ALWAYS_EAGER and cache.add(FOLLOW_UP, 1, timeout=1):
        notebooks_pass.apply_async((False,), countdown=1)
    log.debug("notebooks pass: %s", reports)
    return "; ".join(reports)


@shared_task(name="labs.tasks.notebooks_tick")
def notebooks_tick() -> str:
    """The periodic pass (beat): also looks after running notebooks (idle, session length, weekly quota), and warms
    the lab before class (pre-pulls, placeholders: labs/notebooks/prewarm.py)."""
    from labs.notebooks.prewarm import prewarm_pass

    try:
        prewarm_pass()
    except Exception:  # never keeps the pass from running
        log.exception("prewarm pass failed")
    return notebooks_pass(True)
