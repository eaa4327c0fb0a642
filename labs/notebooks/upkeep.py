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

from accounts.selectors import effective_quota
from accounts.services import notice_send
from labs.ledger import week_gpu_hours, week_start
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


def notebooks_upkeep(*, servers: dict[tuple[str, str], ServerState], now: dt.datetime) -> UpkeepReport:
    """Look after the ready sessions, given the hub's servers: end those whose server is gone, note activity, warn
    ahead of and ask for the stops (session length, idle, weekly GPU-hours). The pass calls it on its periodic runs."""
    report = UpkeepReport()
    ready = list(NotebookSession.objects.filter(status=NotebookStatus.READY).select_related("profile", "user"))
    utils = gpu_util_of([(s.node, s.gpu_index) for s in ready if s.node and s.gpu_index is not None], now=now)
    idle_after = dt.timedelta(minutes=settings.NOTEBOOKS_IDLE_MIN)
    warn_ahead = dt.timedelta(minutes=settings.NOTEBOOKS_WARN_MIN)
    # Per person, once a pass: someone may have several notebooks.
    used_by: dict[int, Decimal] = {}
    allowed_by: dict[int, Decimal] = {}
    for session in ready:
        state = servers.get((session.hub_user, session.server_name))
        if state is None:
            report.stopped += notebook_server_gone(session=session, now=now)
            continue
        changed = []
        if state.last_activity and (session.last_activity_at is None or state.last_activity > session.last_activity_at):
            session.last_activity_at = state.last_activity
            changed.append("last_activity_at")
        if _gpu_busy(session, utils):
            session.gpu_busy_at = now
            changed.append("gpu_busy_at")
        stop_reason = None

        # The session length (and a reservation taking the node).
        if session.ends_at is not None:
            if now >= session.ends_at:
                stop_reason = "Stopped at the end of its session. Start a new one to go on."
            elif now >= session.ends_at - warn_ahead and session.end_warned_at is None:
                report.warned += notice_send(
                    user=session.user,
                    level="warning",
                    text=f"Your notebook “{session.profile.name}” ends at {at_local(session.ends_at)}."
                    " Extend it from the Notebooks page if you need longer.",
                    ref=f"{session.ref}:ends:{int(session.ends_at.timestamp())}",
                )
                session.end_warned_at = now
                changed.append("end_warned_at")

        # Idle: the hub saw no activity AND the GPU was quiet, both for NOTEBOOKS_IDLE_MIN.
        if stop_reason is None:
            marks = [m for m in (session.ready_at, session.last_activity_at, session.gpu_busy_at, session.kept_at) if m]
            idle_since = max(marks) if marks else now
            if now - idle_since >= idle_after:
                stop_reason = (
                    f"Stopped after {settings.NOTEBOOKS_IDLE_MIN} minutes idle: no activity in the notebook and its"
                    f" GPU under {settings.NOTEBOOKS_IDLE_GPU_PCT} %."
                )
            elif now - idle_since >= idle_after - warn_ahead and (
                session.idle_warned_at is None or session.idle_warned_at < idle_since
            ):
                report.warned += notice_send(
                    user=session.user,
                    level="warning",
                    text=f"Your notebook “{session.profile.name}” looks idle and will be stopped at"
                    f" {at_local(idle_since + idle_after)}. Press Keep running on the Notebooks page to keep it.",
                    ref=f"{session.ref}:idle:{int(idle_since.timestamp())}",
                )
                session.idle_warned_at = now
                changed.append("idle_warned_at")

        # The weekly GPU-hours: a warning at NOTEBOOKS_QUOTA_WARN_PCT, a stop after the grace period at 100 %.
        if stop_reason is None:
            if session.user_id not in used_by:
                used_by[session.user_id] = week_gpu_hours(session.user, now=now)
            used = used_by[session.user_id]
            if session.user_id not in allowed_by:
                allowed_by[session.user_id] = effective_quota(session.user).gpu_hours_week
            allowed = allowed_by[session.user_id]
            week = week_start(now).date().isoformat()
            if allowed > 0 and used * 100 >= allowed * settings.NOTEBOOKS_QUOTA_WARN_PCT:
                report.warned += notice_send(
                    user=session.user,
                    level="warning",
                    text=f"You have used {hours_text(used)} of your {hours_text(allowed)} GPU-hours this week."
                    " At the limit, running notebooks are stopped.",
                    ref=f"quota-warn:{week}",
                )
            if used >= allowed:
                grace = dt.timedelta(minutes=settings.NOTEBOOKS_QUOTA_GRACE_MIN)
                if session.quota_over_at is None:
                    session.quota_over_at = now
                    changed.append("quota_over_at")
                    report.warned += notice_send(
                        user=session.user,
                        level="warning",
                        text=f"Your GPU-hours for this week are used up. Your notebook “{session.profile.name}”"
                        f" stops at {at_local(now + grace)}: save your work.",
                        ref=f"{session.ref}:quota:{week}",
                    )
                if now - session.quota_over_at >= grace:
                    stop_reason = "Stopped: your GPU-hours for this week are used up. They come back on Monday."
        if changed:
            session.save(update_fields=changed)
        if stop_reason is not None:
            with transaction.atomic():
                session_ask_stop(session, stop_reason, now=now)
            notice_send(user=session.user, level="warning", text=stop_reason, ref=f"{session.ref}:stopped")
    return report
