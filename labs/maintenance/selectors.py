"""Reads: which nodes a window takes, the windows in a span (for placement and bookings), the banners of now."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Q, QuerySet, prefetch_related_objects
from django.utils import timezone

from accounts.prepared import Prepared
from labs.models import Announcement, Maintenance, Node


def maintenance_nodes(maintenance: Maintenance) -> QuerySet[Node]:
    return Node.objects.all() if maintenance.all_nodes else maintenance.nodes.all()


def _open_in(starts_at: dt.datetime, ends_at: dt.datetime) -> QuerySet[Maintenance]:
    """Windows not over yet that overlap [starts_at, ends_at)."""
    return Maintenance.objects.filter(ended_at__isnull=True, starts_at__lt=ends_at, ends_at__gt=starts_at)


# Every look at what is free (the availability API, a booking's count of nodes) asks it: compiled once.
_OPEN_IN = Prepared(
    _open_in, starts_at=Maintenance._meta.get_field("ends_at"), ends_at=Maintenance._meta.get_field("starts_at")
)


def maintenance_windows(starts_at: dt.datetime, ends_at: dt.datetime) -> dict[int, list[Maintenance]]:
    """Per node id, the maintenance windows overlapping [starts_at, ends_at)."""
    windows: dict[int, list[Maintenance]] = defaultdict(list)
    found = _OPEN_IN.objects(starts_at, ends_at)
    if not found:
        return windows
    prefetch_related_objects(found, "nodes")
    every = list(Node.objects.values_list("id", flat=True)) if any(m.all_nodes for m in found) else []
    for maintenance in found:
        for node_id in every if maintenance.all_nodes else [node.pk for node in maintenance.nodes.all()]:
            windows[node_id].append(maintenance)
    return windows


def maintenance_clash(node_ids: list[int], starts_at: dt.datetime, ends_at: dt.datetime) -> Maintenance | None:
    """The first maintenance window that takes one of these nodes in [starts_at, ends_at), if any."""
    return (
        _open_in(starts_at, ends_at)
        .filter(Q(all_nodes=True) | Q(nodes__id__in=node_ids))
        .order_by("starts_at", "id")
        .first()
    )


def maintenances_listed(*, now: dt.datetime | None = None) -> QuerySet[Maintenance]:
    """For the admins: every window not over, and those over in the last 30 days."""
    now = now or timezone.now()
    return (
        Maintenance.objects.filter(ends_at__gt=now - dt.timedelta(days=30))
        .select_related("created_by")
        .prefetch_related("nodes")
        .order_by("starts_at", "id")
    )


def announcements_active(*, now: dt.datetime | None = None) -> QuerySet[Announcement]:
    now = now or timezone.now()
    return Announcement.objects.filter(starts_at__lte=now, ends_at__gt=now).order_by("-starts_at", "-id")


# Every page shows the banners, and announcements and maintenance windows are written a few times a term: the rows not
# over yet are kept in the cache (one round trip a page instead of two queries), with the version they were read at.
# Any write moves the version on (banners_changed: labs.apps connects it to their saves and deletes), so the next page
# reads them again; a row that ends, or a window whose lead time begins, is a matter of `now`, filtered per page.
BANNERS_KEY = "labs:banners"
BANNERS_VERSION_KEY = "labs:banners:version"
BANNERS_KEEP_S = 60  # at most this long for what no save tells (a node renamed in a window's list)


def _next_version() -> None:
    cache.add(BANNERS_VERSION_KEY, 0, timeout=None)
    try:
        cache.incr(BANNERS_VERSION_KEY)
    except ValueError:  # evicted between the two calls
        cache.set(BANNERS_VERSION_KEY, 1, timeout=None)


def banners_changed(**_signal) -> None:
    """An announcement or maintenance window was written: the pages read them again, now (this transaction's own
    pages) and once it commits (a page that read the rows before the commit kept the old ones)."""
    _next_version()
    transaction.on_commit(_next_version)


def _banner_rows(now: dt.datetime) -> list[dict]:
    """Announcements and maintenance windows not over at `now` (those still to come too), as plain rows."""
    rows = [
        {"kind": "announcement", "severity": a.severity, "text": a.text, "starts_at": a.starts_at, "ends_at": a.ends_at}
        for a in Announcement.objects.filter(ends_at__gt=now).order_by("-starts_at", "-id")
    ]
    for m in Maintenance.objects.filter(ended_at__isnull=True, ends_at__gt=now).prefetch_related("nodes"):
        rows.append(
            {
                "kind": "maintenance",
                "severity": "warning",
                "text": m.reason,
                "nodes": "" if m.all_nodes else ", ".join(sorted(node.name for node in m.nodes.all())),
                "all_nodes": m.all_nodes,
                "starts_at": m.starts_at,
                "ends_at": m.ends_at,
            }
        )
    return rows


def _banner_rows_kept(now: dt.datetime) -> list[dict]:
    kept = cache.get_many([BANNERS_KEY, BANNERS_VERSION_KEY])
    version, entry = kept.get(BANNERS_VERSION_KEY, 0), kept.get(BANNERS_KEY)
    if entry is not None and entry["version"] == version and entry["read_at"] <= now < entry["until"]:
        return entry["rows"]
    rows = _banner_rows(now)
    until = now + dt.timedelta(seconds=BANNERS_KEEP_S)
    cache.set(BANNERS_KEY, {"version": version, "read_at": now, "until": until, "rows": rows}, BANNERS_KEEP_S)
    return rows


def banners(*, now: dt.datetime | None = None) -> list[dict]:
    """What every page shows on top: active announcements, and maintenance from MAINTENANCE_BANNER_LEAD_H before
    its start until its end. Each: kind, severity, text, starts_at, ends_at (the template words maintenance)."""
    now = now or timezone.now()
    lead = dt.timedelta(hours=settings.MAINTENANCE_BANNER_LEAD_H)
    shown = []
    for row in _banner_rows_kept(now):
        if row["kind"] == "announcement" and row["starts_at"] <= now < row["ends_at"]:
            shown.append(row)
        elif row["kind"] == "maintenance" and row["starts_at"] <= now + lead and now < row["ends_at"]:
            shown.append({**row, "now": row["starts_at"] <= now})
    # Announcements first, newest first (the rows' order); then the windows, soonest first (the model's order).
    return shown
