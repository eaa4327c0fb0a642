"""The events people can be told about: a label, the channels on by default, and the sentence, rendered when the
message is sent (in the recipient's language, `speaking(person)`) from the event's context (plain JSON values;
moments as ISO strings, shown in the lab's zone)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.timefmt import fmt_datetime

PORTAL, EMAIL, CHAT, COURSE = "portal", "email", "chat", "course"
PERSONAL_CHANNELS = (PORTAL, EMAIL, CHAT)


def _at(value: str | None) -> str:
    if not value:
        return ""
    try:
        return fmt_datetime(dt.datetime.fromisoformat(value))
    except ValueError:
        return value


def _request_what(c: dict) -> str:
    """What a request for more asked or was granted, in the reader's language (accounts.more_requests says the same)."""
    n = c.get("amount", "")
    if c.get("kind") == "quota":
        return _("a weekly quota of %(n)s GPU-hours") % {"n": n}
    return _("%(n)s extra GPU-hours") % {"n": n}


def _decision(c: dict) -> str:
    return {"approved": _("approved"), "refused": _("refused")}.get(c.get("decision", ""), c.get("decision", ""))


@dataclasses.dataclass(frozen=True)
class Event:
    name: str
    label: object  # a lazy translation
    defaults: tuple[str, ...]
    sentence: Callable[[dict], str]
    # Also to the course's channel (ChatTarget of the course), when notify() is given the course.
    course_channel: bool = False


EVENTS: dict[str, Event] = {
    event.name: event
    for event in [
        Event(
            "job.started",
            gettext_lazy("A job of mine started"),
            (),
            lambda c: _("Your job “%(name)s” (#%(id)s) started on %(detail)s.") % c,
        ),
        Event(
            "job.succeeded",
            gettext_lazy("A job of mine succeeded"),
            (EMAIL,),
            lambda c: _("Your job “%(name)s” (#%(id)s) finished.") % c,
        ),
        Event(
            "job.failed",
            gettext_lazy("A job of mine failed"),
            (EMAIL,),
            lambda c: _("Your job “%(name)s” (#%(id)s) failed: %(detail)s") % c,
        ),
        Event(
            "job.preempted",
            gettext_lazy("A job of mine was preempted and queued again"),
            (EMAIL,),  # the drain or the reservation that stopped it posts its own notice in the portal
            lambda c: _("Your job “%(name)s” (#%(id)s) was stopped and queued again: %(detail)s") % c,
        ),
        Event(
            "job.stuck",
            gettext_lazy("A job of mine waits longer than its estimate"),
            (PORTAL,),
            lambda c: _("Your job “%(name)s” (#%(id)s) is still waiting, longer than estimated: %(detail)s") % c,
        ),
        Event(
            "notebook.cull",
            gettext_lazy("A notebook of mine is about to be stopped for being idle"),
            (PORTAL,),
            lambda c: (
                _("Your notebook “%(name)s” looks idle and will be stopped at %(at)s.")
                % {"name": c.get("name", ""), "at": _at(c.get("at"))}
            ),
        ),
        Event(
            "notebook.session_end",
            gettext_lazy("A notebook of mine reaches its session limit"),
            (PORTAL,),
            lambda c: (
                _("Your notebook “%(name)s” ends at %(at)s.") % {"name": c.get("name", ""), "at": _at(c.get("at"))}
            ),
        ),
        Event(
            "reservation.approved",
            gettext_lazy("My reservation was approved"),
            (PORTAL, EMAIL),
            lambda c: (
                _("The reservation “%(title)s” (%(at)s) was approved.")
                % {"title": c.get("title", ""), "at": _at(c.get("at"))}
            ),
            course_channel=True,
        ),
        Event(
            "reservation.rejected",
            gettext_lazy("My reservation was rejected"),
            (PORTAL, EMAIL),
            lambda c: (
                _("The reservation “%(title)s” was rejected: %(reason)s")
                % {"title": c.get("title", ""), "reason": c.get("reason", "")}
            ),
        ),
        Event(
            "reservation.starting",
            gettext_lazy("My reservation starts soon"),
            (PORTAL, EMAIL),
            lambda c: (
                _("The reservation “%(title)s” starts at %(at)s (in %(minutes)s minutes).")
                % {"title": c.get("title", ""), "at": _at(c.get("at")), "minutes": c.get("minutes", "")}
            ),
            course_channel=True,
        ),
        Event(
            "reservation.no_show",
            gettext_lazy("My reservation was released as unused"),
            (PORTAL, EMAIL),
            lambda c: (
                _("The reservation “%(title)s” was released: nobody used its nodes in its first %(minutes)s minutes.")
                % {"title": c.get("title", ""), "minutes": c.get("minutes", "")}
            ),
            course_channel=True,
        ),
        Event(
            "budget.threshold",
            gettext_lazy("A budget I look after reaches a threshold"),
            (PORTAL, EMAIL),
            lambda c: (
                _("Budget “%(name)s” has reached %(threshold)s %%.")
                % {"name": c.get("name", ""), "threshold": c.get("threshold", "")}
            ),
        ),
        Event(
            "request.decided",
            gettext_lazy("A request of mine was decided"),
            (PORTAL, EMAIL),
            lambda c: (
                _("Your request (%(what)s) was %(decision)s: %(reason)s")
                % {"what": _request_what(c), "decision": _decision(c), "reason": c.get("reason", "")}
            ),
        ),
        Event(
            "maintenance.announced",
            gettext_lazy("Maintenance affects my work or bookings"),
            (PORTAL, EMAIL),
            lambda c: (
                _("Maintenance on %(nodes)s from %(starts)s to %(ends)s: %(reason)s")
                % {
                    "nodes": _("every node") if c.get("nodes") == "*" else c.get("nodes", ""),
                    "starts": _at(c.get("starts_at")),
                    "ends": _at(c.get("ends_at")),
                    "reason": c.get("reason", ""),
                }
            ),
        ),
    ]
}

# Sent by "Send a test" only; nobody chooses it.
TEST = Event("test", gettext_lazy("Test"), (), lambda c: _("This is a test notification from the portal."))


def event_of(name: str) -> Event:
    return TEST if name == TEST.name else EVENTS[name]


def render(name: str, context: dict) -> str:
    """The event's sentence in the active language."""
    try:
        return event_of(name).sentence(dict(context))
    except (KeyError, TypeError, ValueError):  # a context an older release wrote: say what it was at least
        return str(event_of(name).label)
