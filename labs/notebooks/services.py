"""Every write about notebooks: ask for one, stop, extend, and the pass that moves the queue and follows the hub.

A press of Start only writes a queued row (fast, whatever the hub is doing); the pass places queued sessions on
GPUs through the shared placement code, asks the hub to start them (never more at once than the hub takes, so no
429 reaches anyone), follows them to ready, and looks after running ones: idle culling that reads both the hub's
activity and the GPU's utilisation, the session length, the weekly GPU-hours and reservations taking the node.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from labs.ledger import Ref, allocations_close, allocations_discard, refs_of, week_gpu_hours, week_start
from labs.models import (
    NOTEBOOK_ACTIVE,
    AllocationKind,
    Gpu,
    NotebookProfile,
    NotebookSession,
    NotebookStatus,
)
from labs.notebooks.ceilings import profile_problems
from labs.notebooks.hub_client import HubClient, HubError, ServerState, hub, sign
from labs.notebooks.selectors import profiles_offered, require_may_stop
from labs.placement import Claim, NoCapacity, allocate
from labs.telemetry import store
from labs.telemetry.samples import gpu_key
from portal.accounts.models import Course, User
from portal.accounts.permissions import require_owner_or_admin
from portal.accounts.ratelimit import rate_limit_hit
from portal.accounts.selectors import course_ids_active_for, courses_active_for, effective_quota
from portal.accounts.services import notice_send
from portal.errors import Conflict, InvalidInput, NotFound, QuotaExceeded

log = logging.getLogger(__name__)

HUB_DOWN = (
    "The notebook service is not answering right now. You keep your place in the queue;"
    " your notebook starts by itself when the service is back."
)
HUB_BUSY = "The notebook service is busy starting other notebooks; yours is next in line and starts by itself."
START_FAILED = (
    "Your notebook could not start: {why}. Its GPU is released and nothing more is counted."
    " Press Start to try again, or pick a smaller profile; if it keeps failing, tell the lab admins."
)


# --- Reads the services need ------------------------------------------------------------------


def _local(moment: dt.datetime) -> str:
    return timezone.localtime(moment).strftime("%a %H:%M")


def _share(value: Decimal) -> str:
    """0.250 -> 0.25, 1.000 -> 1."""
    return format(Decimal(value).normalize(), "f")


def _hours(value: Decimal | float) -> str:
    return f"{Decimal(value).quantize(Decimal('0.1'))}"


def hub_name(user: User) -> str:
    # The hub lowercases names; the OAuth login sends the same (portal.oauth).
    return user.username.lower()


def _course_for(user: User, profile: NotebookProfile) -> Course | None:
    """The course this session counts for: one of the profile's courses that the person takes or teaches."""
    mine = courses_active_for(user)
    return mine.filter(pk__in=profile.courses.values("pk")).order_by("code").first()


# --- Start, stop, extend ----------------------------------------------------------------------


