"""Placement: which GPUs a notebook or a job may take, now, given the ledger and the reservations.

Notebooks and jobs both ask here, so a reservation means the same thing to both:
- during a reservation's window its nodes host only its owner's and its course's work;
- a job (strict) is never placed where its `max_runtime_s` would run into someone else's reservation;
- a notebook may start on such a node when nothing else is free, but it must end when the window
  begins (`must_end_by`), and the reservation tick warns and then ends it.

Reads are plain functions; `allocate` is the one write: it records the placement in the ledger
with the chosen GPUs locked, so two claims racing for the last GPU cannot both get it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import defaultdict
from decimal import Decimal

from django.db import transaction
from django.db.models import Sum
from django.utils import formats, timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts.errors import PortalError
from accounts.models import Course, User
from accounts.prepared import Prepared
from labs.ledger import GpuShare, Ref, allocation_open
from labs.maintenance.selectors import maintenance_windows
from labs.models import (
    Allocation,
    AllocationKind,
    Gpu,
    NodeStatus,
    Reservation,
    ReservationNode,
    ReservationStatus,
)
from labs.reservations.selectors import not_yours, reservation_people

ONE = Decimal("1")


class NoCapacity(PortalError):
    status = 409
    code = "no_capacity"


@dataclasses.dataclass(frozen=True)
class Claim:
    """What someone asks for: `nodes` nodes with `gpus` GPUs each, `share` of each GPU, from..until."""

    user: User
    kind: str
    starts_at: dt.datetime
    ends_at: dt.datetime
    gpus: int = 1
    nodes: int = 1
    share: Decimal = ONE
    reservation: Reservation | None = None
    course: Course | None = None

    @property
    def strict(self) -> bool:
        # A job cannot be asked to stop for a reservation; a notebook can (it is warned, then ended).
        return self.kind != AllocationKind.NOTEBOOK


@dataclasses.dataclass(frozen=True)
class Slot:
    node: str
    gpu_id: int
    gpu_index: int
    share: Decimal


@dataclasses.dataclass(frozen=True)
class Placement:
    slots: tuple[Slot, ...]
    # Set when a notebook lands on a node someone else has reserved later: it must stop by then.
    must_end_by: dt.datetime | None = None

    @property
    def node_names(self) -> list[str]:
        return sorted({slot.node for slot in self.slots})


@dataclasses.dataclass(frozen=True)
class ReservationWindow:
    starts_at: dt.datetime
    ends_at: dt.datetime
    reservation_id: int


# Every placement, every scheduling pass and every job submission's dry run ask it: compiled once.
_HOLDING_IN = Prepared(
    lambda starts_at, ends_at: (
        ReservationNode.objects.filter(holds=True, starts_at__lt=ends_at, ends_at__gt=starts_at)
        .select_related("reservation")
        .order_by("starts_at")
    ),
    starts_at=ReservationNode._meta.get_field("ends_at"),
    ends_at=ReservationNode._meta.get_field("starts_at"),
)


def reserved_windows(
    starts_at: dt.datetime, ends_at: dt.datetime
) -> dict[int, list[tuple[ReservationWindow, Reservation]]]:
    """Per node id, the holding reservation windows that overlap [starts_at, ends_at)."""
    rows = _HOLDING_IN.objects(starts_at, ends_at)
    windows: dict[int, list[tuple[ReservationWindow, Reservation]]] = defaultdict(list)
    for row in rows:
        windows[row.node_id].append(
            (ReservationWindow(row.starts_at, row.ends_at, row.reservation_id), row.reservation)
        )
    # Maintenance holds its nodes as a reservation nobody may use: no job runs into it, a notebook ends before it.
    for node_id, found in maintenance_windows(starts_at, ends_at).items():
        for maintenance in found:
            stand_in = Reservation(
                pk=-maintenance.pk,
                owner_id=None,
                course_id=None,
                title=f"maintenance: {maintenance.reason}"[:120],
                starts_at=maintenance.starts_at,
                ends_at=maintenance.ends_at,
                status=ReservationStatus.APPROVED,
            )
            windows[node_id].append(
                (ReservationWindow(maintenance.starts_at, maintenance.ends_at, -maintenance.pk), stand_in)
            )
        windows[node_id].sort(key=lambda pair: pair[0].starts_at)
    return windows


def blocking_windows(user: User, starts_at: dt.datetime, ends_at: dt.datetime) -> dict[int, list[ReservationWindow]]:
    """Per node id, the reservation windows in [starts_at, ends_at) that `user` may not use.

    The job queue reads this to keep jobs off nodes whose reservations they would run into.
    """
    windows = reserved_windows(starts_at, ends_at)
    people = reservation_people({r.pk: r for ws in windows.values() for _, r in ws}.values(), at=starts_at)
    return {
        node_id: blocked
        for node_id, node_windows in windows.items()
        if (blocked := [window for window, reservation in node_windows if user.pk not in people[reservation.pk]])
    }


def free_shares(gpu_ids: list[int] | None = None) -> dict[int, Decimal]:
    """What is left of each GPU on a ready node: 1 minus the open notebook and job allocations."""
    gpus = Gpu.objects.filter(node__status=NodeStatus.READY)
    if gpu_ids is not None:
        gpus = gpus.filter(id__in=gpu_ids)
    held = dict(
        Allocation.objects.filter(ends_at__isnull=True, gpu__in=gpus)
        .exclude(kind=AllocationKind.RESERVATION)
        .values_list("gpu")
        .annotate(total=Sum("share"))
    )
    return {gpu_id: max(Decimal(0), ONE - held.get(gpu_id, Decimal(0))) for gpu_id in gpus.values_list("id", flat=True)}


def _when(moment: dt.datetime) -> str:
    local = timezone.localtime(moment)
    if local.date() == timezone.localdate():
        return local.strftime("%H:%M")
    return formats.date_format(local, "D d M H:i")  # in the reader's language: "Tue 10 Mar 14:00", "Ter 10 Mar 14:00"


def place(claim: Claim) -> Placement:
    """Choose GPUs for the claim, or raise NoCapacity with a sentence the person can act on."""
    if claim.nodes < 1 or claim.gpus < 1 or not (Decimal(0) < claim.share <= ONE):
        raise PortalError(_("A claim needs at least one node and one GPU, and a share in (0, 1]."))
    if claim.nodes > 1 and claim.share < ONE:
        raise PortalError(_("Work across several nodes takes whole GPUs."))

    windows = reserved_windows(claim.starts_at, claim.ends_at)
    reservations = {r.pk: r for ws in windows.values() for _, r in ws}
    if claim.reservation is not None:
        reservations[claim.reservation.pk] = claim.reservation
    people = reservation_people(reservations.values(), at=claim.starts_at)

    def usable(reservation: Reservation) -> bool:
        return claim.user.pk in people[reservation.pk]

    if claim.reservation is not None:
        reservation = claim.reservation
        if not usable(reservation):
            raise NoCapacity(not_yours(reservation))
        if not reservation.open_for_work(claim.starts_at):
            raise NoCapacity(
                _("Reservation “%(title)s” is %(status)s.")
                % {"title": reservation.title, "status": reservation.get_status_display().lower()}
            )
        if claim.starts_at < reservation.starts_at or claim.ends_at > reservation.ends_at:
            raise NoCapacity(
                _("Reservation “%(title)s” runs %(start)s–%(end)s; the work must fit inside it.")
                % {"title": reservation.title, "start": _when(reservation.starts_at), "end": _when(reservation.ends_at)}
            )
        allowed_nodes: set[int] | None = set(reservation.node_rows.filter(holds=True).values_list("node_id", flat=True))
    else:
        allowed_nodes = None

    shares = free_shares()
    gpus_by_node: dict[int, list[Gpu]] = defaultdict(list)
    for gpu in Gpu.objects.filter(id__in=shares).select_related("node").order_by("node__name", "index"):
        gpus_by_node[gpu.node_id].append(gpu)

    preferred, fallback = [], []  # (node_id, must_end_by)
    blocked_until: list[dt.datetime] = []
    for node_id in gpus_by_node:
        if allowed_nodes is not None and node_id not in allowed_nodes:
            continue
        foreign = [w for w, r in windows.get(node_id, []) if not usable(r)]
        own = [w for w, r in windows.get(node_id, []) if usable(r)]
        if not foreign:
            # Nodes reserved for this person's course come first: that is what the reservation is for.
            (preferred if own or allowed_nodes is not None else fallback).append((node_id, None))
            continue
        first = min(w.starts_at for w in foreign)
        blocked_until.append(max(w.ends_at for w in foreign))
        if not claim.strict and first > claim.starts_at:
            fallback.append((node_id, first))
    # Among fallback nodes, those free for longest first; unreserved ones (None) lead.
    fallback.sort(key=lambda item: (item[1] is not None, -(item[1] or claim.ends_at).timestamp()))

    chosen: list[Slot] = []
    must_end_by: dt.datetime | None = None
    for node_id, end_by in preferred + fallback:
        fitting = [gpu for gpu in gpus_by_node[node_id] if shares[gpu.id] >= claim.share]
        if len(fitting) < claim.gpus:
            continue
        # Pack shares: the fullest GPU that still fits, so whole GPUs stay whole for jobs.
        fitting.sort(key=lambda gpu: (shares[gpu.id], gpu.index))
        chosen.extend(Slot(gpu.node.name, gpu.id, gpu.index, claim.share) for gpu in fitting[: claim.gpus])
        if end_by is not None:
            must_end_by = end_by if must_end_by is None else min(must_end_by, end_by)
        if len({slot.node for slot in chosen}) == claim.nodes:
            return Placement(tuple(chosen), must_end_by)

    raise NoCapacity(_why_not(claim, len(gpus_by_node), blocked_until))


def _why_not(claim: Claim, ready_nodes: int, blocked_until: list[dt.datetime]) -> str:
    gpus = ngettext("%(n)s free GPU", "%(n)s free GPUs", claim.gpus) % {"n": claim.gpus}
    want = ngettext("%(n)s node with %(gpus)s", "%(n)s nodes with %(gpus)s", claim.nodes) % {
        "n": claim.nodes,
        "gpus": gpus,
    }
    if claim.share < ONE:
        want = _("%(pct)s of a GPU") % {"pct": f"{claim.share:.0%}"}
    if claim.reservation is not None:
        return _("Not enough free GPUs in reservation “%(title)s” for %(want)s.") % {
            "title": claim.reservation.title,
            "want": want,
        }
    if ready_nodes == 0:
        return _("No node is ready right now; an admin has been told.")
    parts = [_("No room for %(want)s right now.") % {"want": want}]
    if blocked_until:
        parts.append(
            ngettext(
                "%(n)s node is reserved for others (the first frees at %(at)s).",
                "%(n)s nodes are reserved for others (the first frees at %(at)s).",
                len(blocked_until),
            )
            % {"n": len(blocked_until), "at": _when(min(blocked_until))}
        )
    return " ".join(parts)


def allocate(
    *, claim: Claim, ref: Ref, reason: str = "", now: dt.datetime | None = None
) -> tuple[Placement, list[Allocation]]:
    """Place the claim and write it to the ledger, atomically, with the chosen GPUs locked."""
    now = now or timezone.now()
    for _attempt in range(3):
        placement = place(claim)
        with transaction.atomic():
            gpu_ids = [slot.gpu_id for slot in placement.slots]
            # Lock the GPUs, then look again: someone may have taken them since `place` read the ledger.
            list(Gpu.objects.select_for_update().filter(id__in=gpu_ids).order_by("id"))
            shares = free_shares(gpu_ids)
            if all(shares.get(slot.gpu_id, Decimal(0)) >= slot.share for slot in placement.slots):
                course = claim.course or (claim.reservation.course if claim.reservation else None)
                allocations = allocation_open(
                    ref=ref,
                    user_id=claim.user.pk,
                    course_id=course.pk if course else None,
                    shares=[GpuShare(slot.gpu_id, slot.share) for slot in placement.slots],
                    at=now,
                    reason=reason,
                )
                return placement, allocations
    raise NoCapacity(_("The lab is busy: the GPUs were taken while we chose them. Try again in a moment."))
