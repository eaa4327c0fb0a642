"""The people-facing pages: sign in, dashboards per role, account. Thin: gather, render."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_safe

from accounts.models import User
from accounts.quotas import effective_quota
from accounts.selectors import (
    courses_of,
    invitations_waiting_for,
    notices_for,
    people_by_role,
    tokens_of,
)
from accounts.services import notice_dismiss
from accounts.signin.oidc import oidc_enabled
from labs.notebooks.selectors import notebooks_live_of
from labs.reservations.selectors import reservations_of, reservations_pending
from labs.selectors import lab_summary, quota_meter, usage_of
from portal.web.lockout import login_throttled
from portal.web.signin import oidc_start_url


class LoginView(auth_views.LoginView):
    template_name = "auth/login.html"
    redirect_authenticated_user = True
    http_method_names = ["get", "post", "head", "options"]  # a form: no PUT standing in for POST

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        # "Sign in with <university>" first when configured; the password form for whom LOCAL_LOGIN (or LDAP) lets in.
        context["oidc_enabled"] = oidc_enabled()
        context["oidc_provider_name"] = settings.OIDC_PROVIDER_NAME
        context["oidc_url"] = oidc_start_url(context.get("next") or "")
        context["ldap_enabled"] = bool(settings.LDAP_SERVER_URI)
        context["ldap_provider_name"] = settings.LDAP_PROVIDER_NAME
        context["local_login"] = settings.LOCAL_LOGIN
        context["password_form"] = settings.LOCAL_LOGIN != "off" or context["ldap_enabled"]
        return context

    def post(self, request, *args, **kwargs):
        # Per address first (LOGIN_THROTTLE_RATE); django-axes then locks a (username, address) pair that failed
        # too often (its middleware answers with portal.web.lockout.lockout_response).
        return login_throttled(request) or super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        # A failed sign-in is bad input: say so with a 400, and the form shows why.
        response = super().form_invalid(form)
        response.status_code = 400
        return response


class PasswordChangeView(auth_views.PasswordChangeView):
    template_name = "auth/password_change.html"
    success_url = reverse_lazy("account")
    http_method_names = ["get", "post", "head", "options"]

    def form_valid(self, form):
        had_tokens = tokens_of(self.request.user).exists()
        # Saving the new password revokes the API tokens (User.save) and ends the person's other sessions (Django
        # keeps this one: update_session_auth_hash).
        response = super().form_valid(form)
        if had_tokens:
            messages.success(self.request, _("Your password was changed, and your API tokens revoked with it."))
        else:
            messages.success(self.request, _("Your password was changed."))
        return response

    def form_invalid(self, form):
        response = super().form_invalid(form)
        response.status_code = 400
        return response


@login_required
@require_safe
def dashboard(request: HttpRequest) -> HttpResponse:
    user: User = request.user
    quota = effective_quota(user)
    usage = usage_of(user)
    context = {
        "quota": quota,
        "usage": usage,
        "courses": courses_of(user),
        "lab": lab_summary(),
        "meters": {
            "gpu_hours": quota_meter(usage["gpu_hours_week"], float(quota.gpu_hours_week)),
            "notebooks": quota_meter(usage["notebooks_running"], quota.max_notebooks),
            "jobs": quota_meter(usage["jobs_running"], quota.max_jobs),
        },
    }
    context["notices"] = notices_for(user)
    context["invitations"] = invitations_waiting_for(user)
    context["my_notebooks"] = notebooks_live_of(user)
    if user.is_teacher or user.is_lab_admin:
        context["my_reservations"] = reservations_of(user)[:5]
    if user.is_lab_admin:
        context["pending_count"] = reservations_pending().count()
        context["people"] = people_by_role()
        template = "dashboard/admin.html"
    elif user.is_teacher:
        template = "dashboard/teacher.html"
    else:
        template = "dashboard/student.html"
    return render(request, template, context)


@login_required
@require_safe
def dashboard_live(request: HttpRequest) -> HttpResponse:
    """The dashboard's live parts (notices, my notebooks) as they are now: its script swaps them in while it is open."""
    context = {"notices": notices_for(request.user), "my_notebooks": notebooks_live_of(request.user)}
    response = render(request, "dashboard/_live.html", context)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_http_methods(["POST"])
def notice_dismiss_view(request: HttpRequest, notice_id: int) -> HttpResponse:
    notice_dismiss(user=request.user, notice_id=notice_id)
    return redirect("dashboard")
