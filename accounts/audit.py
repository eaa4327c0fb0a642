"""The audit trail's one writer (Zulip's RealmAuditLog pattern): a service that changes roles, quotas, budgets,
courses' members, reservations' decisions, nodes, tokens, sign-in mappings, profiles or requests for more calls
`record(...)` inside its own transaction, so the entry and the change are committed (or rolled back) together —
never from model signals, which bulk updates skip.

The request id comes from a context variable the web middleware sets for each request (portal.web.middleware:
RequestIdMiddleware, also answered as X-Request-ID); work outside a request (Celery, commands) has none.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import decimal
import logging
import re
import uuid
from collections.abc import Iterable
from typing import Any

from django.db import models, transaction
from django.dispatch import receiver
from django.utils import timezone

from accounts.models import AuditEntry, Course, User
from accounts.models.people import tokens_revoked_by_password

log = logging.getLogger("accounts.audit")

_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("portal_request_id", default="")
# The request being answered: its person (read when an entry is written, after DRF's authentication has set
# request.user) is the actor of services that take no `by`.
_request: contextvars.ContextVar[Any] = contextvars.ContextVar("portal_request", default=None)
CURRENT = object()  # record(actor=CURRENT): whoever the request being answered is signed in as (None outside one)
REQUEST_ID_SHAPE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


def request_id_from(header: str | None) -> str:
    """The id a request carries (a proxy's X-Request-ID, when it looks like one), else a new one."""
    if header and REQUEST_ID_SHAPE.match(header):
        return header
    return uuid.uuid4().hex


def request_begin(request: Any, request_id: str) -> tuple[contextvars.Token, contextvars.Token]:
    return _request_id.set(request_id), _request.set(request)


def request_end(tokens: tuple[contextvars.Token, contextvars.Token]) -> None:
    _request_id.reset(tokens[0])
    _request.reset(tokens[1])


def current_actor() -> User | None:
    request = _request.get()
    user = getattr(request, "user", None) if request is not None else None
    return user if user is not None and user.is_authenticated else None


def current_request_id() -> str:
    return _request_id.get()


def _plain(value: Any) -> Any:
    """A value as JSON can hold it: numbers stay numbers where exact, dates as ISO text, rows by their id."""
    if isinstance(value, decimal.Decimal):
        # One spelling per number: 30 read back from the database is 30.0, and must not count as a change.
        return format(value.normalize(), "f") if value.is_finite() else str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, models.Model):
        return value.pk
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def snapshot(obj: models.Model | None, fields: Iterable[str]) -> dict[str, Any]:
    """The named fields of a row as JSON values ({} for no row): what `before`/`after` hold."""
    if obj is None:
        return {}
    values = {}
    for name in fields:
        field = obj._meta.get_field(name)
        values[name] = _plain(getattr(obj, field.attname))
    return values


def changed(before: dict[str, Any], after: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Only the fields whose value differs (a field on one side only counts as changed)."""
    keys = [key for key in dict.fromkeys([*before, *after]) if before.get(key) != after.get(key)]
    return {k: before[k] for k in keys if k in before}, {k: after[k] for k in keys if k in after}


def target_type_of(obj: models.Model) -> str:
    return obj._meta.model_name


_ready = False


def _table_ready() -> bool:
    """Whether the database has the audit trail yet. Before the migration that adds it, the one write that runs is
    what migration 0009's refusal asks for (`portal_user <name> --rename`): it goes ahead and leaves no entry, there
    being nowhere to write one. Known once true, so it costs one look per process."""
    global _ready
    if not _ready:
        connection = transaction.get_connection()
        with connection.cursor() as cursor:
            _ready = AuditEntry._meta.db_table in connection.introspection.table_names(cursor)
        if not _ready:
            log.warning("audit: the audit trail's table is not there yet (migrations pending); nothing recorded")
    return _ready


def record(
    *,
    actor: Any = CURRENT,
    action: str,
    target: models.Model | None = None,
    target_type: str = "",
    target_id: str | int = "",
    target_label: str = "",
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    reason: str = "",
    course: Course | int | None = None,
    only_changes: bool = True,
    at: dt.datetime | None = None,
) -> AuditEntry | None:
    """Write one audit entry in the caller's transaction. With `only_changes` (the default) before/after keep only
    the fields that differ, and nothing is written when no field does (a call that changed nothing leaves no entry);
    pass only_changes=False for events without fields (a token revoked, a drain). `actor` None: the lab itself;
    left out: the person the current request is signed in as (None outside a request)."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("accounts.audit.record runs inside the transaction of the change it records")
    before = _plain(before or {})
    after = _plain(after or {})
    if only_changes:
        before, after = changed(before, after)
        if not before and not after:
            return None
    if target is not None:
        target_type = target_type or target_type_of(target)
        target_id = target_id or target.pk or ""
        target_label = target_label or str(getattr(target, "username", "") or target)
    if actor is CURRENT:
        actor = current_actor()
    if actor is not None and not getattr(actor, "is_authenticated", False):
        actor = None
    if not _table_ready():
        return None
    return AuditEntry.objects.create(
        at=at or timezone.now(),
        actor=actor,
        actor_name=actor.username if actor is not None else "",
        action=action,
        target_type=target_type[:40],
        target_id=str(target_id)[:64],
        target_label=str(target_label)[:200],
        course_id=course.pk if isinstance(course, Course) else course,
        before=before,
        after=after,
        reason=(reason or "")[:500],
        request_id=current_request_id(),
    )


def audit_prune(*, now: dt.datetime | None = None) -> int:
    """The retention sweep (AUDIT_RETENTION_DAYS; 0 keeps everything): how many entries it removed. The one delete
    of entries the portal has."""
    from django.conf import settings

    days = settings.AUDIT_RETENTION_DAYS
    if not days:
        return 0
    cutoff = (now or timezone.now()) - dt.timedelta(days=days)
    removed, _ = AuditEntry.objects.filter(at__lt=cutoff).delete()
    return removed


@receiver(tokens_revoked_by_password)
def _tokens_revoked_by_password(sender, user: User, count: int, **kwargs) -> None:
    """A new password's revocation of the person's API tokens, by whoever set it (the person on the password page, an
    admin in the console, the lab for a command)."""
    record(
        action="token.revoke_all",
        target=user,
        before={"live_tokens": count},
        after={"live_tokens": 0},
        reason="A new password.",
    )
