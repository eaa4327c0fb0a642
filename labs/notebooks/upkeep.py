"""Looking after running notebooks on the pass's periodic runs: the session length, idle culling and the weekly
GPU-hours, each warned ahead of, and the end of sessions whose hub server has gone.

Idle means both: the hub saw no activity in the notebook AND its GPU stayed under NOTEBOOKS_IDLE_GPU_PCT, for
NOTEBOOKS_IDLE_MIN. The GPU's utilisation comes from the telemetry store (labs.telemetry.selectors); a GPU with no
fresh sample counts as busy, so missing telemetry never stops anyone's notebook.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from accounts.locale import speaking
from accounts.notify import PORTAL, notify
from accounts.quotas import effective_quota
from accounts.services import notice_send
from labs.ledger import week_gpu_hours_by_user, week_start
from labs.models import NotebookSession, NotebookStatus
from labs.notebooks.hub_client import ServerState
from labs.notebooks.services import notebook_server_gone, session_ask_stop
from labs.notebooks.wording import at_local, hours_text
from labs.telemetry.selectors import GpuUtil, gpu_util_of


@dataclasses.dataclass
class UpkeepReport:
    stopped: int = 0  # sessions ended because their hub server was gone
    warned: int = 0  # notices sent


def _gpu_busy(session: NotebookSession, utils: dict[tuple[str, int], GpuUtil]) -> bool:
    """Is the session's GPU busy now? Unknown (no fresh sample) counts as busy: never cull on missing data."""
    if not session.node or session.gpu_index is None:
        return True
    util = utils.get((session.node, session.gpu_index))
    if util is None or not util.fresh or util.util_pct is None:
        return True
    return util.util_pct >= settings.NOTEBOOKS_IDLE_GPU_PCT


class _Week:
    """This week's GPU-hours and allowance per person, read once a pass for everyone with a ready notebook (one
    query, week_gpu_hours_by_user) the first time a session needs them."""

    def __init__(self, ready: list[NotebookSession], now: dt.datetime):
        self.now = now
        self.start = week_start(now).date().isoformat()
        self._people = {session.user_id for session in ready}
        self._used: dict[int, Decimal] | None = None
        self._allowed: dict[int, Decimal] = {}

    def used(self, session: NotebookSession) -> Decimal:
        if self._used is None:
            self._used = week_gpu_hours_by_user(self._people, now=self.now)
        return self._used.get(session.user_id, Decimal(0))

    def allowed(self, session: NotebookSession) -> Decimal:
        if session.user_id not in self._allowed:
            self._allowed[session.user_id] = effective_quota(session.user).gpu_hours_week
        return self._allowed[session.user_id]


def _note_activity(
    session: NotebookSession, state: ServerState, utils: dict[tuple[str, int], GpuUtil], now: dt.datetime
) -> list[str]:
    """The hub's last activity and whether the GPU is busy now, kept on the session; the fields that changed."""
    changed = []
    if state.last_activity and (session.last_activity_at is None or state.last_activity > session.last_activity_at):
        session.last_activity_at = state.last_activity
        changed.append("last_activity_at")
    if _gpu_busy(session, utils):
        session.gpu_busy_at = now
        changed.append("gpu_busy_at")
    return changed


def _session_length(session: NotebookSession, now: dt.datetime, report: UpkeepReport, changed: list[str]) -> str | None:
    """The session's end (and a reservation taking the node): warned NOTEBOOKS_WARN_MIN ahead, then stopped."""
    if session.ends_at is None:
        return None
    if now >= session.ends_at:
        return _("Stopped at the end of its session. Start a new one to go on.")
    if now >= session.ends_at - dt.timedelta(minutes=settings.NOTEBOOKS_WARN_MIN) and session.end_warned_at is None:
        told = notice_send(
            user=session.user,
            level="warning",
            text=_("Your notebook “%(name)s” ends at %(at)s. Extend it from the Notebooks page if you need longer.")
            % {"name": session.profile.name, "at": at_local(session.ends_at)},
            ref=f"{session.ref}:ends:{int(session.ends_at.timestamp())}",
        )
        if told:  # the portal notice above is the in-portal channel; e-mail and chat as the person chose
            notify(
                [session.user],
                "notebook.session_end",
                {"name": session.profile.name, "at": session.ends_at.isoformat()},
                already=(PORTAL,),
            )
        report.warned += told
        session.end_warned_at = now
        changed.append("end_warned_at")
    return None


