"""What is free and what would fit: free nodes in a window, the earliest window that fits, the 409 that says both.

The database has the last word on double booking (an exclusion constraint on ReservationNode); these reads come
first only so that the answer can say what collides and what would fit.
"""

from __future__ import annotations

import datetime as dt

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts.errors import Conflict
from accounts.prepared import Prepared
from labs.maintenance.selectors import maintenance_windows
from labs.models import Node, NodeStatus, ReservationNode
from labs.reservations.wording import iso, when


class ReservationConflict(Conflict):
    """409: some node is taken for part of the window. Says which, and the earliest window that fits."""

    def __init__(self, message: str, *, conflicts: list[dict], earliest_fit: dict | None):
        super().__init__(message, conflicts=conflicts, earliest_fit=earliest_fit)
        self.conflicts = conflicts
        self.earliest_fit = earliest_fit


def busy_rows(node_ids, starts_at: dt.datetime, ends_at: dt.datetime):
    qs = ReservationNode.objects.filter(holds=True, starts_at__lt=ends_at, ends_at__gt=starts_at)
    if node_ids is not None:
        qs = qs.filter(node_id__in=node_ids)
    return qs.select_related("node").order_by("node__name", "starts_at")


def _ready_not_booked(starts_at: dt.datetime, ends_at: dt.datetime):
    busy = ReservationNode.objects.filter(holds=True, starts_at__lt=ends_at, ends_at__gt=starts_at).values("node_id")
    return Node.objects.filter(status=NodeStatus.READY).exclude(id__in=busy).order_by("name")


# Asked by every look at availability (the API teachers' tools poll, the form): compiled once (accounts.prepared).
_READY_NOT_BOOKED = Prepared(
    _ready_not_booked,
    starts_at=ReservationNode._meta.get_field("ends_at"),
    ends_at=ReservationNode._meta.get_field("starts_at"),
)


def free_nodes(starts_at: dt.datetime, ends_at: dt.datetime) -> list[Node]:
    """Ready nodes with no holding reservation and no maintenance in [starts_at, ends_at), by name."""
    in_maintenance = maintenance_windows(starts_at, ends_at)
    return [node for node in _READY_NOT_BOOKED.objects(starts_at, ends_at) if node.pk not in in_maintenance]


def earliest_fit(
    *, node_ids: list[int] | None, count: int, starts_at: dt.datetime, ends_at: dt.datetime, until: dt.datetime
) -> dict | None:
    """The first window as long as [starts_at, ends_at), no earlier, where the nodes (or `count` of them) are free."""
    length = ends_at - starts_at
    candidates_qs = Node.objects.filter(status=NodeStatus.READY)
    if node_ids is not None:
        candidates_qs = candidates_qs.filter(id__in=node_ids)
    names = dict(candidates_qs.values_list("id", "name"))
    if len(names) < count:
        return None
    busy: dict[int, list[tuple[dt.datetime, dt.datetime]]] = {node_id: [] for node_id in names}
    for row in ReservationNode.objects.filter(
        holds=True, node_id__in=names, ends_at__gt=starts_at, starts_at__lt=until
    ):
        busy[row.node_id].append((row.starts_at, row.ends_at))
    # A fitting window starts at the requested time or just as some booking ends.
    starts = sorted({starts_at} | {end for windows in busy.values() for _, end in windows if end > starts_at})
    for start in starts:
        end = start + length
        if end > until:
            break
        free = [nid for nid, windows in busy.items() if all(e <= start or s >= end for s, e in windows)]
        if len(free) >= count:
            chosen = sorted(names[nid] for nid in free)[:count] if node_ids is None else sorted(names.values())
            return {"starts_at": iso(start), "ends_at": iso(end), "nodes": chosen}
    return None


def conflict(
    *, node_ids, count: int, starts_at: dt.datetime, ends_at: dt.datetime, until: dt.datetime
) -> ReservationConflict:
    rows = list(busy_rows(node_ids, starts_at, ends_at))
    conflicts = [{"node": row.node.name, "starts_at": iso(row.starts_at), "ends_at": iso(row.ends_at)} for row in rows]
    fit = earliest_fit(node_ids=node_ids, count=count, starts_at=starts_at, ends_at=ends_at, until=until)
    taken = sorted({row.node.name for row in rows})
    if node_ids is None:
        free = len(free_nodes(starts_at, ends_at))
        message = ngettext(
            "Only %(free)s node is free in that window; you asked for %(count)s.",
            "Only %(free)s nodes are free in that window; you asked for %(count)s.",
            free,
        ) % {"free": free, "count": count}
    else:
        names = ", ".join(taken[:6]) + ("…" if len(taken) > 6 else "")
        message = ngettext(
            "%(n)s of the nodes is already booked in that window (%(names)s).",
            "%(n)s of the nodes are already booked in that window (%(names)s).",
            len(taken),
        ) % {"n": len(taken), "names": names}
    if fit:
        message += " " + _("The earliest window that fits starts %(at)s.") % {
            "at": when(dt.datetime.fromisoformat(fit["starts_at"]))
        }
    return ReservationConflict(message, conflicts=conflicts, earliest_fit=fit)
