"""Reads of the audit trail: who sees which entries, the filters of the pages and the API, the CSV rows."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator

from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from accounts.dates import date_in_range
from accounts.errors import InvalidInput, NotPermitted
from accounts.models import AuditEntry, User

AUDIT_FOR_STAFF = gettext_noop("The audit trail is for admins, and for teachers about their courses.")
CSV_HEADER = (
    "at",
    "actor",
    "action",
    "target_type",
    "target_id",
    "target",
    "course",
    "before",
    "after",
    "reason",
    "request_id",
)


def audit_visible_to(user: User) -> QuerySet[AuditEntry]:
    """Admins every entry; teachers those of the courses they teach; anyone else: 403."""
    rows = AuditEntry.objects.select_related("course")
    if user.is_authenticated and user.is_lab_admin:
        return rows
    if user.is_authenticated and user.is_teacher:
        return rows.filter(course__teachers=user)
    raise NotPermitted(_(AUDIT_FOR_STAFF))


def _moment(raw: str, field: str, *, end: bool) -> dt.datetime | None:
    """An ISO time, or a day (its start for `from`, the next day's start for `to`) in the lab's zone."""
    raw = (raw or "").strip()
    if not raw:
        return None
    sentence = _("Give %(field)s as a date (YYYY-MM-DD) or an ISO time.") % {"field": field}
    try:
        if len(raw) == 10:
            day = dt.date.fromisoformat(raw)
            moment = dt.datetime.combine(day + dt.timedelta(days=1 if end else 0), dt.time())
        else:
            moment = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except (ValueError, OverflowError):
        raise InvalidInput(sentence, fields={field: sentence}) from None
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    if not date_in_range(moment):
        raise InvalidInput(sentence, fields={field: sentence})
    return moment


@dataclasses.dataclass(frozen=True)
class AuditFilter:
    actor: str = ""
    target: str = ""
    action: str = ""
    start: dt.datetime | None = None
    end: dt.datetime | None = None

    def as_query(self) -> dict[str, str]:
        values = {"actor": self.actor, "target": self.target, "action": self.action}
        if self.start:
            values["from"] = self.start.isoformat()
        if self.end:
            values["to"] = self.end.isoformat()
        return {key: value for key, value in values.items() if value}


def audit_filter_from(params, *, blank_ok: bool = True) -> AuditFilter:
    """The filters of a query string (?actor=&target=&action=&from=&to=); a bad time is a 400 naming it (and, unless
    `blank_ok` — a page's form sends its empty fields —, a time given empty)."""

    def text(name: str) -> str:
        return (params.get(name) or "").strip()[:200]

    for name in ("from", "to"):
        if not blank_ok and name in params and not text(name):
            sentence = _("Give %(field)s as a date (YYYY-MM-DD) or an ISO time.") % {"field": name}
            raise InvalidInput(sentence, fields={name: sentence})

    return AuditFilter(
        actor=text("actor"),
        target=text("target"),
        action=text("action"),
        start=_moment(text("from"), "from", end=False),
        end=_moment(text("to"), "to", end=True),
    )


def audit_entries(user: User, flt: AuditFilter) -> QuerySet[AuditEntry]:
    """The entries `user` may see that match: actor by user name (exact, any case; `system` for the lab itself),
    target as `type:id` (`node:3`, `user:12`) or words of its label, action exact or by its first part (`node`
    gives every node.*), time from (inclusive) to (exclusive)."""
    rows = audit_visible_to(user)
    if flt.actor:
        rows = rows.filter(actor__isnull=True) if flt.actor == "system" else rows.filter(actor_name__iexact=flt.actor)
    if flt.target:
        kind, sep, ident = flt.target.partition(":")
        if sep and kind and ident:
            rows = rows.filter(target_type=kind, target_id=ident)
        else:
            rows = rows.filter(Q(target_label__icontains=flt.target) | Q(target_type=flt.target))
    if flt.action:
        rows = rows.filter(Q(action=flt.action) | Q(action__startswith=flt.action.rstrip(".") + "."))
    if flt.start:
        rows = rows.filter(at__gte=flt.start)
    if flt.end:
        rows = rows.filter(at__lt=flt.end)
    return rows


def entry_out(entry: AuditEntry) -> dict:
    return {
        "id": entry.pk,
        "at": entry.at.isoformat(),
        "actor": entry.actor_name or None,
        "action": entry.action,
        "target": {"type": entry.target_type, "id": entry.target_id, "label": entry.target_label},
        "course": entry.course.code if entry.course_id else None,
        "before": entry.before,
        "after": entry.after,
        "reason": entry.reason,
        "request_id": entry.request_id,
    }


def audit_csv_rows(rows: QuerySet[AuditEntry]) -> Iterator[list]:
    import json

    for entry in rows.iterator(chunk_size=500):
        yield [
            entry.at.isoformat(),
            entry.actor_name or "system",
            entry.action,
            entry.target_type,
            entry.target_id,
            entry.target_label,
            entry.course.code if entry.course_id else "",
            json.dumps(entry.before, ensure_ascii=False, sort_keys=True),
            json.dumps(entry.after, ensure_ascii=False, sort_keys=True),
            entry.reason,
            entry.request_id,
        ]
