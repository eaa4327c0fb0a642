"""Writes: an admin schedules maintenance or posts an announcement. Checked here for pages and API alike."""

from __future__ import annotations

import datetime as dt

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from accounts.errors import InvalidInput
from accounts.models import User
from accounts.permissions import require_admin
from labs.models import Announcement, Maintenance, Node, Severity

LONGEST = dt.timedelta(days=31)


def _window(starts_at: dt.datetime, ends_at: dt.datetime, now: dt.datetime) -> None:
    if ends_at <= starts_at:
        raise InvalidInput(_("The end must come after the start."), fields={"ends_at": _("After the start.")})
    if ends_at <= now:
        raise InvalidInput(_("The end must be in the future."), fields={"ends_at": _("In the future.")})
    if ends_at - starts_at > LONGEST:
        raise InvalidInput(_("At most 31 days at once."), fields={"ends_at": _("At most 31 days after the start.")})
    if starts_at > now + dt.timedelta(days=366):
        raise InvalidInput(_("At most a year ahead."), fields={"starts_at": _("At most a year ahead.")})


def maintenance_create(
    *,
    by: User,
    starts_at: dt.datetime,
    ends_at: dt.datetime,
    reason: str,
    nodes: list[str] | None = None,
    all_nodes: bool = False,
    now: dt.datetime | None = None,
) -> Maintenance:
    """Schedule maintenance of the named nodes, or of every node (`all_nodes`): exactly one of the two."""
    require_admin(by, gettext_noop("schedule maintenance"))
    now = now or timezone.now()
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput(_("Say why, for the people whose work it stops."), fields={"reason": _("Required.")})
    names = sorted(set(nodes or []))
    if bool(names) == bool(all_nodes):
        raise InvalidInput(
            _("Give either the nodes or all: true."), fields={"nodes": _("Either node names or all: true.")}
        )
    _window(starts_at, ends_at, now)
    found = list(Node.objects.filter(name__in=names)) if names else []
    missing = sorted(set(names) - {node.name for node in found})
    if missing:
        raise InvalidInput(
            _("No such node: %(names)s.") % {"names": ", ".join(missing[:5])},
            fields={"nodes": _("No such node: %(names)s.") % {"names": ", ".join(missing[:5])}},
        )
    with transaction.atomic():
        maintenance = Maintenance.objects.create(
            starts_at=starts_at, ends_at=ends_at, reason=reason[:300], all_nodes=all_nodes, created_by=by
        )
        maintenance.nodes.set(found)
    return maintenance


def announcement_create(
    *,
    by: User,
    text: str,
    ends_at: dt.datetime,
    severity: str = Severity.INFO,
    starts_at: dt.datetime | None = None,
    now: dt.datetime | None = None,
) -> Announcement:
    """A banner on every page from `starts_at` (now) until `ends_at`."""
    require_admin(by, gettext_noop("post announcements"))
    now = now or timezone.now()
    text = (text or "").strip()
    if not text or len(text) > 300:
        raise InvalidInput(
            _("Write the announcement (at most 300 characters)."), fields={"text": _("1 to 300 characters.")}
        )
    if severity not in Severity.values:
        raise InvalidInput(_("Choose a severity from the list."), fields={"severity": _("info, warning or critical.")})
    starts_at = starts_at or now
    _window(starts_at, ends_at, now)
    return Announcement.objects.create(
        text=text, severity=severity, starts_at=starts_at, ends_at=ends_at, created_by=by
    )
