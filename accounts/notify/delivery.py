"""The delivery task's work: claim a recipient's pending rows on one channel, send them as one message (a digest
when there are several), and mark them sent; on a failure put them back with the next try NOTIFY_RETRY_BASE_S * 2**n
later, and after NOTIFY_RETRIES mark them failed (the account page lists failures). Safe to run twice: the claim
is a conditional UPDATE (`WHERE state = 'pending'`), so two workers never send the same row."""

from __future__ import annotations

import datetime as dt
import logging
import smtplib
import uuid
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts.errors import InvalidInput
from accounts.locale import speaking
from accounts.models import ChatTarget, DeliveryState, NoticeLevel, Notification, User
from accounts.notify.events import CHAT, COURSE, EMAIL, PORTAL, render
from accounts.notify.urls import HOSTED_SCHEMES, VENDOR_SCHEMES, check_host
from accounts.services import notice_send

log = logging.getLogger(__name__)

# Rows a worker claimed and never finished (killed mid-send) go back to pending after this long.
STALE_CLAIM = dt.timedelta(minutes=15)


class DeliveryFailed(Exception):
    pass


def _compose(rows: list[Notification]) -> tuple[str, str]:
    """Subject and body in the active language."""
    lines = [render(row.event, row.context) for row in rows]
    if len(lines) == 1:
        return f"[{settings.LAB_NAME}] {lines[0]}"[:200], lines[0] + "\n"
    subject = ngettext("[%(lab)s] %(count)s notification", "[%(lab)s] %(count)s notifications", len(lines)) % {
        "lab": settings.LAB_NAME,
        "count": len(lines),
    }
    return subject, "\n".join(f"- {line}" for line in lines) + "\n"


def _send_email(user: User, subject: str, body: str) -> None:
    message = EmailMessage(subject=subject, body=body, from_email=settings.DEFAULT_FROM_EMAIL, to=[user.email])
    try:
        message.send(fail_silently=False)
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryFailed(_("The mail server did not take the message (%(error)s).") % {"error": exc}) from exc


def _with_timeouts(url: str) -> str:
    timeout = settings.NOTIFY_WEBHOOK_TIMEOUT_S
    return f"{url}{'&' if '?' in url else '?'}cto={timeout}&rto={timeout}"


def send_chat(url: str, subject: str, body: str) -> None:
    """One apprise call (the only place that talks to chat services); DeliveryFailed with apprise's own words."""
    import apprise

    scheme = url.split(":", 1)[0].lower()
    if scheme not in VENDOR_SCHEMES | HOSTED_SCHEMES or apprise.Apprise.instantiate(url) is None:
        raise DeliveryFailed(_("This address is not one the portal can send to."))
    if scheme in HOSTED_SCHEMES:
        try:
            check_host(urlsplit(url).hostname or "")
        except InvalidInput as exc:  # the name resolves inside the lab now: refuse, as when it was saved
            raise DeliveryFailed(exc.message) from exc
    sender = apprise.Apprise()
    sender.add(_with_timeouts(url))
    with apprise.LogCapture(level=logging.WARNING, fmt="%(message)s") as captured:
        ok = sender.notify(title=subject, body=body)
    if not ok:
        said = " ".join(captured.getvalue().split())[-200:]
        raise DeliveryFailed(_("The chat service did not take the message: %(error)s") % {"error": said or "?"})


def _send(rows: list[Notification], channel: str, user: User | None, target_url: str | None) -> None:
    if channel == PORTAL:
        with speaking(user):
            text = "\n".join(render(row.event, row.context) for row in rows)
            level = (
                NoticeLevel.WARNING
                if any(r.event.endswith(("failed", "cull", "session_end")) for r in rows)
                else NoticeLevel.INFO
            )
            notice_send(user=user, text=text, level=level)
        return
    if channel == EMAIL:
        with speaking(user):
            subject, body = _compose(rows)
            body += "\n" + _("You can choose what you are told, and how, on your account page.") + "\n"
        _send_email(user, subject, body)
        return
    if not target_url:
        raise DeliveryFailed(_("No chat address is set."))
    with speaking(user):  # a course's channel (no user) speaks the lab's language
        subject, body = _compose(rows)
    send_chat(target_url, subject, body)


def _claim(user_id: int | None, course_id: int | None, channel: str, now: dt.datetime) -> list[Notification]:
    base = Notification.objects.filter(user_id=user_id, course_id=course_id, channel=channel)
    base.filter(state=DeliveryState.SENDING, created_at__lt=now - STALE_CLAIM).update(state=DeliveryState.PENDING)
    claim = uuid.uuid4().hex
    if not base.filter(state=DeliveryState.PENDING).update(state=DeliveryState.SENDING, claim=claim):
        return []
    return list(Notification.objects.filter(claim=claim, state=DeliveryState.SENDING).order_by("created_at", "id"))


def deliver(*, user_id: int | None, course_id: int | None, channel: str, now: dt.datetime | None = None) -> dict:
    """Send what is pending for this recipient and channel. Returns {"sent": n, "retry_in": s | None, "failed": n}."""
    now = now or timezone.now()
    rows = _claim(user_id, course_id, channel, now)
    if not rows:
        return {"sent": 0, "retry_in": None, "failed": 0}
    ids = [row.pk for row in rows]
    user = User.objects.filter(pk=user_id).first() if user_id else None
    target = None
    if channel in (CHAT, COURSE):
        found = (
            ChatTarget.objects.filter(user_id=user_id) if user_id else ChatTarget.objects.filter(course_id=course_id)
        )
        target = found.values_list("url", flat=True).first()
    try:
        if user_id and (user is None or not user.is_active):
            raise DeliveryFailed(_("The account is closed."))
        _send(rows, channel, user, target)
    except DeliveryFailed as exc:
        return _failed(ids, str(exc), rows)
    except Exception as exc:  # noqa: BLE001 - an unexpected error still counts as a try, never loses the rows
        log.exception("notification delivery %s failed", ids)
        return _failed(ids, f"{type(exc).__name__}: {exc}", rows)
    Notification.objects.filter(pk__in=ids).update(state=DeliveryState.SENT, sent_at=now, last_error="", claim="")
    return {"sent": len(ids), "retry_in": None, "failed": 0}


def _failed(ids: list[int], error: str, rows: list[Notification]) -> dict:
    attempts = max(row.attempts for row in rows) + 1
    final = attempts > settings.NOTIFY_RETRIES
    with transaction.atomic():
        wait = settings.NOTIFY_RETRY_BASE_S * 2 ** (attempts - 1)
        Notification.objects.filter(pk__in=ids).update(
            attempts=attempts,
            last_error=error[:300],
            claim="",
            state=DeliveryState.FAILED if final else DeliveryState.PENDING,
            due_at=timezone.now() + dt.timedelta(seconds=wait),
        )
    log.warning("notifications %s: try %s failed: %s", ids, attempts, error)
    if final:
        return {"sent": 0, "retry_in": None, "failed": len(ids)}
    return {"sent": 0, "retry_in": wait, "failed": 0}


def pending_recipients(*, now: dt.datetime | None = None) -> list[tuple[int | None, int | None, str]]:
    """Recipients with rows due (their digest window or backoff is over): the sweep sends them. With a broker their
    own task usually has; a claim makes sure nothing goes twice."""
    now = now or timezone.now()
    due = Notification.objects.filter(state=DeliveryState.PENDING, due_at__lte=now)
    return list(due.order_by().values_list("user_id", "course_id", "channel").distinct())
