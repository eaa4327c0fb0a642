"""notify(): record an event for the people it concerns, on the channels each chose, and send it after commit.

Rows are written in the caller's transaction (a rolled-back change tells nobody); the delivery task is sent when it
commits, NOTIFY_DIGEST_WINDOW_S later, and sends every pending row of that person and channel as one message, so a
burst (20 jobs ending in one sweep) is one e-mail. Without a broker (NOTIFY_SEND_FROM_PERIODIC, the embedded run)
the periodic sweep sends what is due instead. Sending never happens in the request: a slow or dead webhook
costs the worker a timeout and a retry, never a person their page.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.errors import InvalidInput, NotPermitted
from accounts.models import ChatTarget, Course, Notification, NotifyPreference, User
from accounts.notify.events import CHAT, COURSE, EMAIL, EVENTS, PERSONAL_CHANNELS, PORTAL, TEST
from accounts.notify.urls import chat_url_check
from accounts.ratelimit import rate_limit_hit

log = logging.getLogger(__name__)

DELIVER = "accounts.tasks.notify_deliver"


def enqueue(*, user_id: int | None, course_id: int | None, channel: str, countdown: float | None = None) -> None:
    """Send the delivery task now (eager: run it now). A broker that is down loses nothing: the rows stay pending
    and the periodic sweep sends them."""
    from celery import current_app

    tasks = current_app.tasks
    if DELIVER not in tasks:
        current_app.loader.import_default_modules()
    if settings.NOTIFY_SEND_FROM_PERIODIC:
        return  # the embedded run: the periodic sweep sends it, never the request
    wait = settings.NOTIFY_DIGEST_WINDOW_S if countdown is None else countdown
    try:
        current_app.tasks[DELIVER].apply_async(args=[user_id, course_id, channel], countdown=wait)
    except Exception:  # noqa: BLE001 - the broker's trouble must not reach the person who caused the event
        log.exception(
            "notification task for user %s course %s (%s) not sent; the sweep will", user_id, course_id, channel
        )


def channels_for(users: Iterable[User], event: str) -> dict[int, set[str]]:
    """Per user id, the personal channels they want `event` on (their choices over the event's defaults)."""
    users = list(users)
    defaults = set(EVENTS[event].defaults)
    chosen: dict[int, set[str]] = {user.pk: set(defaults) for user in users}
    for pref in NotifyPreference.objects.filter(user__in=users, event=event):
        (chosen[pref.user_id].add if pref.enabled else chosen[pref.user_id].discard)(pref.channel)
    return chosen


def notify(
    users: Iterable[User | None],
    event: str,
    context: dict,
    *,
    course: Course | None = None,
    already: Iterable[str] = (),
) -> int:
    """Tell `users` that `event` happened (context: JSON values the event's sentence reads); also the course's
    channel when the event goes there and `course` has one. `already`: channels the caller told itself (the portal
    notices some services post on their own). Returns how many messages were queued."""
    if event not in EVENTS:
        raise ValueError(f"unknown notification event {event!r}")
    people = list({user.pk: user for user in users if user is not None and user.is_active}.values())
    if not people and course is None:
        return 0
    skip = set(already)
    with_chat = set(ChatTarget.objects.filter(user__in=people).values_list("user_id", flat=True))
    rows = []
    wanted = channels_for(people, event)
    for user in people:
        for channel in sorted(wanted[user.pk] - skip):
            if (channel == EMAIL and not user.email) or (channel == CHAT and user.pk not in with_chat):
                continue
            rows.append(Notification(user=user, event=event, channel=channel, context=context))
    if course is not None and EVENTS[event].course_channel and ChatTarget.objects.filter(course=course).exists():
        rows.append(Notification(course=course, event=event, channel=COURSE, context=context))
    return _queue(rows)


def _queue(rows: list[Notification]) -> int:
    due = timezone.now() + dt.timedelta(seconds=settings.NOTIFY_DIGEST_WINDOW_S)
    for row in rows:
        row.due_at = due
    Notification.objects.bulk_create(rows)
    for user_id, course_id, channel in sorted({(r.user_id, r.course_id, r.channel) for r in rows}, key=str):
        transaction.on_commit(lambda u=user_id, c=course_id, ch=channel: enqueue(user_id=u, course_id=c, channel=ch))
    return len(rows)


def notify_test(*, user: User) -> list[str]:
    """A test message on every channel the person has (now, not after the digest window): which were queued. A few
    per person and window (RATE_LIMIT_NOTIFY_TEST): each is an e-mail and a chat call."""
    rate_limit_hit(user=user, action="notify_test")
    channels = [PORTAL]
    if user.email:
        channels.append(EMAIL)
    if ChatTarget.objects.filter(user=user).exists():
        channels.append(CHAT)
    with transaction.atomic():
        rows = [
            Notification(user=user, event=TEST.name, channel=channel, context={}, due_at=timezone.now())
            for channel in channels
        ]
        Notification.objects.bulk_create(rows)
        for channel in channels:
            transaction.on_commit(lambda ch=channel: enqueue(user_id=user.pk, course_id=None, channel=ch, countdown=0))
    return channels


def preferences_of(user: User) -> dict[str, dict[str, bool]]:
    """Per event, per personal channel: on or off."""
    chosen = {(pref.event, pref.channel): pref.enabled for pref in NotifyPreference.objects.filter(user=user)}
    return {
        name: {channel: chosen.get((name, channel), channel in event.defaults) for channel in PERSONAL_CHANNELS}
        for name, event in EVENTS.items()
    }


def preferences_set(*, user: User, choices: dict, chat_url: str | None = None) -> dict[str, dict[str, bool]]:
    """Save the person's choices ({event: {channel: bool}}, any subset) and, if given, their chat URL ("" removes
    it). Bad input: InvalidInput, nothing saved."""
    if not isinstance(choices, dict):
        raise InvalidInput(_("Give the choices per event."), fields={"events": _("An object: event → channel → on.")})
    clean: list[tuple[str, str, bool]] = []
    for event, channels in choices.items():
        if event not in EVENTS:
            raise InvalidInput(_("Unknown event."), fields={"events": _("No event named %(name)s.") % {"name": event}})
        if not isinstance(channels, dict):
            raise InvalidInput(
                _("Give the choices per event."), fields={"events": _("An object: event → channel → on.")}
            )
        for channel, on in channels.items():
            if channel not in PERSONAL_CHANNELS or not isinstance(on, bool):
                raise InvalidInput(
                    _("Each channel is portal, email or chat, on (true) or off (false)."),
                    fields={"events": _("Not a channel choice: %(what)s.") % {"what": f"{event}.{channel}"}},
                )
            clean.append((event, channel, on))
    url = None if chat_url is None else (chat_url_check(chat_url) if chat_url.strip() else "")
    with transaction.atomic():
        for event, channel, on in clean:
            NotifyPreference.objects.update_or_create(user=user, event=event, channel=channel, defaults={"enabled": on})
        if url == "":
            ChatTarget.objects.filter(user=user).delete()
        elif url:
            ChatTarget.objects.update_or_create(user=user, defaults={"url": url, "set_by": user})
    return preferences_of(user)


def course_channel_set(*, by: User, course: Course, url: str) -> ChatTarget | None:
    """A teacher (of the course) or an admin sets the course's channel for its reservations; "" removes it."""
    if not (by.is_lab_admin or course.teachers.filter(pk=by.pk).exists()):
        raise NotPermitted(_("Only the course's teachers and admins set its channel."))
    if not url.strip():
        ChatTarget.objects.filter(course=course).delete()
        return None
    target, _created = ChatTarget.objects.update_or_create(
        course=course, defaults={"url": chat_url_check(url), "set_by": by}
    )
    return target
