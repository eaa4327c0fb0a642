"""The ledger's invariants, checked against the holders' own rows: what `manage.py check_ledger` prints and what the
reconciler heals. Reads only.

1. `gpu_over_share` — no GPU is held more than once at any instant: per GPU, the shares of the notebook and job
   entries overlapping in time add up to at most 1. Reservation entries (whole nodes, for their people to work
   inside) are summed on their own, and also to at most 1.
2. `open_without_holder` — every open entry has a live holder: a job attempt that is starting or running, a
   notebook session not ended, a reservation whose window is current.
3. `finished_holder_open` — every finished holder is closed: a job in a final state (or an attempt the job has
   moved on from), an ended notebook, a past or cut-short reservation has no open entry.

Who holds what is known by the part that owns the holder: labs judges notebooks and reservations here, and the
jobs app registers its judge of job attempts (`register_holder_kind`), since labs never imports jobs.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import defaultdict
from collections.abc import Callable, Iterable
from decimal import Decimal

from django.db.models import Q
from django.utils import timezone

from labs.ledger import ONE, Ref
from labs.models import (
    NOTEBOOK_DONE,
    Allocation,
    AllocationKind,
    Gpu,
    NotebookSession,
    NotebookStatus,
    Reservation,
    ReservationStatus,
)
from labs.usage import daysums

OVER_SHARE = "gpu_over_share"
NO_HOLDER = "open_without_holder"
FINISHED_OPEN = "finished_holder_open"
DAY_SUMS = "day_sums_disagree"
INVARIANTS = {
    OVER_SHARE: "No GPU is held more than once at any instant (notebook and job shares add up to at most 1;"
    " reservations, on their own, too).",
    NO_HOLDER: "Every open ledger entry has a live holder: a job attempt starting or running, a notebook session"
    " not ended, a reservation whose window is current.",
    FINISHED_OPEN: "Every finished holder is closed: a finished job attempt, an ended notebook or a past reservation"
    " has no open ledger entry.",
    DAY_SUMS: "The day sums beside the ledger (GPU time of closed entries per lab day, person, course and kind) are"
    " what the ledger's entries add up to.",
}

LIVE, FINISHED, GONE = "live", "finished", "gone"


@dataclasses.dataclass(frozen=True)
class Holder:
    """What the owner of a holder says of it: live, finished, or gone (no such holder, or one that holds nothing in
    its state), with the last time it is known to have held its GPUs (None: nothing says)."""

    state: str
    describe: str
    ended_at: dt.datetime | None = None


HolderJudge = Callable[[list[Ref], dt.datetime], dict[Ref, Holder]]
# Called when the reconciler closed a holder's entries: (ref, at, sentence), for the owner to record an event.
ClosedNote = Callable[[Ref, dt.datetime, str], None]


@dataclasses.dataclass(frozen=True)
class HolderKind:
    judge: HolderJudge
    on_closed: ClosedNote | None = None


_KINDS: dict[str, HolderKind] = {}


def register_holder_kind(kind: str, judge: HolderJudge, *, on_closed: ClosedNote | None = None) -> None:
    """Teach the check (and the reconciler) how to judge the holders of one kind of entry."""
    _KINDS[kind] = HolderKind(judge, on_closed)


def holder_kind(kind: str) -> HolderKind | None:
    return _KINDS.get(kind)


@dataclasses.dataclass(frozen=True)
class Violation:
    code: str
    sentence: str
    gpu: str = ""
    ref: str = ""
    allocation_ids: tuple[int, ...] = ()
    # gpu_over_share: when it began; the holder kinds: the last time the holder is known to have held its GPUs.
    at: dt.datetime | None = None
    until: dt.datetime | None = None
    share: Decimal | None = None

    def as_dict(self) -> dict:
        return {
            "code": self.code,
            "sentence": self.sentence,
            "gpu": self.gpu,
            "ref": self.ref,
            "allocation_ids": list(self.allocation_ids),
            "at": self.at.isoformat() if self.at else None,
            "until": self.until.isoformat() if self.until else None,
            "share": str(self.share) if self.share is not None else None,
        }


def _when(moment: dt.datetime | None) -> str:
    return "now" if moment is None else timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S")


# --- 1. shares -------------------------------------------------------------------------------------------------------


def _over_periods(rows: list[dict]) -> Iterable[tuple[dt.datetime, dt.datetime | None, Decimal, list[dict]]]:
    """Sweep one GPU's entries in time: each stretch where the shares held add up to more than 1, with its peak and
    the entries held at the peak."""
    events = []
    for row in rows:
        events.append((row["starts_at"], 1, row))
        if row["ends_at"] is not None:
            events.append((row["ends_at"], 0, row))  # an entry ending at t and one starting at t do not overlap
    events.sort(key=lambda event: (event[0], event[1]))
    held: dict[int, dict] = {}
    total = Decimal(0)
    start = None
    peak, at_peak = Decimal(0), []
    for moment, starts, row in events:
        if starts:
            held[row["id"]] = row
            total += row["share"]
        else:
            held.pop(row["id"], None)
            total -= row["share"]
        if total > ONE:
            if start is None:
                start, peak = moment, Decimal(0)
            if total > peak:
                peak, at_peak = total, sorted(held.values(), key=lambda r: r["id"])
        elif start is not None:
            yield start, moment, peak, at_peak
            start = None
    if start is not None:
        yield start, None, peak, at_peak


def share_violations(*, since: dt.datetime | None = None) -> list[Violation]:
    """GPUs held more than once at some instant (since `since`, or ever)."""
    rows = Allocation.objects.all()
    if since is not None:
        rows = rows.filter(Q(ends_at__isnull=True) | Q(ends_at__gt=since))
    by_gpu: dict[tuple[int, bool], list[dict]] = defaultdict(list)
    for row in rows.values("id", "gpu_id", "kind", "ref", "share", "starts_at", "ends_at").order_by("gpu_id", "id"):
        by_gpu[(row["gpu_id"], row["kind"] == AllocationKind.RESERVATION)].append(row)
    names = {gpu.pk: str(gpu) for gpu in Gpu.objects.filter(pk__in={g for g, _ in by_gpu}).select_related("node")}
    found = []
    for (gpu_id, reservations), entries in sorted(by_gpu.items()):
        for start, end, peak, held in _over_periods(entries):
            refs = ", ".join(f"{r['ref']} ({r['share'].normalize()})" for r in held)
            what = "reservations" if reservations else "notebooks and jobs"
            found.append(
                Violation(
                    code=OVER_SHARE,
                    sentence=f"GPU {names[gpu_id]} was held {peak.normalize()} times over by {what} from"
                    f" {_when(start)} until {_when(end)}: {refs}.",
                    gpu=names[gpu_id],
                    allocation_ids=tuple(r["id"] for r in held),
                    at=start,
                    until=end,
                    share=peak,
                )
            )
    return found


# --- 2 and 3. holders -------------------------------------------------------------------------------------------------


def holder_violations(*, now: dt.datetime | None = None) -> list[Violation]:
    """Open entries whose holder is gone or finished."""
    now = now or timezone.now()
    open_rows: dict[Ref, list[int]] = defaultdict(list)
    for row_id, kind, key in Allocation.objects.filter(ends_at__isnull=True).values_list("id", "kind", "ref"):
        try:
            open_rows[Ref(kind, key)].append(row_id)
        except ValueError:
            open_rows[Ref(kind, f"{kind}:?")].append(row_id)
    by_kind: dict[str, list[Ref]] = defaultdict(list)
    for ref in open_rows:
        by_kind[ref.kind].append(ref)
    found = []
    for kind, refs in sorted(by_kind.items()):
        registered = _KINDS.get(kind)
        if registered is None:
            continue
        judged = registered.judge(sorted(refs, key=str), now)
        for ref in sorted(refs, key=str):
            holder = judged.get(ref) or Holder(GONE, "no such holder")
            if holder.state == LIVE:
                continue
            ids = tuple(sorted(open_rows[ref]))
            entries = f"{len(ids)} open ledger entr{'y' if len(ids) == 1 else 'ies'}"
            if holder.state == FINISHED:
                code = FINISHED_OPEN
                sentence = f"{holder.describe} ended at {_when(holder.ended_at)} but still has {entries}."
            else:
                code = NO_HOLDER
                sentence = f"{ref} has {entries} but no live holder: {holder.describe}."
            found.append(Violation(code=code, sentence=sentence, ref=ref.key, allocation_ids=ids, at=holder.ended_at))
    return found


def day_sum_violations(*, since: dt.datetime | None = None) -> list[Violation]:
    """Days whose sums beside the ledger disagree with it (since `since`, or over the whole ledger)."""
    span = daysums.ledger_span()
    if span is None:
        return []
    first, last = span
    if since is not None:
        first = max(first, daysums.local_day(since))
    return [
        Violation(
            code=DAY_SUMS,
            sentence=f"The day sums of {day.isoformat()} disagree with the ledger by {off:+.3f} GPU-seconds"
            " (`manage.py reconcile` rewrites the last days; older ones: labs.usage.daysums.rebuild).",
            at=daysums.local_midnight(day),
        )
        for day, off in daysums.disagreements(first, last).items()
    ]


def ledger_violations(*, now: dt.datetime | None = None, since: dt.datetime | None = None) -> list[Violation]:
    """Every invariant of the ledger's own rows that does not hold, as sentences (empty: the ledger is sound).
    `check_ledger` adds `day_sum_violations`, the sums kept beside it."""
    return share_violations(since=since) + holder_violations(now=now)


# --- The holders labs owns -----------------------------------------------------------------------------------------


def _notebooks(refs: list[Ref], now: dt.datetime) -> dict[Ref, Holder]:
    ids = {ref.holder_id: ref for ref in refs if ref.holder_id is not None}
    judged = {}
    for session in NotebookSession.objects.filter(pk__in=ids):
        ref = ids[session.pk]
        describe = f"notebook {session.pk} of {session.hub_user} ({session.status})"
        if session.status in NOTEBOOK_DONE:
            judged[ref] = Holder(FINISHED, describe, session.stopped_at or session.stop_requested_at)
        elif session.status == NotebookStatus.QUEUED:
            judged[ref] = Holder(GONE, f"{describe}: waiting in the queue, it holds no GPU")
        else:
            judged[ref] = Holder(LIVE, describe)
    return judged


def _reservations(refs: list[Ref], now: dt.datetime) -> dict[Ref, Holder]:
    ids = {ref.holder_id: ref for ref in refs if ref.holder_id is not None}
    judged = {}
    for reservation in Reservation.objects.filter(pk__in=ids):
        ref = ids[reservation.pk]
        describe = f"reservation {reservation.pk} “{reservation.title}” ({reservation.status})"
        current = reservation.status in (ReservationStatus.APPROVED, ReservationStatus.ACTIVE)
        if current and reservation.starts_at <= now < reservation.ends_at:
            judged[ref] = Holder(LIVE, describe)
        elif reservation.ends_at <= now or reservation.status in (ReservationStatus.ENDED, ReservationStatus.CANCELLED):
            judged[ref] = Holder(FINISHED, describe, min(reservation.ends_at, now))
        else:
            judged[ref] = Holder(GONE, f"{describe}: its window has not begun")
    return judged


register_holder_kind(AllocationKind.NOTEBOOK, _notebooks)
register_holder_kind(AllocationKind.RESERVATION, _reservations)
