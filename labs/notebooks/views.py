"""The notebook pages: start and follow my notebooks, stop and extend, my courses' notebooks, profiles. Thin.

The list is rendered whole by the server (it works without JavaScript); static/js/notebooks.js keeps it current by
polling GET /api/v1/notebooks/?mine=true while something is live.
"""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.errors import NotFound, PortalError
from accounts.permissions import (
    COURSE_NOTEBOOKS_STAFF_ONLY,
    PROFILES_STAFF_ONLY,
    require_looks_after_courses,
    require_staff,
)
from accounts.quotas import effective_quota
from accounts.timefmt import fmt_time
from labs.ledger import week_gpu_hours
from labs.models import NOTEBOOK_ACTIVE, NOTEBOOK_DONE, NOTEBOOK_LIVE, NotebookSession, NotebookStatus
from labs.notebooks.forms import NotebookProfileForm, NotebookStartForm, profile_card, share_label
from labs.notebooks.profiles import profile_save, profile_set_active
from labs.notebooks.selectors import (
    course_sessions,
    notebook_for,
    notebooks_visible_to,
    profiles_editable_by,
    profiles_offered,
    profiles_startable,
    queue_positions,
    require_may_stop,
)
from labs.notebooks.services import (
    notebook_extend,
    notebook_request,
    notebook_stop,
    notebooks_stop_course,
)
from labs.selectors import quota_meter

# Ended sessions shown under the live ones (static/js/notebooks.js shows as many).
ENDED_SHOWN = 5


def _clock(moment: dt.datetime | None) -> str:
    """A time in the lab's zone: "14:05" today, "Tue 14:05" another day (static/js/notebooks.js agrees)."""
    if moment is None:
        return ""
    local = timezone.localtime(moment)
    return local.strftime("%H:%M") if local.date() == timezone.localdate() else local.strftime("%a %H:%M")


def _row(session: NotebookSession, positions: dict[int, int]) -> dict:
    return {
        "session": session,
        "position": positions.get(session.pk),
        "share": share_label(session.profile.gpu_share),
        "ends": _clock(session.ends_at),
        "must_end_by": _clock(session.must_end_by),
        "stopped": _clock(session.stopped_at),
    }


