"""The roster pages of a course (its teachers and admins): the roster, upload → preview → confirm, export, send an
invitation again; the invitation's one-time sign-in page (anyone holding the link); and the page where a person
accepts or declines a request to join a course (theirs only). Thin."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import SetPasswordForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from accounts.errors import Conflict, NotFound, PortalError
from accounts.invitations import invitation_accept, invitation_answer, invitation_resend, invitation_valid
from accounts.models import User
from accounts.rosters import roster_commit, roster_export, roster_plan, roster_size_check
from accounts.selectors import invitation_of, roster_course_for, roster_of, roster_waiting
from accounts.signin.backends import local_login_allows

UPLOAD_FIELD = "file"


def _link_base(request: HttpRequest) -> str:
    return request.build_absolute_uri("/").rstrip("/")


def _page(request: HttpRequest, course, *, error: str = "", status: int = 200) -> HttpResponse:
    context = {"course": course, "rows": roster_of(course), "waiting": roster_waiting(course), "error": error}
    return render(request, "rosters/roster.html", context, status=status)


@login_required
@require_safe
def roster_page(request: HttpRequest, code: str) -> HttpResponse:
    return _page(request, roster_course_for(request.user, code))


@login_required
@require_POST
def roster_preview(request: HttpRequest, code: str) -> HttpResponse:
    course = roster_course_for(request.user, code)
    upload = request.FILES.get(UPLOAD_FIELD)
    if upload is None:
        return _page(request, course, error=_("Choose the roster file (CSV) to upload."), status=400)
    try:
        roster_size_check(upload.size)  # before reading it into memory
        data = upload.read()
        plan = roster_plan(course=course, data=data, by=request.user)
    except PortalError as exc:
        return _page(request, course, error=exc.message, status=exc.status)
    text = data.decode("utf-8-sig")
    return _preview(request, plan, text, status=400 if plan.problems else 200)


def _preview(request: HttpRequest, plan, text: str, *, status: int = 200, error: str = "") -> HttpResponse:
    context = {"course": plan.course, "plan": plan, "roster": text, "error": error}
    return render(request, "rosters/preview.html", context, status=status)


@login_required
@require_POST
def roster_import(request: HttpRequest, code: str) -> HttpResponse:
    course = roster_course_for(request.user, code)
    text = request.POST.get("roster")
    if text is None:
        return _page(
            request, course, error=_("Upload the roster file first; its preview has the Import button."), status=400
        )
    fingerprint = request.POST.get("fingerprint", "")
    try:
        plan = roster_commit(
            course=course, by=request.user, data=text, fingerprint=fingerprint, link_base=_link_base(request)
        )
    except Conflict as exc:
        plan = roster_plan(course=course, data=text, by=request.user)
        return _preview(request, plan, text, status=exc.status, error=exc.message)
    except PortalError as exc:
        try:
            plan = roster_plan(course=course, data=text, by=request.user)
        except PortalError:
            return _page(request, course, error=exc.message, status=exc.status)
        return _preview(request, plan, text, status=exc.status, error=exc.message)
    parts = [
        _("%(count)d added") % {"count": len(plan.add)},
        _("%(count)d invited by e-mail") % {"count": len(plan.invite)},
        _("%(count)d asked to join (enrolled when they accept)") % {"count": len(plan.consent)},
        _("%(count)d changed") % {"count": len(plan.change)},
        _("%(count)d removed") % {"count": len(plan.remove)},
    ]
    messages.success(
        request, _("Roster of %(code)s imported: %(parts)s.") % {"code": course.code, "parts": ", ".join(parts)}
    )
    return redirect("roster", code=course.code)


@login_required
@require_safe
def roster_csv(request: HttpRequest, code: str) -> HttpResponse:
    course = roster_course_for(request.user, code)
    response = HttpResponse(roster_export(course=course), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{course.code}-roster.csv"'
    return response


@login_required
@require_POST
def roster_reinvite(request: HttpRequest, code: str, username: str) -> HttpResponse:
    course = roster_course_for(request.user, code)
    row = next((r for r in roster_of(course) if r["user"].username == username and r["invited"]), None)
    if row is None:
        raise NotFound(_("Nobody in this course waits for an invitation under that username."))
    invitation_resend(user=row["user"], course=course, by=request.user, link_base=_link_base(request))
    messages.success(
        request,
        _("A new invitation is on its way to %(email)s; the old link no longer works.") % {"email": row["user"].email},
    )
    return redirect("roster", code=course.code)


# --- The invitation's one-time link ----------------------------------------------------------------------------


GONE = gettext_noop(
    "This sign-in link has been used or has expired. Ask your teacher to send a new invitation, or sign in."
)


@require_http_methods(["GET", "POST"])
def invitation_page(request: HttpRequest, token: str) -> HttpResponse:
    invitation = invitation_valid(token)
    if invitation is None:
        return render(request, "rosters/invitation_gone.html", {"reason": _(GONE)}, status=404)
    if not local_login_allows(invitation.user):
        # LOCAL_LOGIN keeps this person off passwords: the university's sign-in is their way in.
        reason = _(
            "This lab signs you in with your %(provider)s account, not a password:"
            " use “Sign in with …” on the sign-in page."
        ) % {"provider": settings.OIDC_PROVIDER_NAME}
        return render(request, "rosters/invitation_gone.html", {"reason": reason}, status=403)
    form = SetPasswordForm(invitation.user, request.POST or None)
    context = {"invitation": invitation, "form": form}
    if request.method == "POST":
        if not form.is_valid():
            return render(request, "rosters/invitation.html", context, status=400)
        user: User | None = invitation_accept(token=token, password=form.cleaned_data["new_password1"])
        if user is None:  # someone used it a moment before
            return render(request, "rosters/invitation_gone.html", {"reason": _(GONE)}, status=404)
        login(request, user, backend="accounts.signin.backends.LocalPasswordBackend")
        messages.success(
            request, _("Welcome, %(name)s: your password is set and you are signed in.") % {"name": user.username}
        )
        return redirect("dashboard")
    return render(request, "rosters/invitation.html", context)


# --- A request to join a course: the person answers, signed in as themselves --------------------------------------

DECISIONS = {"accept": True, "decline": False}


@login_required
@require_http_methods(["GET", "POST"])
def course_invitation(request: HttpRequest, invitation_id: int) -> HttpResponse:
    invitation = invitation_of(request.user, invitation_id)  # someone else's: 404, as for no such invitation
    context = {"invitation": invitation, "open": invitation.used_at is None and invitation.expires_at > timezone.now()}
    if request.method == "GET":
        return render(request, "rosters/course_invitation.html", context)
    decision = request.POST.get("decision", "")
    if decision not in DECISIONS:
        context["error"] = _("Choose Accept or Decline.")
        return render(request, "rosters/course_invitation.html", context, status=400)
    try:
        invitation = invitation_answer(user=request.user, invitation_id=invitation.pk, accept=DECISIONS[decision])
    except PortalError as exc:
        context["error"] = exc.message
        return render(request, "rosters/course_invitation.html", context, status=exc.status)
    code = invitation.course.code
    if DECISIONS[decision]:
        messages.success(request, _("You are now in %(code)s.") % {"code": code})
    else:
        messages.success(request, _("You declined to join %(code)s; nothing changed.") % {"code": code})
    return redirect("dashboard")
