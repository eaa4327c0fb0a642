"""Telling people: `notify(users, event, context, *, course=None)` records an event for each person on the channels
they chose (in the portal, e-mail, chat through apprise) and the course's channel, and sends it after commit from a
Celery task (digests, retries with backoff, failures shown on the account page). Events: accounts/notify/events.py."""

from accounts.notify.events import CHAT, EMAIL, EVENTS, PORTAL
from accounts.notify.services import notify

__all__ = ["CHAT", "EMAIL", "EVENTS", "PORTAL", "notify"]
