"""The reconciler: like a Kubernetes controller's loop, it compares the ledger, jobs and notebooks with what the
backends run, and heals each drift with an event and a log line. `manage.py reconcile [--dry-run]` and the beat task
`labs.tasks.reconcile` (every RECONCILE_INTERVAL_S) run the same `reconcile()`.

Steps are registered by the parts that own what they look at (labs never imports jobs): the jobs app registers its
two (Jobs the portal does not know; attempts whose Job vanished), labs/notebooks its two (hub servers the portal
does not know; notebooks whose server vanished), and this module the ledger's (entries whose holder is gone are
closed at the last known time; a GPU over 100 % is reported to the admins, never "fixed" by deleting rows). Steps
run in order: the work first, so the ledger step sees what they closed. Each step heals through the same
conditional services the rest of the portal uses, so a pass racing a worker or another pass does nothing twice,
and a second pass finds nothing to do. A backend that does not answer skips its step (nothing is taken for gone
because a list failed). With `dry_run`, steps say what they would do and change nothing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections import defaultdict
from collections.abc import Callable

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from accounts.errors import BackendError
from accounts.selectors import lab_admins
from accounts.services import notice_send
from labs.ledger import Ref, allocations_close
from labs.ledger_check import FINISHED_OPEN, NO_HOLDER, holder_kind, holder_violations, share_violations
from labs.models import Allocation
from labs.usage import daysums

log = logging.getLogger("labs.reconcile")

LOCK = "reconcile:lock"
LOCK_TIMEOUT_S = 360  # the task's hard time limit: a killed pass frees it by then
# How far back the over-share alert looks on each pass (check_ledger looks at the whole ledger).
SHARE_LOOKBACK = dt.timedelta(days=1)
# How far back each pass recomputes the day sums (check_ledger compares the whole ledger).
DAY_SUMS_LOOKBACK = dt.timedelta(days=2)


@dataclasses.dataclass(frozen=True)
class Action:
    """One drift found, and what was (or, in a dry run, would be) done about it."""

    kind: str
    target: str
    sentence: str
    done: bool = True

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class ReconcileReport:
    actions: list[Action] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    skipped: str = ""

    def __str__(self) -> str:
        if self.skipped:
            return self.skipped
        kinds: dict[str, int] = defaultdict(int)
        for action in self.actions:
            kinds[action.kind] += 1
        found = ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items())) or "no drift"
        return found + (f"; {len(self.errors)} steps skipped: {'; '.join(self.errors)}" if self.errors else "")


Step = Callable[..., list[Action]]  # step(*, now, dry_run) -> actions


@dataclasses.dataclass(frozen=True)
class _Registered:
    order: int
    name: str
    step: Step


_STEPS: dict[str, _Registered] = {}


def register_step(name: str, step: Step, *, order: int) -> None:
    """Add a step to every pass; lower orders run first (work: 10-40, the ledger: 90 and after)."""
    _STEPS[name] = _Registered(order, name, step)


def steps() -> list[str]:
    return [r.name for r in sorted(_STEPS.values(), key=lambda r: (r.order, r.name))]


def reconcile(*, now: dt.datetime | None = None, dry_run: bool = False) -> ReconcileReport:
    """One pass of every step. One pass at a time: a pass that finds another running says so and does nothing."""
    report = ReconcileReport()
    if not dry_run and not cache.add(LOCK, 1, timeout=LOCK_TIMEOUT_S):
        report.skipped = "another reconcile pass is running"
        return report
    try:
        for registered in sorted(_STEPS.values(), key=lambda r: (r.order, r.name)):
            try:
                actions = registered.step(now=now or timezone.now(), dry_run=dry_run)
            except BackendError as exc:
                report.errors.append(f"{registered.name}: {exc}")
                log.warning("reconcile: step %s skipped: %s", registered.name, exc)
                continue
            for action in actions:
                log.warning("reconcile: %s%s", "" if action.done else "would: ", action.sentence)
            report.actions += actions
    finally:
        if not dry_run:
            cache.delete(LOCK)
    return report


# --- The ledger's own steps ----------------------------------------------------------------------------------------


def _close_at(ref: Ref, ids: tuple[int, ...], ended_at: dt.datetime | None, now: dt.datetime) -> dt.datetime:
    """The last known time, never before the entries began nor after now."""
    starts = Allocation.objects.filter(pk__in=ids).order_by("-starts_at").values_list("starts_at", flat=True).first()
    at = min(ended_at or now, now)
    return max(at, starts) if starts else at


def close_orphans(*, now: dt.datetime, dry_run: bool = False) -> list[Action]:
    """Open entries whose holder is gone or finished: closed at the last time the holder is known to have held them."""
    actions = []
    for violation in holder_violations(now=now):
        if violation.code not in (NO_HOLDER, FINISHED_OPEN):
            continue
        ref = Ref.parse(violation.ref)
        at = _close_at(ref, violation.allocation_ids, violation.at, now)
        when = timezone.localtime(at).strftime("%Y-%m-%d %H:%M:%S")
        sentence = f"closed {len(violation.allocation_ids)} ledger entries of {ref} at {when}: {violation.sentence}"
        if dry_run:
            actions.append(Action("orphan_entry", ref.key, sentence, done=False))
            continue
        with transaction.atomic():
            closed = allocations_close(ids=violation.allocation_ids, at=at, reason="closed by the reconciler")
            registered = holder_kind(ref.kind)
            if closed and registered is not None and registered.on_closed is not None:
                registered.on_closed(ref, at, sentence)
        if closed:
            actions.append(Action("orphan_entry", ref.key, sentence))
    return actions


def alert_over_share(*, now: dt.datetime, dry_run: bool = False) -> list[Action]:
    """A GPU held more than once: tell the admins (once per GPU and start), log it, and leave the rows as they are."""
    actions = []
    admins = list(lab_admins())
    for violation in share_violations(since=now - SHARE_LOOKBACK):
        ref = f"ledger:over:{violation.gpu}:{int(violation.at.timestamp())}"[:80]
        text = f"Ledger check: {violation.sentence} Nothing was changed; see `manage.py check_ledger`."
        if dry_run:
            actions.append(Action("gpu_over_share", violation.gpu, f"alert the admins: {violation.sentence}", False))
            continue
        told = sum(notice_send(user=admin, level="warning", text=text, ref=ref) for admin in admins)
        log.error("ledger: %s", violation.sentence)
        if told:
            actions.append(Action("gpu_over_share", violation.gpu, f"alerted {told} admins: {violation.sentence}"))
    return actions


def repair_day_sums(*, now: dt.datetime, dry_run: bool = False) -> list[Action]:
    """The day sums beside the ledger (labs/usage/daysums.py) of the days this pass touches — the last
    DAY_SUMS_LOOKBACK, where entries close — recomputed from the ledger; each day that disagreed is rewritten."""
    first, last = daysums.local_day(now - DAY_SUMS_LOOKBACK), daysums.local_day(now)
    actions = []
    for day, off in daysums.repair(first, last, dry_run=dry_run).items():
        sentence = f"rewrote the day sums of {day.isoformat()} from the ledger ({off:+.3f} GPU-seconds were off)"
        actions.append(Action("day_sums", day.isoformat(), sentence, done=not dry_run))
    return actions


register_step("ledger-orphans", close_orphans, order=90)
register_step("ledger-over-share", alert_over_share, order=95)
register_step("ledger-day-sums", repair_day_sums, order=97)  # after the orphans' closes
