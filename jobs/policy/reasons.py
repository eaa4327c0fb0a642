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
Translate = Callable[[str], str]  # gettext
PluralTranslate = Callable[[str, str, int], str]  # ngettext

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


def same(text: str) -> str:
    """The sentence as written (English): the default where nobody passes Django's gettext."""
    return text


def english(singular: str, plural: str, count: int | float) -> str:
    return singular if count == 1 else plural


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

    def sentence(
        self, format_time: TimeFormatter | None = None, gettext: Translate = same, ngettext: PluralTranslate = english
    ) -> str:
        return waiting_sentence(self, format_time or utc_clock, gettext=gettext, ngettext=ngettext)


def _number(value: int | float) -> str:
    return f"{value:g}"


def _ahead(waiting: Waiting, _: Translate, ngettext: PluralTranslate) -> str:
    if waiting.jobs_ahead == 0:
        return _("first in line")
    return ngettext("%(n)s job ahead of you", "%(n)s jobs ahead of you", waiting.jobs_ahead) % {
        "n": _number(waiting.jobs_ahead)
    }


def _gpus(waiting: Waiting, _: Translate, ngettext: PluralTranslate) -> str:
    values = {"n": _number(waiting.total_gpus), "nodes": waiting.nodes}
    if waiting.nodes > 1:
        return ngettext("%(n)s GPU on %(nodes)s nodes", "%(n)s GPUs on %(nodes)s nodes", waiting.total_gpus) % values
    return ngettext("%(n)s GPU", "%(n)s GPUs", waiting.total_gpus) % values


def waiting_sentence(
    waiting: Waiting, format_time: TimeFormatter, gettext: Translate = same, ngettext: PluralTranslate = english
) -> str:
    """The sentence, in the language `gettext` and `ngettext` speak (the scheduler passes Django's, inside the owner's
    language; this module imports no Django, so the policy runs alone in the benchmarks)."""
    _ = gettext
    code = waiting.code
    rid = waiting.reservation_id
    if code == "waiting":
        if waiting.estimated_start is None:
            when = _("no estimated start yet (the nodes it needs are not available)")
        else:
            earliest = format_time(waiting.estimated_earliest or waiting.estimated_start)
            latest = format_time(waiting.estimated_latest or waiting.estimated_start)
            when = (
                _("estimated start %(at)s") % {"at": earliest}
                if earliest == latest
                else _("estimated start %(earliest)s-%(latest)s") % {"earliest": earliest, "latest": latest}
            )
        return _("waiting for %(gpus)s; %(ahead)s; %(when)s") % {
            "gpus": _gpus(waiting, _, ngettext),
            "ahead": _ahead(waiting, _, ngettext),
            "when": when,
        }
    if code == "starting":
        at = format_time(waiting.estimated_start) if waiting.estimated_start is not None else _("soon")
        if waiting.preempting:
            return ngettext(
                "starting at about %(at)s: %(n)s lower-priority job is being stopped to make room",
                "starting at about %(at)s: %(n)s lower-priority jobs are being stopped to make room",
                waiting.preempting,
            ) % {"at": at, "n": _number(waiting.preempting)}
        return _("starting at about %(at)s: its GPUs are being freed") % {"at": at}
    if code == "reservation_pending":
        at = format_time(waiting.at) if waiting.at is not None else _("later")
        return _("waiting for reservation %(id)s, which starts at %(at)s; %(ahead)s") % {
            "id": rid,
            "at": at,
            "ahead": _ahead(waiting, _, ngettext),
        }
    if code == "quota_jobs":
        used = waiting.used or 0
        return ngettext(
            "held: you have %(n)s job running and your limit is %(limit)s",
            "held: you have %(n)s jobs running and your limit is %(limit)s",
            used,
        ) % {"n": _number(used), "limit": _number(waiting.limit or 0)}
    if code == "quota_gpus_per_job":
        return ngettext(
            "held: it asks for %(n)s GPU and your limit is %(limit)s per job",
            "held: it asks for %(n)s GPUs and your limit is %(limit)s per job",
            waiting.total_gpus,
        ) % {"n": _number(waiting.total_gpus), "limit": _number(waiting.limit or 0)}
    if code == "quota_gpu_hours":
        return _("held: at its max runtime it needs %(need).1f GPU-hours and you have %(left).1f left this week") % {
            "need": waiting.used,
            "left": max(waiting.limit or 0.0, 0.0),
        }
    if code == "too_large":
        per_node = waiting.total_gpus // waiting.nodes
        gpus = ngettext("%(n)s GPU", "%(n)s GPUs", per_node) % {"n": _number(per_node)}
        return ngettext(
            "held: it needs %(n)s node with %(gpus)s each, more than the lab has",
            "held: it needs %(n)s nodes with %(gpus)s each, more than the lab has",
            waiting.nodes,
        ) % {"n": _number(waiting.nodes), "gpus": gpus}
    if code == "reservation_over":
        return _("held: reservation %(id)s is over or does not exist") % {"id": rid}
    if code == "reservation_too_short":
        end = format_time(waiting.at) if waiting.at is not None else _("soon")
        return _("held: its max runtime does not fit in what is left of reservation %(id)s (ends %(end)s)") % {
            "id": rid,
            "end": end,
        }
    if code == "reservation_not_allowed":
        return _("held: reservation %(id)s is not open to you") % {"id": rid}
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
