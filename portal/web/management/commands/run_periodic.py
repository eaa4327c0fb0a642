"""Run Celery beat's schedule in this process: the embedded setup's in-process worker.

With Redis, `celery beat` and `celery worker` do this; without it (the run command), this loop
calls the same tasks through the same code path, one after another, at their intervals.
"""

from __future__ import annotations

import logging
import signal
import time

from django.conf import settings
from django.core.management.base import BaseCommand

log = logging.getLogger("portal.periodic")


class Command(BaseCommand):
    help = "Run the periodic tasks (CELERY_BEAT_SCHEDULE) in this process, for the embedded setup."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="Run every periodic task once, then stop.")

    def handle(self, *args, once: bool = False, **options):
        from portal.celery import app

        app.loader.import_default_modules()
        schedule = {name: entry for name, entry in settings.CELERY_BEAT_SCHEDULE.items()}
        stopping = False

        def stop(*_args):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        due = dict.fromkeys(schedule, time.monotonic())
        # Celery logs every task it runs ("Task ... succeeded in 0.01s"): at the embedded run's pace (the notebook
        # queue every 2 s) that buries the portal's address in the console. The tasks say what they changed.
        logging.getLogger("celery.app.trace").setLevel(logging.WARNING)
        while not stopping:
            for name, entry in schedule.items():
                if time.monotonic() < due[name]:
                    continue
                try:
                    result = app.tasks[entry["task"]].apply()
                    if result.failed():
                        log.error("periodic task %s failed: %s", name, result.result)
                    elif once:
                        self.stdout.write(f"{name}: {result.result}")
                except Exception:  # one failing task must not stop the others
                    log.exception("periodic task %s crashed", name)
                due[name] = time.monotonic() + _seconds_to_next(entry["schedule"])
            if once:
                return
            time.sleep(max(0.2, min(due.values()) - time.monotonic()))


def _seconds_to_next(schedule) -> float:
    """An interval in seconds, or a crontab's time to its next run (the nightly sign-in sync)."""
    if isinstance(schedule, int | float):
        return float(schedule)
    from django.utils import timezone

    return max(1.0, schedule.remaining_estimate(timezone.now()).total_seconds())
