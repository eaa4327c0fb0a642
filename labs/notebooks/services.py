"""The writes people ask for about notebooks: start (queue) one, stop, extend; and the state changes the pass shares.

A press of Start only writes a queued row (fast, whatever the hub is doing) and asks for a pass after the commit
(labs.notebooks.enqueue). The pass (labs.notebooks.passes) places queued sessions on GPUs, asks the hub to start
them and follows them to ready; the upkeep (labs.notebooks.upkeep) looks after running ones: idle culling, the
session length and the weekly GPU-hours. Reservations taking a node end its notebooks here too.
"""

from __future__ import annotations

import datetime as dt
import logging
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop, ngettext

from accounts.errors import Conflict, InvalidInput, NotFound, QuotaExceeded
from accounts.locale import said_to, speaking
from accounts.models import Course, User
from accounts.permissions import require_owner_or_admin
from accounts.quotas import effective_quota
from accounts.ratelimit import rate_limit_hit
from accounts.selectors import courses_active_for, courses_staffed_by, hub_username
from accounts.services import notice_send
from labs.budgets.services import budgets_guard
from labs.ledger import Ref, allocations_close, refs_of, week_gpu_hours
from labs.models import NOTEBOOK_ACTIVE, AllocationKind, NotebookProfile, NotebookSession, NotebookStatus
from labs.notebooks import enqueue
from labs.notebooks.ceilings import profile_problems
from labs.notebooks.selectors import course_sessions_to_stop, profiles_offered, require_may_stop
from labs.notebooks.wording import at_local, hours_text, share_text

log = logging.getLogger(__name__)


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
        raise InvalidInput(_("Choose a profile."), fields={"profile": _("Choose one of the profiles offered to you.")})
    chosen = next((p for p in profiles_offered(user) if p.slug == slug), None)
    if chosen is None:
        # Unknown and not-yours read the same: a profile's existence is not leaked.
        raise InvalidInput(
            _("There is no profile “%(slug)s” for you.") % {"slug": slug[:40]},
            fields={"profile": _("Not a profile offered to you: pick one of those listed (GET /api/v1/profiles/).")},
        )
    problems = profile_problems(chosen)
    if problems:
        # Saved before a ceiling was lowered or its image rule removed (or written around the checks): not started.
        field, why = next(iter(problems.items()))
        raise InvalidInput(
            _(
                "“%(name)s” is outside the lab's limits and cannot start: %(why)s Ask whoever keeps the profile to"
                " fix it, or pick another one."
            )
            % {"name": chosen.name, "why": why},
            fields={"profile": f"{field}: {why}"},
        )
    quota = effective_quota(user)
    if chosen.gpu_share > quota.notebook_gpu_share:
        raise QuotaExceeded(
            _("“%(name)s” takes %(share)s of a GPU; your quota allows %(allowed)s.")
            % {
                "name": chosen.name,
                "share": share_text(chosen.gpu_share),
                "allowed": share_text(quota.notebook_gpu_share),
            },
            limit="notebook_gpu_share",
            used=float(chosen.gpu_share),
            allowed=float(quota.notebook_gpu_share),
        )
    used = week_gpu_hours(user, now=now)
    if used >= quota.gpu_hours_week:
        raise QuotaExceeded(
            _("You have used %(used)s of your %(allowed)s GPU-hours this week; they come back on Monday.")
            % {"used": hours_text(used), "allowed": hours_text(quota.gpu_hours_week)},
            limit="gpu_hours_week",
            used=float(used),
            allowed=float(quota.gpu_hours_week),
        )
    course = _course_for(user, chosen)
    with transaction.atomic():
        # One request at a time per person: twenty parallel presses leave exactly as many sessions as allowed.
        User.objects.select_for_update().filter(pk=user.pk).first()
        running = NotebookSession.objects.filter(
            user=user, status__in=NOTEBOOK_ACTIVE, placeholder_for__isnull=True
        ).count()
        if running >= quota.max_notebooks:
            raise QuotaExceeded(
                ngettext(
                    "You may run %(max)s notebook at a time and have %(running)s. Stop one first.",
                    "You may run %(max)s notebooks at a time and have %(running)s. Stop one first.",
                    quota.max_notebooks,
                )
                % {"max": quota.max_notebooks, "running": running},
                limit="max_notebooks",
                used=running,
                allowed=quota.max_notebooks,
            )
        # Last, as for jobs: a budget it counts against, used up and set to block, refuses it; a warn-only one tells
        # the person, only of a start that goes ahead.
        budgets_guard(user=user, course=course, now=now)
        session = NotebookSession.objects.create(
            user=user,
            profile=chosen,
            course=course,
            status=NotebookStatus.QUEUED,
            hub_user=hub_username(user),
            requested_at=now,
            reason=_("Waiting for a GPU."),
        )
        enqueue.pass_soon()
    return session