def notebook_request(*, user: User, profile: str, now: dt.datetime | None = None) -> NotebookSession:
    """Queue a notebook with `profile` (a slug) for `user`, within their quotas; the pass starts it."""
    now = now or timezone.now()
    rate_limit_hit(user=user, action="notebook_start", now=now)
    slug = (profile or "").strip() if isinstance(profile, str) else ""
    if not slug:
        raise InvalidInput("Choose a profile.", fields={"profile": "Choose one of the profiles offered to you."})
    chosen = next((p for p in profiles_offered(user) if p.slug == slug), None)
    if chosen is None:
        # Unknown and not-yours read the same: a profile's existence is not leaked.
        raise InvalidInput(
            f"There is no profile “{slug[:40]}” for you.",
            fields={"profile": "Not a profile offered to you: pick one of those listed (GET /api/v1/profiles/)."},
        )
    problems = profile_problems(chosen)
    if problems:
        # Saved before a ceiling was lowered or its image rule removed (or written around the checks): not started.
        field, why = next(iter(problems.items()))
        raise InvalidInput(
            f"“{chosen.name}” is outside the lab's limits and cannot start: {why} Ask whoever keeps the profile"
            " to fix it, or pick another one.",
            fields={"profile": f"{field}: {why}"},
        )
    quota = effective_quota(user)
    if chosen.gpu_share > quota.notebook_gpu_share:
        raise QuotaExceeded(
            f"“{chosen.name}” takes {_share(chosen.gpu_share)} of a GPU;"
            f" your quota allows {_share(quota.notebook_gpu_share)}.",
            limit="notebook_gpu_share",
            used=float(chosen.gpu_share),
            allowed=float(quota.notebook_gpu_share),
        )
    used = week_gpu_hours(user, now=now)
    if used >= quota.gpu_hours_week:
        raise QuotaExceeded(
            f"You have used {_hours(used)} of your {_hours(quota.gpu_hours_week)} GPU-hours this week;"
            " they come back on Monday.",
            limit="gpu_hours_week",
            used=float(used),
            allowed=float(quota.gpu_hours_week),
        )
    course = _course_for(user, chosen)
    with transaction.atomic():
        # One request at a time per person: twenty parallel presses leave exactly as many sessions as allowed.
        User.objects.select_for_update().filter(pk=user.pk).first()
        running = NotebookSession.objects.filter(user=user, status__in=NOTEBOOK_ACTIVE).count()
        if running >= quota.max_notebooks:
            raise QuotaExceeded(
                f"You may run {quota.max_notebooks} notebook{'s' if quota.max_notebooks != 1 else ''} at a time"
                f" and have {running}. Stop one first.",
                limit="max_notebooks",
                used=running,
                allowed=quota.max_notebooks,
            )
        session = NotebookSession.objects.create(
            user=user,
            profile=chosen,
            course=course,
            status=NotebookStatus.QUEUED,
            hub_user=hub_name(user),
            requested_at=now,
            reason="Waiting for a GPU.",
        )
        transaction.on_commit(kick)
    return session


def notebook_stop(*, user: User, session: NotebookSession, now: dt.datetime | None = None) -> NotebookSession:
    """Stop (or take out of the queue) a session: its owner, an admin, or a teacher of the owner's course."""
    now = now or timezone.now()
    require_may_stop(user, session)
    by_other = session.user_id != user.pk
    why = f"Stopped by {user.username}." if by_other else "Stopped by you."
    with transaction.atomic():
        row = NotebookSession.objects.select_for_update().get(pk=session.pk)
        if row.status == NotebookStatus.QUEUED:
            _finish(row, NotebookStatus.STOPPED, "Taken out of the queue before it started.", now=now, by=user)
        elif row.status in (NotebookStatus.STARTING, NotebookStatus.READY):
            _ask_stop(row, why, now=now, by=user)
            if by_other:
                notice_send(
                    user=row.user,
                    level="warning",
                    text=f"Your notebook “{row.profile.name}” was stopped by {user.username}.",
                    ref=f"{row.ref}:stopped-by",
                )
        # Stopping, stopped or failed: nothing more to do (a second press changes nothing).
    return row


def notebooks_stop_course(*, user: User, course: Course, now: dt.datetime | None = None) -> int:
    """A teacher's "stop all": every live notebook of the course's students. Returns how many were asked to stop."""
    if not (user.is_lab_admin or course.teachers.filter(pk=user.pk).exists()):
        raise NotFound("No such course.")
    sessions = NotebookSession.objects.filter(
        user__enrollments__course=course, status__in=NOTEBOOK_ACTIVE
    ).select_related("user", "profile")
    stopped = 0
    for session in sessions.distinct():
        before = session.status
        after = notebook_stop(user=user, session=session, now=now)
        stopped += int(after.status != before)
    return stopped


