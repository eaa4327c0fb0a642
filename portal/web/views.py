"""The people-facing pages: sign in, dashboards per role, account. Thin: gather, render."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.views.decorators.http import require_http_methods, require_safe

from labs.notebooks.selectors import notebooks_live_of
from labs.reservations.selectors import reservations_of, reservations_pending
from labs.selectors import lab_summary, usage_of
from portal.accounts.models import User
from portal.accounts.selectors import (
    courses_of,
    effective_quota,
    notices_for,
    people_by_role,
    token_expired,
    token_expires_at,
    token_of,
)
from portal.accounts.services import notice_dismiss, token_issue, token_revoke, user_report_email_set


class LoginView(auth_views.LoginView):
    template_name = "auth/login.html"
    redirect_authenticated_user = True
    http_method_names = ["get", "post", "head", "options"]  # a form: no PUT standing in for POST

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
        had_token = token_of(self.request.user) is not None
        response = super().form_valid(form)  # saving the new password revokes the API token (User.save)
        if had_token:
            messages.success(self.request, "Your password was changed, and your API token revoked with it.")
        else:
            messages.success(self.request, "Your password was changed.")
        return response

    def form_invalid(self, form):
        response = super().form_invalid(form)
        response.status_code = 400
        return response


def _meter(used: float, allowed: float) -> dict:
    percent = 0 if allowed <= 0 else min(100, round(100 * used / allowed))
    level = "ok" if percent < 80 else ("warn" if percent < 100 else "full")
    return {"used": used, "allowed": allowed, "percent": percent, "level": level}


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
            "gpu_hours": _meter(usage["gpu_hours_week"], float(quota.gpu_hours_week)),
            "notebooks": _meter(usage["notebooks_running"], quota.max_notebooks),
            "jobs": _meter(usage["jobs_running"], quota.max_jobs),
        },
    }
    context["notices"] = notices_for(user)
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


def _account_page(request: HttpRequest, *, status: int = 200) -> HttpResponse:
    token = token_of(request.user)
    context = {"token": token}
    if token is not None:
        context.update(token_expires_at=token_expires_at(token), token_expired=token_expired(token))
    return render(request, "account.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def account(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _account_page(request)
    token = token_of(request.user)
    live = token is not None and not token_expired(token)
    action = request.POST.get("action", "new")
    if action == "reports":
        wanted = request.POST.get("usage_report_email") == "yes"
        user_report_email_set(user=request.user, wanted=wanted)
        messages.success(
            request,
            "You will get the weekly usage summary by e-mail."
            if wanted
            else "You will no longer get the weekly usage summary by e-mail.",
        )
        return redirect("account")
    if action == "revoke":
        if token is None:
            messages.info(request, "You have no API token to revoke.")
            return redirect("account")
        if request.POST.get("confirm") != "yes":
            messages.error(request, "Tick the box to confirm: scripts using the token stop working at once.")
            return _account_page(request, status=400)
        token_revoke(user=request.user)
        messages.success(request, "Your API token was revoked: scripts using it now get 401.")
        return redirect("account")
    if action != "new":
        messages.error(request, "Choose to make a new token or to revoke the one you have.")
        return _account_page(request, status=400)
    if live and request.POST.get("confirm") != "yes":
        messages.error(request, "Tick the box to confirm: the old token stops working at once.")
        return _account_page(request, status=400)
    token_issue(user=request.user, regenerate=token is not None)
    messages.success(request, "A new API token was made." if token is not None else "Your API token was made.")
    return redirect("account")


@login_required
@require_http_methods(["POST"])
def notice_dismiss_view(request: HttpRequest, notice_id: int) -> HttpResponse:
    notice_dismiss(user=request.user, notice_id=notice_id)
    return redirect("dashboard")
