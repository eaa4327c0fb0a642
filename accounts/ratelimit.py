"""Per-person rate limits on the actions that make work: submitting a job, starting a notebook, booking nodes.

A sliding window in Django's cache (Redis in production, local memory in the embedded run): the count of this
window plus the previous window's, weighted by how much of it is still inside the last RATE_LIMIT_WINDOW_S
seconds. Two cache keys per person and action, one atomic increment per press. A refused press is not counted,
so someone who keeps pressing gets in as soon as the window allows.

The services call `rate_limit_hit` first thing, so the API and the pages share it: beyond the limit they raise
RateLimited (429 `rate_limited`, with Retry-After). If the cache does not answer, the press goes through and the
log says so: a broken counter must not stop the lab (the quotas still hold).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import math

from django.conf import settings
from django.core.cache import caches
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext

from accounts.errors import RateLimited

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Action:
    setting: str  # how many per window (0: no limit)
    what: str  # as people say it: "jobs submitted"


ACTIONS = {
    "job_submit": Action("RATE_LIMIT_JOB_SUBMIT", gettext_noop("jobs submitted")),
    "notebook_start": Action("RATE_LIMIT_NOTEBOOK_START", gettext_noop("notebook starts")),
    "reservation_create": Action("RATE_LIMIT_RESERVATION_CREATE", gettext_noop("reservations made")),
    "notify_test": Action("RATE_LIMIT_NOTIFY_TEST", gettext_noop("test notifications sent")),
}


def _key(action: str, user_id: int, window: int) -> str:
    return f"{settings.RATE_LIMIT_KEY_PREFIX}:{action}:{user_id}:{window}"


def _seconds(wait: float) -> int:
    return max(1, math.ceil(wait - 1e-6))  # whole seconds, not one more for a float's last digit


def _retry_after(*, limit: int, period: int, into: float, previous: int, counted: int) -> int:
    """Seconds until one more press fits: later in this window as the previous one's weight fades, or the next."""
    if previous > 0 and counted + 1 <= limit:
        at = period * (1 - (limit - counted - 1) / previous)
        if at < period:
            return _seconds(at - into)
    # In the next window this one's `counted` presses are the previous ones.
    at = period * (1 - (limit - 1) / counted) if counted > 0 else 0.0
    return _seconds(period - into + max(at, 0.0))


def _period_label(period: int) -> str:
    if period % 3600 == 0:
        return _("hour") if period == 3600 else _("%(n)d hours") % {"n": period // 3600}
    if period % 60 == 0:
        return _("minute") if period == 60 else _("%(n)d minutes") % {"n": period // 60}
    return _("%(n)d seconds") % {"n": period}


def rate_limit_hit(*, user, action: str, now: dt.datetime | None = None) -> None:
    """Count one press of `action` by `user`; raise RateLimited if it is one too many for the window."""
    limit = int(getattr(settings, ACTIONS[action].setting))
    if limit <= 0 or user is None or user.pk is None:
        return
    period = int(settings.RATE_LIMIT_WINDOW_S)
    moment = (now or timezone.now()).timestamp()
    window = int(moment // period)
    into = moment - window * period
    current_key = _key(action, user.pk, window)
    try:
        cache = caches[settings.RATE_LIMIT_CACHE]
        cache.add(current_key, 0, timeout=2 * period + 1)
        current = cache.incr(current_key)
        previous = cache.get(_key(action, user.pk, window - 1)) or 0
    except Exception as exc:  # any cache failure (down, timeout, evicted key) lets the press through
        log.warning("rate limit %s for user %s not checked, let through: the cache failed (%r)", action, user.pk, exc)
        return
    if previous * (1 - into / period) + current <= limit + 1e-9:  # (float rounding must not refuse an exact fit)
        return
    try:
        cache.decr(current_key)  # refused presses do not count
    except Exception as exc:
        log.warning("rate limit %s for user %s: could not take back a refused press (%r)", action, user.pk, exc)
    wait = _retry_after(limit=limit, period=period, into=into, previous=int(previous), counted=current - 1)
    raise RateLimited(
        _("Too many %(what)s in a short time: at most %(limit)s per %(period)s.")
        % {"what": _(ACTIONS[action].what), "limit": limit, "period": _period_label(period)}
        + " "
        + ngettext("Try again in %(n)d second.", "Try again in %(n)d seconds.", wait) % {"n": wait},
        action=action,
        allowed=limit,
        period_s=period,
        retry_after_s=wait,
    )