def notebook_extend(*, user: User, session: NotebookSession, now: dt.datetime | None = None) -> NotebookSession:
    """Keep a running notebook: resets the idle clock and adds NOTEBOOKS_EXTEND_MIN, when the quota allows."""
    now = now or timezone.now()
    require_owner_or_admin(user, session.user_id, "extend this notebook")
    with transaction.atomic():
        row = NotebookSession.objects.select_for_update().select_related("profile").get(pk=session.pk)
        if row.status != NotebookStatus.READY:
            raise Conflict("Only a running notebook can be extended.")
        limit = now + dt.timedelta(hours=float(row.profile.max_session_h))
        new_end = min(max(row.ends_at or now, now) + dt.timedelta(minutes=settings.NOTEBOOKS_EXTEND_MIN), limit)
        if row.must_end_by is not None and new_end > row.must_end_by:
            new_end = row.must_end_by
        added_h = Decimal(max((new_end - (row.ends_at or now)).total_seconds(), 0)) / Decimal(3600)
        if added_h > 0:
            quota = effective_quota(row.user)
            used = week_gpu_hours(row.user, now=now)
            more = added_h * row.profile.gpu_share
            if used + more > quota.gpu_hours_week:
                raise QuotaExceeded(
                    f"Extending would need {_hours(more)} more GPU-hours; you have"
                    f" {_hours(max(quota.gpu_hours_week - used, 0))} left this week.",
                    limit="gpu_hours_week",
                    used=float(used),
                    allowed=float(quota.gpu_hours_week),
                )
            row.ends_at = new_end
            row.extensions += 1
            row.end_warned_at = None
        elif row.must_end_by is not None and row.ends_at and row.ends_at >= row.must_end_by:
            raise Conflict(
                f"{row.node} is reserved from {_local(row.must_end_by)}; your notebook must end then."
                " Save your work and start a new one after that."
            )
        row.kept_at = now
        row.idle_warned_at = None
        row.save(
            update_fields=["ends_at", "extensions", "end_warned_at", "kept_at", "idle_warned_at"],
        )
    return row


# --- State changes ----------------------------------------------------------------------------


def _release(session: NotebookSession, now: dt.datetime) -> None:
    allocations_close(ref=Ref.notebook(session.pk), at=now)


def _finish(session: NotebookSession, status: str, reason: str, *, now: dt.datetime, by: User | None = None) -> None:
    _release(session, now)
    session.status = status
    session.reason = reason[:300]
    session.stopped_at = now
    session.url = ""
    if by is not None:
        session.stopped_by = by
    session.save(update_fields=["status", "reason", "stopped_at", "url", "stopped_by"])


def _ask_stop(session: NotebookSession, reason: str, *, now: dt.datetime, by: User | None = None) -> None:
    session.status = NotebookStatus.STOPPING
    session.reason = reason[:300]
    session.stop_requested_at = now
    if by is not None:
        session.stopped_by = by
    session.save(update_fields=["status", "reason", "stop_requested_at", "stopped_by"])
    transaction.on_commit(kick)


SERVER_GONE = (
    "Your notebook server stopped outside the portal (it may have run out of memory, or was stopped in the hub)."
    " Its GPU is released. Start a new one when you are ready."
)