def _render_list(
    request: HttpRequest,
    *,
    form: NotebookStartForm | None = None,
    error: str = "",
    status: int = 200,
    refusal_help: str = "",
    ask_more: str = "",
) -> HttpResponse:
    user = request.user
    quota = effective_quota(user)
    offered = profiles_offered(user)
    startable = profiles_startable(user)
    startable_ids = {profile.pk for profile in startable}
    mine = notebooks_visible_to(user).filter(user=user)
    live = list(mine.filter(status__in=NOTEBOOK_LIVE))
    ended = list(mine.filter(status__in=NOTEBOOK_DONE)[:ENDED_SHOWN])
    positions = queue_positions(live)
    form = form or NotebookStartForm(initial={"profile": startable[0].slug if startable else ""})
    context = {
        "form": form,
        "error": error,
        "refusal_help": refusal_help,  # where a limit that refused it is explained (/help/#limit-…)
        "ask_more": ask_more,
        "chosen": form["profile"].value() or "",
        "cards": [profile_card(profile) for profile in startable],
        "over_quota": [profile_card(profile) for profile in offered if profile.pk not in startable_ids],
        "offered": offered,
        "quota": quota,
        "quota_share": share_label(quota.notebook_gpu_share),
        "live": [_row(session, positions) for session in live],
        "ended": [_row(session, positions) for session in ended],
        "active_count": sum(1 for session in live if session.status in NOTEBOOK_ACTIVE),
        "meter": quota_meter(week_gpu_hours(user), quota.gpu_hours_week),
        "ended_shown": ENDED_SHOWN,
        "extend_min": settings.NOTEBOOKS_EXTEND_MIN,
    }
    return render(request, "notebooks/list.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def notebook_list(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _render_list(request)
    form = NotebookStartForm(request.POST)
    if not form.is_valid():
        return _render_list(request, form=form, error="Choose one of the profiles offered to you.", status=400)
    try:
        session = notebook_request(user=request.user, profile=form.cleaned_data["profile"])
    except PortalError as exc:
        return _render_list(
            request,
            form=form,
            error=exc.message,
            status=exc.status,
            refusal_help=exc.extra.get("help", ""),
            ask_more=exc.extra.get("ask", ""),
        )
    session = notebook_for(request.user, session.pk)  # as it is after the commit (the pass may have moved it)
    name = session.profile.name
    if session.status == NotebookStatus.READY:
        messages.success(request, _("“%(name)s” is ready: open it below.") % {"name": name})
    elif session.status == NotebookStatus.STARTING:
        messages.success(request, _("“%(name)s” is starting on %(node)s.") % {"name": name, "node": session.node})
    else:
        messages.success(
            request,
            _("“%(name)s” is in the queue. %(reason)s It starts by itself; this page shows when it is ready.")
            % {"name": name, "reason": session.reason},
        )
    return redirect("notebooks")


@login_required
@require_POST
def notebook_extend_view(request: HttpRequest, notebook_id: int) -> HttpResponse:
    session = notebook_for(request.user, notebook_id)
    try:
        session = notebook_extend(user=request.user, session=session)
    except PortalError as exc:
        return _render_list(
            request,
            error=exc.message,
            status=exc.status,
            refusal_help=exc.extra.get("help", ""),
            ask_more=exc.extra.get("ask", ""),
        )
    until = fmt_time(session.ends_at) if session.ends_at else _("its end")
    messages.success(
        request, _("“%(name)s” keeps running until %(until)s.") % {"name": session.profile.name, "until": until}
    )
    return redirect("notebooks")


@login_required
@require_http_methods(["GET", "POST"])
def notebook_stop_view(request: HttpRequest, notebook_id: int) -> HttpResponse:
    session = notebook_for(request.user, notebook_id)
    require_may_stop(request.user, session)
    back = "notebooks" if session.user_id == request.user.pk else "notebooks-course"
    context = {"session": session, "share": share_label(session.profile.gpu_share), "back": back}
    if request.method == "POST":
        if request.POST.get("confirm") != "yes":
            messages.error(request, _("Tick the box to confirm."))
            return render(request, "notebooks/stop.html", context, status=400)
        try:
            session = notebook_stop(user=request.user, session=session)
        except PortalError as exc:
            context["error"] = exc.message
            return render(request, "notebooks/stop.html", context, status=exc.status)
        label = f"“{session.profile.name}”"
        if session.user_id != request.user.pk:
            label = _("“%(name)s” of %(owner)s") % {"name": session.profile.name, "owner": session.user.username}
        if session.status == NotebookStatus.STOPPING:
            messages.success(
                request, _("%(label)s is stopping; its GPU goes back to the lab in a moment.") % {"label": label}
            )
        else:
            messages.success(request, f"{label}: {session.reason}")
        return redirect(back)
    return render(request, "notebooks/stop.html", context)


# --- My courses' notebooks (teachers, teaching assistants and admins) -----------------------------------------------


@login_required
@require_safe
def notebooks_course(request: HttpRequest) -> HttpResponse:
    require_looks_after_courses(request.user, COURSE_NOTEBOOKS_STAFF_ONLY)
    return render(request, "notebooks/course.html", {"rows": course_sessions(request.user)})


@login_required
@require_http_methods(["GET", "POST"])
def notebooks_course_stop(request: HttpRequest, code: str) -> HttpResponse:
    require_looks_after_courses(request.user, COURSE_NOTEBOOKS_STAFF_ONLY)
    row = next((r for r in course_sessions(request.user) if r["course"].code == code), None)
    if row is None:
        raise NotFound("No such course.")
    course = row["course"]
    sessions = [s for person in row["people"] for s in person["sessions"] if s.status in NOTEBOOK_ACTIVE]
    context = {"course": course, "sessions": sessions, "people": len({s.user_id for s in sessions})}
    if request.method == "POST":
        if request.POST.get("confirm") != "yes":
            messages.error(request, _("Tick the box to confirm."))
            return render(request, "notebooks/course_stop.html", context, status=400)
        try:
            stopped = notebooks_stop_course(user=request.user, course=course)
        except PortalError as exc:
            context["error"] = exc.message
            return render(request, "notebooks/course_stop.html", context, status=exc.status)
        messages.success(
            request,
            ngettext("%(n)d notebook in %(code)s stopped.", "%(n)d notebooks in %(code)s stopped.", stopped)
            % {"n": stopped, "code": course.code},
        )
        return redirect("notebooks-course")
    return render(request, "notebooks/course_stop.html", context)


# --- Profiles (teachers and admins) -----------------------------------------------------------


def _editable(request: HttpRequest, slug: str):
    profile = profiles_editable_by(request.user).filter(slug=slug).first()
    if profile is None:
        raise NotFound("No such profile.")
    return profile


def _apply_errors(form: NotebookProfileForm, exc: PortalError) -> None:
    form.add_error(None, exc.message)
    for field, why in exc.extra.get("fields", {}).items():
        if field in form.fields and not form.fields[field].disabled:
            form.add_error(field, why)


@login_required
@require_safe
def notebook_profiles(request: HttpRequest) -> HttpResponse:
    require_staff(request.user, PROFILES_STAFF_ONLY)
    profiles = profiles_editable_by(request.user).order_by("-is_active", "name")
    return render(request, "notebooks/profiles.html", {"cards": [profile_card(p) for p in profiles]})


def _profile_form(request: HttpRequest, profile=None) -> HttpResponse:
    form = NotebookProfileForm(request.POST or None, instance=profile, user=request.user)
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                saved = profile_save(user=request.user, profile=profile, **form.service_fields())
            except PortalError as exc:
                status = exc.status
                _apply_errors(form, exc)
            else:
                messages.success(
                    request, _("“%(name)s” (%(slug)s) is saved.") % {"name": saved.name, "slug": saved.slug}
                )
                return redirect("notebook-profiles")
    return render(request, "notebooks/profile_form.html", {"form": form, "profile": profile}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def notebook_profile_new(request: HttpRequest) -> HttpResponse:
    require_staff(request.user, PROFILES_STAFF_ONLY)
    return _profile_form(request)


@login_required
@require_http_methods(["GET", "POST"])
def notebook_profile_edit(request: HttpRequest, slug: str) -> HttpResponse:
    require_staff(request.user, PROFILES_STAFF_ONLY)
    return _profile_form(request, _editable(request, slug))


@login_required
@require_http_methods(["GET", "POST"])
def notebook_profile_deactivate(request: HttpRequest, slug: str) -> HttpResponse:
    require_staff(request.user, PROFILES_STAFF_ONLY)
    profile = _editable(request, slug)
    if request.method == "POST":
        if request.POST.get("confirm") != "yes":
            messages.error(request, _("Tick the box to confirm."))
            return render(request, "notebooks/profile_deactivate.html", {"profile": profile}, status=400)
        try:
            profile = profile_set_active(user=request.user, profile=profile, active=False)
        except PortalError as exc:
            messages.error(request, exc.message)
            return render(request, "notebooks/profile_deactivate.html", {"profile": profile}, status=exc.status)
        messages.success(
            request, _("“%(name)s” is no longer offered; running notebooks go on.") % {"name": profile.name}
        )
        return redirect("notebook-profiles")
    return render(request, "notebooks/profile_deactivate.html", {"profile": profile})


@login_required
@require_POST
def notebook_profile_activate(request: HttpRequest, slug: str) -> HttpResponse:
    require_staff(request.user, PROFILES_STAFF_ONLY)
    profile = profile_set_active(user=request.user, profile=_editable(request, slug), active=True)
    messages.success(request, _("“%(name)s” is offered again.") % {"name": profile.name})
    return redirect("notebook-profiles")
