"""Queue waits by kind of work, for the lab's "utilisation and queue wait over time": each capability that queues work
tells how long its work waited, and the usage pages read them all here (labs may not import jobs, so jobs register
theirs: jobs/apps.py).

A source is `fn(start, until) -> iterable of (asked_at, got_at)`: work asked for in [start, until) that got its GPUs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable

WaitSource = Callable[[dt.datetime, dt.datetime], Iterable[tuple[dt.datetime, dt.datetime]]]

_SOURCES: dict[str, WaitSource] = {}


def queue_wait_register(kind: str, source: WaitSource) -> None:
    """Add (or replace) the source of `kind`'s queue waits ("notebook", "job")."""
    _SOURCES[kind] = source


def queue_wait_kinds() -> list[str]:
    return sorted(_SOURCES)


def queue_waits_between(kind: str, start: dt.datetime, until: dt.datetime) -> Iterable[tuple[dt.datetime, dt.datetime]]:
    return _SOURCES[kind](start, until)


def _notebook_waits(start: dt.datetime, until: dt.datetime):
    from labs.models import NotebookSession

    return (
        NotebookSession.objects.filter(requested_at__gte=start, requested_at__lt=until, ready_at__isnull=False)
        .values_list("requested_at", "ready_at")
        .iterator(chunk_size=2000)
    )


queue_wait_register("notebook", _notebook_waits)