def notebook_server_gone(*, session: NotebookSession, now: dt.datetime | None = None) -> bool:
    """The hub no longer runs a ready notebook's server: end the session, release its GPU and tell its owner.

    Conditional on the session still being ready, so the pass and the reconciler end it once."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = (
            NotebookSession.objects.select_for_update()
            .filter(pk=session.pk, status=NotebookStatus.READY)
            .select_related("user")
            .first()
        )
        if locked is None:
            return False
        _finish(locked, NotebookStatus.STOPPED, SERVER_GONE, now=now)
        notice_send(user=locked.user, level="warning", text=SERVER_GONE, ref=f"{locked.ref}:gone")
    session.status, session.reason, session.stopped_at = locked.status, locked.reason, locked.stopped_at
    return True


def notebooks_end_for_allocations(*, allocation_ids: list[int], reason: str) -> int:
    """The lab ended these ledger entries (a reservation took the node): stop the notebooks that held them."""
    ids = [ref.holder_id for ref in refs_of(allocation_ids, kind=AllocationKind.NOTEBOOK) if ref.holder_id]
    now = timezone.now()
    ended = 0
    with transaction.atomic():
        for session in NotebookSession.objects.select_for_update().filter(
            pk__in=ids, status__in=(NotebookStatus.STARTING, NotebookStatus.READY)
        ):
            _ask_stop(session, reason, now=now)
            ended += 1
    return ended


# --- The pass ---------------------------------------------------------------------------------


@dataclasses.dataclass
class PassReport:
    started: int = 0
    ready: int = 0
    stopped: int = 0
    failed: int = 0
    queued: int = 0
    starting: int = 0
    hub_down: bool = False
    warned: int = 0

    def __str__(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(self).items())


def kick() -> None:
    """Run a pass soon (after a commit) on a Celery worker.

    Without a worker (tasks run in-process: the run command, the tests) a kick would run the pass inside the
    request that pressed Start, hub calls and all; there the periodic runner's next tick (NOTEBOOKS_TICK_S) takes it.
    """
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return
    from labs import tasks

    tasks.notebooks_pass.delay(False)


def notebooks_pass(
    *, upkeep: bool = True, now: dt.datetime | None = None, client: HubClient | None = None
) -> PassReport:
    """Stops, then follow starting and running sessions, then start from the queue. Safe to run twice."""
    now = now or timezone.now()
    client = client or hub()
    report = PassReport()
    try:
        _drive_stops(client, report, now)
        live = NotebookSession.objects.filter(status__in=(NotebookStatus.STARTING, NotebookStatus.READY))
        if live.exists():
            servers = client.active_servers()
            _follow_starting(client, servers, report, now)
            if upkeep:
                _upkeep(servers, report, now)
        _start_queued(client, report, now)
    except HubError as exc:
        if not exc.retryable:
            raise
        report.hub_down = True
        log.warning("notebooks pass: %s", exc)
        NotebookSession.objects.filter(status=NotebookStatus.QUEUED).exclude(reason=HUB_DOWN).update(reason=HUB_DOWN)
    report.queued = NotebookSession.objects.filter(status=NotebookStatus.QUEUED).count()
    report.starting = NotebookSession.objects.filter(status=NotebookStatus.STARTING).count()
    return report


def _drive_stops(client: HubClient, report: PassReport, now: dt.datetime) -> None:
    for session in NotebookSession.objects.filter(status=NotebookStatus.STOPPING).order_by("stop_requested_at"):
        try:
            gone = client.stop(session.hub_user, session.server_name)
        except HubError as exc:
            if exc.retryable:
                raise
            log.error("stopping %s: %s", session.server_name, exc)
            gone = False
        if gone:
            _finish(session, NotebookStatus.STOPPED, session.reason or "Stopped.", now=now)
            report.stopped += 1


def _follow_starting(
    client: HubClient, servers: dict[tuple[str, str], ServerState], report: PassReport, now: dt.datetime
) -> None:
    for session in NotebookSession.objects.filter(status=NotebookStatus.STARTING).select_related("profile", "user"):
        state = servers.get((session.hub_user, session.server_name))
        started_for = (now - (session.starting_at or now)).total_seconds()
        if state is not None and state.ready:
            session.status = NotebookStatus.READY
            session.url = settings.NOTEBOOKS_HUB_PUBLIC_URL + (state.url or "/")
            session.ready_at = now
            session.reason = ""
            session.save(update_fields=["status", "url", "ready_at", "reason"])
            report.ready += 1
        elif state is None and started_for > 3:
            # The hub no longer has it: the spawn failed (the hub logs why).
            with transaction.atomic():
                _finish(session, NotebookStatus.FAILED, START_FAILED.format(why="the server did not come up"), now=now)
            notice_send(user=session.user, level="warning", text=session.reason, ref=f"{session.ref}:failed")
            report.failed += 1
        elif started_for > settings.NOTEBOOKS_START_TIMEOUT_S:
            minutes = max(1, settings.NOTEBOOKS_START_TIMEOUT_S // 60)
            try:
                client.stop(session.hub_user, session.server_name)
            except HubError as exc:
                log.warning("could not stop the timed-out spawn %s: %s", session.server_name, exc)
            with transaction.atomic():
                why = f"it was not ready after {minutes} minute{'s' if minutes != 1 else ''}"
                _finish(session, NotebookStatus.FAILED, START_FAILED.format(why=why), now=now)
            notice_send(user=session.user, level="warning", text=session.reason, ref=f"{session.ref}:failed")
            report.failed += 1


def _gpu_busy(session: NotebookSession, latest: dict, now: dt.datetime) -> bool:
    """Is the session's GPU busy now? Unknown (no fresh sample) counts as busy: never cull on missing data."""
    if not session.node or session.gpu_index is None:
        return True
    state = latest.get(gpu_key(session.node, session.gpu_index))
    if not state:
        return True
    sampled = parse_datetime(state.get("sampled_at") or "")
    if sampled is None or (now - sampled).total_seconds() > settings.TELEMETRY_STALE_AFTER_S:
        return True
    util = state.get("util_pct")
    return util is None or util >= settings.NOTEBOOKS_IDLE_GPU_PCT


