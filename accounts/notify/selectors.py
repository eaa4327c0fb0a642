"""Reads for the account page and the API: a person's choices, chat address, failed deliveries and course channels."""

from __future__ import annotations

from accounts.models import ChatTarget, Course, DeliveryState, Notification, User
from accounts.notify.events import EVENTS, PERSONAL_CHANNELS, render
from accounts.notify.services import preferences_of


def chat_url_of(user: User) -> str:
    return ChatTarget.objects.filter(user=user).values_list("url", flat=True).first() or ""


def failures_of(user: User, *, limit: int = 10) -> list[dict]:
    """The person's notifications that could not be delivered after every retry, newest first (in their words)."""
    rows = Notification.objects.filter(user=user, state=DeliveryState.FAILED).order_by("-created_at", "-id")[:limit]
    return [
        {
            "event": row.event,
            "channel": row.channel,
            "text": render(row.event, row.context),
            "error": row.last_error,
            "at": row.created_at,
        }
        for row in rows
    ]


def notify_overview(user: User) -> dict:
    chosen = preferences_of(user)
    return {
        "events": [
            {"event": name, "label": str(event.label), "channels": chosen[name]} for name, event in EVENTS.items()
        ],
        "channels": list(PERSONAL_CHANNELS),
        "chat_url": chat_url_of(user),
        "failures": failures_of(user),
    }


def course_channels_for(user: User) -> list[dict]:
    """The courses whose channel this person may set (those they teach; admins none here: they use the console)."""
    if not user.is_teacher:
        return []
    courses = Course.objects.filter(teachers=user).order_by("code")
    urls = dict(ChatTarget.objects.filter(course__in=courses).values_list("course_id", "url"))
    return [{"code": course.code, "name": course.name, "url": urls.get(course.pk, "")} for course in courses]
