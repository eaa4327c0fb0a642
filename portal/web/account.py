"""The account page: API tokens (list, make, revoke one) and sign out everywhere. Thin: gather, call, render."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import translation
from django.utils.translation import get_language_from_request, ngettext
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from accounts.errors import InvalidInput, NotPermitted
from accounts.models import Course, TokenSource
from accounts.notify.events import EVENTS, PERSONAL_CHANNELS
from accounts.notify.selectors import course_channels_for, notify_overview
from accounts.notify.services import course_channel_set, notify_test, preferences_set
from accounts.selectors import token_live_of, tokens_of
from accounts.services import (
    sessions_end_everywhere,
    token_create,
    token_revoke,
    user_language_set,
    user_report_email_set,
)
from portal.oauth.services import oauth_tokens_revoke

LIFETIMES = (7, 30, 90, 365)  # the page's choices, in days, cut to API_TOKEN_TTL_DAYS


def _lifetimes(ttl: int) -> list[int]:
    days = [d for d in LIFETIMES if not ttl or d <= ttl]
    return days if not ttl or ttl in days else [*days, ttl]


def _page(request: HttpRequest, *, status: int = 200, **extra) -> HttpResponse:
    ttl = settings.API_TOKEN_TTL_DAYS
    context = {
        "tokens": list(tokens_of(request.user)),
        "lifetimes": _lifetimes(ttl),
        "default_lifetime": ttl,
        "tokens_max": settings.API_TOKENS_MAX,
        "languages": settings.LANGUAGES,
        "notify": notify_overview(request.user),
        "course_channels": course_channels_for(request.user),
        **extra,
    }
    return render(request, "account.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def account(request: HttpRequest) -> HttpResponse:
    """GET the page; POST makes a new token (name, lifetime) and shows its key this once, or (action=reports)
    turns the weekly usage summary by e-mail on or off."""
    if request.method == "GET":
        return _page(request)
    if request.POST.get("action") == "language":
        try:
            code = user_language_set(user=request.user, language=request.POST.get("language", ""))
        except InvalidInput as exc:
            messages.error(request, exc.message)
            return _page(request, status=400)
        translation.activate(code or get_language_from_request(request))  # this answer already speaks it
        messages.success(request, _("Your language was saved."))
        return redirect("account")
    if request.POST.get("action", "").startswith(("notifications", "course-channel")):
        return _notifications_post(request)
    if request.POST.get("action") == "reports":
        wanted = request.POST.get("usage_report_email") == "yes"
        user_report_email_set(user=request.user, wanted=wanted)
        messages.success(
            request,
            _("You will get the weekly usage summary by e-mail.")
            if wanted
            else _("You will no longer get the weekly usage summary by e-mail."),
        )
        return redirect("account")
    raw = request.POST.get("expires_in_days", "").strip()
    if raw not in ("", "never") and not (raw.isascii() and raw.isdigit()):  # "²" is a digit to isdigit, not to int
        messages.error(request, _("Choose how long the token works from the list."))
        return _page(request, status=400)
    days = None if raw in ("", "never") else int(raw)  # none: the lab's default (never only when TTL is 0)
    try:
        # Made in this browser session: it ends with the person's sessions (sign out everywhere).
        name = request.POST.get("name", "")
        token, key = token_create(user=request.user, name=name, expires_in_days=days, source=TokenSource.SESSION)
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return _page(request, status=400)
    messages.success(request, _("Your new API token was made. Copy it now: it is shown only this once."))
    return _page(request, new_key=key, new_token=token)


@login_required
@require_http_methods(["GET", "POST"])
def token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    """GET asks first (what stops working); POST revokes. Someone else's token, a revoked or unknown one: 404."""
    token = token_live_of(request.user, token_id)
    if request.method == "GET":
        return render(request, "auth/token_revoke.html", {"token": token})
    if request.POST.get("confirm") != "yes":
        messages.error(request, _("Tick the box to confirm: scripts using the token get 401 at once."))
        return render(request, "auth/token_revoke.html", {"token": token}, status=400)
    token = token_revoke(user=request.user, token_id=token.pk)
    label = token.name or token.prefix + "…"
    messages.success(
        request, _("The API token %(label)s was revoked: scripts using it now get 401.") % {"label": label}
    )
    return redirect("account")


@login_required
@require_http_methods(["GET", "POST"])
def sign_out_everywhere(request: HttpRequest) -> HttpResponse:
    """GET asks first; POST ends every session of the person, here and at the hub's sign-in, and signs out."""
    if request.method == "GET":
        return render(request, "auth/sign_out_everywhere.html")
    if request.POST.get("confirm") != "yes":
        messages.error(request, _("Tick the box to confirm: every browser signed in as you is signed out."))
        return render(request, "auth/sign_out_everywhere.html", status=400)
    user = request.user
    ended = sessions_end_everywhere(user=user)
    oauth_tokens_revoke(user=user)
    logout(request)
    told = _("You were signed out everywhere: every browser and the notebook service sign in again.")
    if ended:
        told += " " + ngettext(
            "%(count)d API token made on your account page stopped working too.",
            "%(count)d API tokens made on your account page stopped working too.",
            ended,
        ) % {"count": ended}
    messages.success(request, told)
    return redirect("login")


def _notifications_post(request: HttpRequest) -> HttpResponse:
    """The notifications card: choices and chat address, a test message, or a course's channel (its teachers)."""
    action = request.POST["action"]
    try:
        if action == "notifications-test":
            notify_test(user=request.user)
            messages.success(request, _("A test message is on its way to each of your channels."))
        elif action == "course-channel":
            course = Course.objects.filter(code=request.POST.get("course", "")).first()
            if course is None:
                raise NotPermitted(_("Only the course's teachers and admins set its channel."))
            course_channel_set(by=request.user, course=course, url=request.POST.get("url", ""))
            messages.success(request, _("The course's channel was saved."))
        else:
            choices = {
                event: {channel: f"{event}:{channel}" in request.POST for channel in PERSONAL_CHANNELS}
                for event in EVENTS
            }
            preferences_set(user=request.user, choices=choices, chat_url=request.POST.get("chat_url", ""))
            messages.success(request, _("Your notification choices were saved."))
    except InvalidInput as exc:
        messages.error(request, exc.message)
        return _page(request, status=400)
    except NotPermitted as exc:
        messages.error(request, exc.message)
        return _page(request, status=403)
    return redirect("account")