def _upkeep(servers: dict[tuple[str, str], ServerState], report: PassReport, now: dt.datetime) -> None:
    latest = store.read_latest()["gpus"]
    idle_after = dt.timedelta(minutes=settings.NOTEBOOKS_IDLE_MIN)
    warn_ahead = dt.timedelta(minutes=settings.NOTEBOOKS_WARN_MIN)
    # Per person, once a pass: someone may have several notebooks.
    used_by: dict[int, Decimal] = {}
    allowed_by: dict[int, Decimal] = {}
    for session in NotebookSession.objects.filter(status=NotebookStatus.READY).select_related("profile", "user"):
        state = servers.get((session.hub_user, session.server_name))
        if state is None:
            report.stopped += notebook_server_gone(session=session, now=now)
            continue
        changed = []
        if state.last_activity and (session.last_activity_at is None or state.last_activity > session.last_activity_at):
            session.last_activity_at = state.last_activity
            changed.append("last_activity_at")
        if _gpu_busy(session, latest, now):
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
                    text=f"Your notebook “{session.profile.name}” ends at {_local(session.ends_at)}."
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
                    f" {_local(idle_since + idle_after)}. Press Keep running on the Notebooks page to keep it.",
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
                    text=f"You have used {_hours(used)} of your {_hours(allowed)} GPU-hours this week."
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
                        f" stops at {_local(now + grace)}: save your work.",
                        ref=f"{session.ref}:quota:{week}",
                    )
                if now - session.quota_over_at >= grace:
                    stop_reason = "Stopped: your GPU-hours for this week are used up. They come back on Monday."
        if changed:
            session.save(update_fields=changed)
        if stop_reason is not None:
            with transaction.atomic():
                _ask_stop(session, stop_reason, now=now)
            notice_send(user=session.user, level="warning", text=stop_reason, ref=f"{session.ref}:stopped")


def _options(session: NotebookSession, gpu: Gpu, max_seconds: int) -> dict:
    profile = session.profile
    options = {
        "session": session.pk,
        "profile": profile.slug,
        "image": profile.image,
        "gpu_share": float(profile.gpu_share),
        "gpu_mem_mb": int(profile.gpu_mem_mb or int(profile.gpu_share * gpu.memory_mb)),
        "cpu": float(profile.cpu),
        "mem_gb": float(profile.memory_gb),
        "node": gpu.node.name,
        "gpu_index": gpu.index,
        "gpu_uuid": gpu.uuid or "",
        "max_seconds": max_seconds,
    }
    options["sig"] = sign(options, settings.NOTEBOOKS_HUB_TOKEN)
    return options