def _idle(session: NotebookSession, now: dt.datetime, report: UpkeepReport, changed: list[str]) -> str | None:
    """Idle: the hub saw no activity AND the GPU was quiet, both for NOTEBOOKS_IDLE_MIN; warned ahead, then stopped."""
    idle_after = dt.timedelta(minutes=settings.NOTEBOOKS_IDLE_MIN)
    marks = [m for m in (session.ready_at, session.last_activity_at, session.gpu_busy_at, session.kept_at) if m]
    idle_since = max(marks) if marks else now
    if now - idle_since >= idle_after:
        return _(
            "Stopped after %(minutes)s minutes idle: no activity in the notebook and its GPU under %(pct)s %%."
        ) % {"minutes": settings.NOTEBOOKS_IDLE_MIN, "pct": settings.NOTEBOOKS_IDLE_GPU_PCT}
    warn_ahead = dt.timedelta(minutes=settings.NOTEBOOKS_WARN_MIN)
    if now - idle_since >= idle_after - warn_ahead and (
        session.idle_warned_at is None or session.idle_warned_at < idle_since
    ):
        told = notice_send(
            user=session.user,
            level="warning",
            text=_(
                "Your notebook “%(name)s” looks idle and will be stopped at %(at)s. Press Keep running on the"
                " Notebooks page to keep it."
            )
            % {"name": session.profile.name, "at": at_local(idle_since + idle_after)},
            ref=f"{session.ref}:idle:{int(idle_since.timestamp())}",
        )
        if told:
            notify(
                [session.user],
                "notebook.cull",
                {"name": session.profile.name, "at": (idle_since + idle_after).isoformat()},
                already=(PORTAL,),
            )
        report.warned += told
        session.idle_warned_at = now
        changed.append("idle_warned_at")
    return None


def _weekly_hours(
    session: NotebookSession, week: _Week, now: dt.datetime, report: UpkeepReport, changed: list[str]
) -> str | None:
    """The weekly GPU-hours: a warning at NOTEBOOKS_QUOTA_WARN_PCT, a stop after the grace period at 100 %."""
    used, allowed = week.used(session), week.allowed(session)
    if allowed > 0 and used * 100 >= allowed * settings.NOTEBOOKS_QUOTA_WARN_PCT:
        report.warned += notice_send(
            user=session.user,
            level="warning",
            text=_(
                "You have used %(used)s of your %(allowed)s GPU-hours this week. At the limit, running notebooks"
                " are stopped."
            )
            % {"used": hours_text(used), "allowed": hours_text(allowed)},
            ref=f"quota-warn:{week.start}",
        )
    if used < allowed:
        return None
    grace = dt.timedelta(minutes=settings.NOTEBOOKS_QUOTA_GRACE_MIN)
    if session.quota_over_at is None:
        session.quota_over_at = now
        changed.append("quota_over_at")
        report.warned += notice_send(
            user=session.user,
            level="warning",
            text=_(
                "Your GPU-hours for this week are used up. Your notebook “%(name)s” stops at %(at)s: save your work."
            )
            % {"name": session.profile.name, "at": at_local(now + grace)},
            ref=f"{session.ref}:quota:{week.start}",
        )
    if now - session.quota_over_at >= grace:
        return _("Stopped: your GPU-hours for this week are used up. They come back on Monday.")
    return None


def notebooks_upkeep(*, servers: dict[tuple[str, str], ServerState], now: dt.datetime) -> UpkeepReport:
    """Look after the ready sessions, given the hub's servers: end those whose server is gone, note activity, then
    the three rules in turn — the session's length, idle, the weekly GPU-hours — each warning ahead of its stop.
    The pass calls it on its periodic runs."""
    report = UpkeepReport()
    ready = list(NotebookSession.objects.filter(status=NotebookStatus.READY).select_related("profile", "user"))
    utils = gpu_util_of([(s.node, s.gpu_index) for s in ready if s.node and s.gpu_index is not None], now=now)
    week = _Week(ready, now)
    for session in ready:
        state = servers.get((session.hub_user, session.server_name))
        if state is None:
            report.stopped += notebook_server_gone(session=session, now=now)
            continue
        changed = _note_activity(session, state, utils, now)
        with speaking(session.user):  # the notices, and the reason the pages show, in the owner's language
            stop_reason = (
                _session_length(session, now, report, changed)
                or _idle(session, now, report, changed)
                or _weekly_hours(session, week, now, report, changed)
            )
        if changed:
            session.save(update_fields=changed)
        if stop_reason is not None:
            with transaction.atomic():
                session_ask_stop(session, stop_reason, now=now)
            notice_send(user=session.user, level="warning", text=stop_reason, ref=f"{session.ref}:stopped")
    return report
