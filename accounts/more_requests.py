"""Requests for more: a person asks for a higher weekly GPU-hour quota or extra GPU-hours until a day; the course's
teacher (course work) or an admin approves (perhaps changing the amount or the end) or refuses with a sentence. The
approved request is the override; the quota and budget checks honour it until `granted_until`, and the sweep
(accounts.tasks.more_requests_expire) ends it, with a notice the day before. Each step is an audit entry."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts import audit
from accounts.errors import Conflict, InvalidInput, NotFound, NotPermitted
from accounts.locale import speaking
from accounts.models import Course, MoreRequest, NoticeLevel, RequestKind, RequestStatus, User
from accounts.more_requests_selectors import deciders_of, may_decide, more_requests_visible_to
from accounts.notify import PORTAL, notify
from accounts.services import notice_send

AUDIT_FIELDS = ("status", "kind", "amount", "until", "granted_amount", "granted_until", "decision_reason")
WARN_BEFORE = dt.timedelta(days=1)


def _amount(value: Any, field: str = "amount") -> Decimal:
    """A positive number of GPU-hours up to REQUESTS_MAX_GPU_HOURS, with one decimal at most."""
    limit = settings.REQUESTS_MAX_GPU_HOURS
    sentence = _("Ask for between 0.1 and %(max)s GPU-hours.") % {"max": limit}
    if isinstance(value, bool):
        raise InvalidInput(sentence, fields={field: sentence})
    try:
        amount = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        raise InvalidInput(sentence, fields={field: _("Not a number.")}) from None
    if not amount.is_finite() or amount < Decimal("0.1") or amount > limit:
        raise InvalidInput(sentence, fields={field: sentence})
    return amount.quantize(Decimal("0.1"))


def _until(value: Any, *, now: dt.datetime, field: str = "until") -> dt.datetime:
    """A moment after now and at most REQUESTS_MAX_DAYS ahead (a bare day means its end in the lab's zone)."""
    days = settings.REQUESTS_MAX_DAYS
    sentence = _("Choose an end after now and at most %(days)s days ahead.") % {"days": days}
    moment = value
    if isinstance(value, str):
        text = value.strip()
        try:
            moment = dt.datetime.fromisoformat(text)
        except ValueError:
            raise InvalidInput(sentence, fields={field: _("Not a date.")}) from None
        if len(text) == 10:  # a day: until its end
            moment = moment.replace(hour=23, minute=59)
    elif isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        moment = dt.datetime.combine(value, dt.time(23, 59))
    if not isinstance(moment, dt.datetime):
        raise InvalidInput(sentence, fields={field: _("Not a date.")})
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    if moment <= now or moment > now + dt.timedelta(days=days):
        raise InvalidInput(sentence, fields={field: sentence})
    return moment


def _tell(user: User, text_of, ref: str, level: str = NoticeLevel.INFO) -> None:
    with speaking(user):
        notice_send(user=user, text=text_of(), ref=ref, level=level)


def _what(request: MoreRequest, amount: Decimal) -> str:
    if request.kind == RequestKind.QUOTA:
        return _("a weekly quota of %(n)s GPU-hours") % {"n": amount}
    return _("%(n)s extra GPU-hours") % {"n": amount}


@transaction.atomic
def more_request_create(
    *,
    user: User,
    kind: str,
    amount: Any,
    until: Any,
    reason: str,
    course: Course | None = None,
    now: dt.datetime | None = None,
) -> MoreRequest:
    """A person asks for more. Refused with a sentence (400): an unknown kind, an amount that is not a positive
    number up to REQUESTS_MAX_GPU_HOURS, an end in the past or too far ahead, no reason, a course they are not in."""
    now = now or timezone.now()
    if kind not in RequestKind.values:
        sentence = _("Ask for a quota raise or for extra GPU-hours.")
        raise InvalidInput(sentence, fields={"kind": sentence})
    amount = _amount(amount)
    until = _until(until, now=now)
    reason = (reason or "").strip()
    if not reason:
        sentence = _("Say in a sentence what the GPU time is for.")
        raise InvalidInput(sentence, fields={"reason": sentence})
    if course is not None and not (
        course.enrollments.filter(user=user).exists() or course.teachers.filter(pk=user.pk).exists()
    ):
        sentence = _("You can ask for a course's work only in a course you are in.")
        raise InvalidInput(sentence, fields={"course": sentence})
    request = MoreRequest.objects.create(
        user=user, kind=kind, amount=amount, until=until, reason=reason[:500], course=course
    )
    audit.record(
        actor=user,
        action="request.create",
        target=request,
        target_label=f"#{request.pk} {user.username}",
        after=audit.snapshot(request, ("kind", "amount", "until", "reason")),
        course=course,
    )
    for decider in deciders_of(request):
        _tell(
            decider,
            lambda: (
                _("%(who)s asks for %(what)s until %(until)s: “%(reason)s”.")
                % {
                    "who": user.username,
                    "what": _what(request, amount),
                    "until": timezone.localtime(until).strftime("%Y-%m-%d %H:%M"),
                    "reason": request.reason,
                }
            ),
            ref=f"more-request:{request.pk}:asked",
        )
    return request


@transaction.atomic
def more_request_decide(
    *,
    by: User,
    request_id: int,
    decision: str,
    reason: str = "",
    amount: Any = None,
    until: Any = None,
    now: dt.datetime | None = None,
) -> MoreRequest:
    """Approve (optionally with another amount or end) or refuse (a sentence is required) a pending request.

    Someone who may not see it: 404; who may see but not decide it (their own; a teacher's request to an admin): 403;
    decided already: 409."""
    now = now or timezone.now()
    if not more_requests_visible_to(by).filter(pk=request_id).exists():
        raise NotFound(_("No such request."))
    request = MoreRequest.objects.select_for_update(of=("self",)).select_related("user", "course").get(pk=request_id)
    if request.user_id == by.pk:
        raise NotPermitted(_("You cannot decide your own request; a teacher of the course or an admin does."))
    if not may_decide(by, request):
        raise NotPermitted(_("Only a teacher of the request's course or an admin may decide it."))
    if request.status != RequestStatus.PENDING:
        raise Conflict(_("This request is already decided (%(status)s).") % {"status": request.get_status_display()})
    reason = (reason or "").strip()
    before = audit.snapshot(request, AUDIT_FIELDS)
    if decision == "approve":
        request.granted_amount = _amount(amount) if amount not in (None, "") else request.amount
        request.granted_until = _until(until, now=now) if until not in (None, "") else request.until
        if request.granted_until <= now:
            request.granted_until = _until(request.granted_until, now=now)  # asked for a time already past: 400
        request.status = RequestStatus.APPROVED
    elif decision == "refuse":
        if not reason:
            sentence = _("Say in a sentence why the request is refused.")
            raise InvalidInput(sentence, fields={"reason": sentence})
        request.status = RequestStatus.REFUSED
    else:
        sentence = _("Decide with approve or refuse.")
        raise InvalidInput(sentence, fields={"decision": sentence})
    request.decided_by, request.decided_at, request.decision_reason = by, now, reason[:500]
    request.save()
    audit.record(
        actor=by,
        action=f"request.{decision}",
        target=request,
        target_label=f"#{request.pk} {request.user.username}",
        before=before,
        after=audit.snapshot(request, AUDIT_FIELDS),
        reason=reason,
        course=request.course_id,
    )
    if decision == "approve":

        def text() -> str:
            return _("Your request was approved by %(who)s: %(what)s until %(until)s.") % {
                "who": by.username,
                "what": _what(request, request.granted_amount),
                "until": timezone.localtime(request.granted_until).strftime("%Y-%m-%d %H:%M"),
            }
    else:

        def text() -> str:
            return _("Your request for %(what)s was refused by %(who)s: %(reason)s") % {
                "what": _what(request, request.amount),
                "who": by.username,
                "reason": reason,
            }

    _tell(request.user, text, ref=f"more-request:{request.pk}:decided")
    # E-mail or chat too, as the person chose (the portal notice above is already sent).
    approved = request.status == RequestStatus.APPROVED
    notify(
        [request.user],
        "request.decided",
        {
            "kind": request.kind,
            "amount": str(request.granted_amount if approved else request.amount),
            "decision": "approved" if approved else "refused",
            "reason": reason,
        },
        already=(PORTAL,),
    )
    return request


def more_requests_expire(*, now: dt.datetime | None = None) -> dict[str, int]:
    """The sweep: overrides that end within a day are announced once; those whose time is up end (status expired,
    with an audit entry by the lab itself). The checks stop honouring an override at its end even before this runs."""
    now = now or timezone.now()
    warned = ended = 0
    soon = MoreRequest.objects.filter(
        status=RequestStatus.APPROVED,
        warned_at__isnull=True,
        granted_until__gt=now,
        granted_until__lte=now + WARN_BEFORE,
    )
    for pk in soon.values_list("pk", flat=True):
        with transaction.atomic():
            request = MoreRequest.objects.select_for_update().filter(pk=pk, warned_at__isnull=True).first()
            if request is None:
                continue
            request.warned_at = now
            request.save(update_fields=["warned_at"])
            _tell(
                request.user,
                lambda request=request: (
                    _("Your %(what)s ends on %(until)s; ask again if you still need it.")
                    % {
                        "what": _what(request, request.in_force_amount),
                        "until": timezone.localtime(request.granted_until).strftime("%Y-%m-%d %H:%M"),
                    }
                ),
                ref=f"more-request:{request.pk}:ending",
                level=NoticeLevel.WARNING,
            )
            warned += 1
    due = MoreRequest.objects.filter(status=RequestStatus.APPROVED, granted_until__lte=now)
    for pk in due.values_list("pk", flat=True):
        with transaction.atomic():
            request = MoreRequest.objects.select_for_update().filter(pk=pk, status=RequestStatus.APPROVED).first()
            if request is None:
                continue
            request.status = RequestStatus.EXPIRED
            request.save(update_fields=["status"])
            audit.record(
                actor=None,
                action="request.expire",
                target=request,
                target_label=f"#{request.pk} {request.user.username}",
                before={"status": RequestStatus.APPROVED},
                after={"status": RequestStatus.EXPIRED},
                course=request.course_id,
            )
            _tell(
                request.user,
                lambda request=request: (
                    _("Your %(what)s has ended.") % {"what": _what(request, request.in_force_amount)}
                ),
                ref=f"more-request:{request.pk}:ended",
            )
            ended += 1
    return {"warned": warned, "ended": ended}