def _place(session: NotebookSession, now: dt.datetime) -> tuple[NotebookSession, dict] | None:
    """Take a GPU share for the queued session and mark it starting; None if another pass took it first."""
    profile = session.profile
    length = dt.timedelta(hours=float(profile.max_session_h))
    with transaction.atomic():
        row = (
            NotebookSession.objects.select_for_update()
            .select_related("profile", "user")
            .filter(pk=session.pk, status=NotebookStatus.QUEUED)
            .first()
        )
        if row is None:
            return None
        claim = Claim(
            user=row.user,
            kind=AllocationKind.NOTEBOOK,
            starts_at=now,
            ends_at=now + length,
            share=profile.gpu_share,
            course=row.course,
        )
        placement, allocations = allocate(
            claim=claim, ref=Ref.notebook(row.pk), reason=f"notebook {profile.slug}", now=now
        )
        gpu = Gpu.objects.select_related("node").get(pk=allocations[0].gpu_id)
        ends_at = now + length
        if placement.must_end_by is not None and placement.must_end_by < ends_at:
            ends_at = placement.must_end_by
        row.status = NotebookStatus.STARTING
        row.node = gpu.node.name
        row.gpu_index = gpu.index
        row.starting_at = now
        row.ends_at = ends_at
        row.must_end_by = placement.must_end_by
        row.start_attempts += 1
        row.reason = f"Starting on {gpu.node.name}."
        if placement.must_end_by is not None:
            row.reason += f" It must end by {_local(placement.must_end_by)}: the node is reserved then."
        row.save(
            update_fields=[
                "status",
                "node",
                "gpu_index",
                "starting_at",
                "ends_at",
                "must_end_by",
                "start_attempts",
                "reason",
            ]
        )
        return row, _options(row, gpu, int((ends_at - now).total_seconds()))


def _requeue(session: NotebookSession, reason: str) -> None:
    """The hub could not take it now: give the GPU back and put it back in the queue, in the same place."""
    with transaction.atomic():
        allocations_discard(ref=Ref.notebook(session.pk))
        NotebookSession.objects.filter(pk=session.pk).update(
            status=NotebookStatus.QUEUED,
            node="",
            gpu_index=None,
            starting_at=None,
            ends_at=None,
            must_end_by=None,
            reason=reason,
        )


def _start_queued(client: HubClient, report: PassReport, now: dt.datetime) -> None:
    slots = settings.NOTEBOOKS_MAX_STARTING - NotebookSession.objects.filter(status=NotebookStatus.STARTING).count()
    queued = NotebookSession.objects.filter(status=NotebookStatus.QUEUED).select_related("profile", "user")
    # The smallest share that found no GPU this pass, per set of courses (whose reservations a person may use).
    blocked_at: dict[frozenset[int], Decimal] = {}
    courses_of: dict[int, frozenset[int]] = {}
    for session in queued.order_by("requested_at", "id")[:1000]:
        share = session.profile.gpu_share
        if session.user_id not in courses_of:
            courses_of[session.user_id] = course_ids_active_for(session.user, today=timezone.localdate(now))
        key = courses_of[session.user_id]
        if key in blocked_at and share >= blocked_at[key]:
            continue
        if slots <= 0:
            if session.reason != HUB_BUSY:
                NotebookSession.objects.filter(pk=session.pk).update(reason=HUB_BUSY)
            continue
        try:
            placed = _place(session, now)
        except NoCapacity as exc:
            blocked_at[key] = share
            why = f"Waiting for a GPU: {exc.message}"[:300]
            NotebookSession.objects.filter(pk=session.pk).exclude(reason=why).update(reason=why)
            continue
        if placed is None:
            continue
        row, options = placed
        try:
            client.ensure_user(row.hub_user)
            client.start(row.hub_user, row.server_name, options)
        except HubError as exc:
            if exc.retryable and exc.status == 429:
                _requeue(row, HUB_BUSY)  # the hub's own spawn limit: try again on the next pass
                return
            if exc.retryable:
                _requeue(row, HUB_DOWN)
                raise
            log.error("the hub refused to start %s: %s", row.server_name, exc)
            with transaction.atomic():
                _finish(row, NotebookStatus.FAILED, START_FAILED.format(why="the notebook service refused it"), now=now)
            report.failed += 1
            continue
        slots -= 1
        report.started += 1