def notebook_stop(*, user: User, session: NotebookSession, now: dt.datetime | None = None) -> NotebookSession:
    """Stop (or take out of the queue) a session: its owner, an admin, or a teacher (assistant) of its course."""
    now = now or timezone.now()
    require_may_stop(user, session)
    by_other = session.user_id != user.pk
    why = _("Stopped by %(who)s.") % {"who": user.username} if by_other else _("Stopped by you.")
    with transaction.atomic():
        row = NotebookSession.objects.select_for_update().get(pk=session.pk)
        if row.status == NotebookStatus.QUEUED:
            session_finish(
                row, NotebookStatus.STOPPED, _("Taken out of the queue before it started."), now=now, by=user
            )
        elif row.status in (NotebookStatus.STARTING, NotebookStatus.READY):
            session_ask_stop(row, why, now=now, by=user)
            if by_other:
                with speaking(row.user):
                    told = _("Your notebook “%(name)s” was stopped by %(who)s.") % {
                        "name": row.profile.name,
                        "who": user.username,
                    }
                notice_send(
                    user=row.user,
                    level="warning",
                    text=told,
                    ref=f"{row.ref}:stopped-by",
                )
        # Stopping, stopped or failed: nothing more to do (a second press changes nothing).
    return row


def notebooks_stop_course(*, user: User, course: Course, now: dt.datetime | None = None) -> int:
    """A teacher's (or teaching assistant's) "stop all": every live notebook the course's students booked to it
    (never their sessions outside the course). Returns how many were asked to stop."""
    if not courses_staffed_by(user).filter(pk=course.pk).exists():
        raise NotFound(_("No such course."))
    stopped = 0
    for session in course_sessions_to_stop(user, course):
        before = session.status
        after = notebook_stop(user=user, session=session, now=now)
        stopped += int(after.status != before)
    return stopped


def notebook_extend(*, user: User, session: NotebookSession, now: dt.datetime | None = None) -> NotebookSession:
    """Keep a running notebook: resets the idle clock and adds NOTEBOOKS_EXTEND_MIN, when the quota allows."""
    now = now or timezone.now()
    require_owner_or_admin(user, session.user_id, gettext_noop("extend this notebook"))
    with transaction.atomic():
        row = NotebookSession.objects.select_for_update().select_related("profile").get(pk=session.pk)
        if row.status != NotebookStatus.READY:
            raise Conflict(_("Only a running notebook can be extended."))
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
                    _("Extending would need %(more)s more GPU-hours; you have %(left)s left this week.")
                    % {"more": hours_text(more), "left": hours_text(max(quota.gpu_hours_week - used, 0))},
                    limit="gpu_hours_week",
                    used=float(used),
                    allowed=float(quota.gpu_hours_week),
                    need=float(more),
                )
            row.ends_at = new_end
            row.extensions += 1
            row.end_warned_at = None
        elif row.must_end_by is not None and row.ends_at and row.ends_at >= row.must_end_by:
            raise Conflict(
                _(
                    "%(node)s is reserved from %(at)s; your notebook must end then. Save your work and start a new"
                    " one after that."
                )
                % {"node": row.node, "at": at_local(row.must_end_by)}
            )
        row.kept_at = now
        row.idle_warned_at = None
        row.save(
            update_fields=["ends_at", "extensions", "end_warned_at", "kept_at", "idle_warned_at"],
        )
    return row


# --- State changes (the pass and the upkeep use them too; call them inside a transaction) ------------------------


def session_finish(
    session: NotebookSession, status: str, reason: str, *, now: dt.datetime, by: User | None = None
) -> None:
    """End a session for good (stopped or failed): its GPU time closes in the ledger."""
    allocations_close(ref=Ref.notebook(session.pk), at=now)
    session.status = status
    session.reason = reason[:300]
    session.stopped_at = now
    session.url = ""
    if by is not None:
        session.stopped_by = by
    session.save(update_fields=["status", "reason", "stopped_at", "url", "stopped_by"])


def session_ask_stop(session: NotebookSession, reason: str, *, now: dt.datetime, by: User | None = None) -> None:
    """Mark a starting or ready session stopping; the pass asked for after the commit stops its hub server."""
    session.status = NotebookStatus.STOPPING
    session.reason = reason[:300]
    session.stop_requested_at = now
    if by is not None:
        session.stopped_by = by
    session.save(update_fields=["status", "reason", "stop_requested_at", "stopped_by"])
    enqueue.pass_soon()


SERVER_GONE = gettext_lazy(
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
        gone = said_to(locked.user, SERVER_GONE)  # stored and told in the owner's language
        session_finish(locked, NotebookStatus.STOPPED, gone, now=now)
        notice_send(user=locked.user, level="warning", text=gone, ref=f"{locked.ref}:gone")
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
            session_ask_stop(session, reason, now=now)
            ended += 1
    return ended
