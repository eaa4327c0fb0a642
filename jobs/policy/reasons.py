"""Why a job waits: as data (Waiting, one per job still queued after a pass) and in a sentence its owner understands.

The policy's model imports this module, never the other way round: the words need only the facts they quote.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Callable
from typing import Literal

from jobs.policy.ids import JobId, ReservationId

TimeFormatter = Callable[[float], str]

WaitCode = Literal[
    "waiting",
    "starting",
    "quota_jobs",
    "quota_gpus_per_job",
    "quota_gpu_hours",
    "too_large",
    "reservation_pending",
    "reservation_over",
    "reservation_too_short",
    "reservation_not_allowed",
]


@dataclasses.dataclass(slots=True)
class Waiting:
    """Why a queued job did not start in this pass, as data; `sentence()` says it in words."""

    job_id: JobId
    position: int
    code: WaitCode
    total_gpus: int
    priority: float
    nodes: int = 1
    estimated_start: float | None = None
    # The numbers the sentence quotes: limits, counts, times, the reservation.
    limit: float | None = None
    used: float | None = None
    at: float | None = None
    reservation_id: ReservationId | None = None
    preempting: int = 0
    # The range the estimate is shown as (an estimate is a guess: it is never shown as one minute).
    estimated_earliest: float | None = None
    estimated_latest: float | None = None

    @property
    def jobs_ahead(self) -> int:
        return self.position - 1

    def sentence(self, format_time: TimeFormatter | None = None) -> str:
        return waiting_sentence(self, format_time or utc_clock)


def _plural(count: int | float, word: str) -> str:
    return f"{count:g} {word}" if count == 1 else f"{count:g} {word}s"


def _ahead(waiting: Waiting) -> str:
    if waiting.jobs_ahead == 0:
        return "first in line"
    return f"{_plural(waiting.jobs_ahead, 'job')} ahead of you"


def _gpus(waiting: Waiting) -> str:
    text = _plural(waiting.total_gpus, "GPU")
    return f"{text} on {waiting.nodes} nodes" if waiting.nodes > 1 else text


def waiting_sentence(waiting: Waiting, format_time: TimeFormatter) -> str:
    code = waiting.code
    if code == "waiting":
        if waiting.estimated_start is None:
            when = "no estimated start yet (the nodes it needs are not available)"
        else:
            earliest = format_time(waiting.estimated_earliest or waiting.estimated_start)
            latest = format_time(waiting.estimated_latest or waiting.estimated_start)
            when = f"estimated start {earliest}" if earliest == latest else f"estimated start {earliest}-{latest}"
        return f"waiting for {_gpus(waiting)}; {_ahead(waiting)}; {when}"
    if code == "starting":
        at = format_time(waiting.estimated_start) if waiting.estimated_start is not None else "soon"
        if waiting.preempting:
            stopped = _plural(waiting.preempting, "lower-priority job")
            verb = "is" if waiting.preempting == 1 else "are"
            return f"starting at about {at}: {stopped} {verb} being stopped to make room"
        return f"starting at about {at}: its GPUs are being freed"
    if code == "reservation_pending":
        at = format_time(waiting.at) if waiting.at is not None else "later"
        return f"waiting for reservation {waiting.reservation_id}, which starts at {at}; {_ahead(waiting)}"
    if code == "quota_jobs":
        return f"held: you have {_plural(waiting.used or 0, 'job')} running and your limit is {waiting.limit:g}"
    if code == "quota_gpus_per_job":
        return f"held: it asks for {_plural(waiting.total_gpus, 'GPU')} and your limit is {waiting.limit:g} per job"
    if code == "quota_gpu_hours":
        return (
            f"held: at its max runtime it needs {waiting.used:.1f} GPU-hours and you have "
            f"{max(waiting.limit or 0.0, 0.0):.1f} left this week"
        )
    if code == "too_large":
        per_node = _plural(waiting.total_gpus // waiting.nodes, "GPU")
        return f"held: it needs {_plural(waiting.nodes, 'node')} with {per_node} each, more than the lab has"
    if code == "reservation_over":
        return f"held: reservation {waiting.reservation_id} is over or does not exist"
    if code == "reservation_too_short":
        end = format_time(waiting.at) if waiting.at is not None else "soon"
        return (
            f"held: its max runtime does not fit in what is left of reservation {waiting.reservation_id} (ends {end})"
        )
    if code == "reservation_not_allowed":
        return f"held: reservation {waiting.reservation_id} is not open to you"
    return code


def clock_formatter(tz: dt.tzinfo, now: float) -> TimeFormatter:
    """Times in the lab's zone: "14:20" today, "Tue 14:20" within a week, else "2025-03-04 14:20"."""
    today = dt.datetime.fromtimestamp(now, tz).date()

    def format_time(when: float) -> str:
        try:
            moment = dt.datetime.fromtimestamp(when, tz)
        except (OverflowError, OSError, ValueError):
            return "unknown"
        days = (moment.date() - today).days
        if days == 0:
            return moment.strftime("%H:%M")
        if 0 < days < 7:
            return moment.strftime("%a %H:%M")
        return moment.strftime("%Y-%m-%d %H:%M")

    return format_time


def utc_clock(when: float) -> str:
    """HH:MM in UTC; callers pass clock_formatter for the lab's time zone."""
    if not math.isfinite(when):
        return "unknown"
    seconds = int(when) % 86400
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}"
