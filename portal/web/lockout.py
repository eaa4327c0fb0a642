"""Sign-in paused: the answers of a locked (username, address) pair and of a throttled address, page and API.

django-axes decides the lock (settings: AXES_*) and calls `lockout_response` (AXES_LOCKOUT_CALLABLE) for the HTML
login and the admin console's; the token endpoint raises `locked_error` itself. The per-address throttle of the
HTML login (`LoginThrottle`, LOGIN_THROTTLE_RATE) is checked by `login_throttled`. Both answer 429 with Retry-After
and a sentence that says when to try again and what else to do (accounts/permissions.py).
"""

from __future__ import annotations

import datetime as dt
import math

from axes.backends import AxesStandaloneBackend
from axes.helpers import get_client_username, get_cool_off
from axes.models import AccessAttempt
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts.addresses import client_ip_address
from accounts.errors import SignInPaused
from accounts.models import User
from accounts.permissions import SIGNIN_LOCKED, SIGNIN_THROTTLED
from accounts.selectors import user_signed_in
from accounts.usernames import username_key
from portal.api.throttles import LoginThrottle


def _wait_words(seconds: int) -> str:
    if seconds < 60:
        return ngettext("%(n)d second", "%(n)d seconds", seconds) % {"n": seconds}
    minutes = math.ceil(seconds / 60)
    return ngettext("%(n)d minute", "%(n)d minutes", minutes) % {"n": minutes}


def lock_retry_after(*, username: str, address: str | None, cool_off) -> int:
    """Seconds until the (username, address) pair may try again: the cool-off after the failure that locked it."""
    last = (
        AccessAttempt.objects.filter(username=username, ip_address=address)  # (None: IS NULL, as axes stored it)
        .order_by("-attempt_time")
        .values_list("attempt_time", flat=True)
        .first()
    )
    if last is None:
        return 1
    return max(1, math.ceil((last + cool_off - timezone.now()).total_seconds()))


def locked_error(request: HttpRequest, credentials: dict | None) -> SignInPaused:
    username = get_client_username(request, credentials) or ""
    wait = lock_retry_after(username=username, address=client_ip_address(request), cool_off=get_cool_off(request))
    at = timezone.localtime(timezone.now() + dt.timedelta(seconds=wait)).strftime("%H:%M")
    sentence = _(SIGNIN_LOCKED).format(username=username or _("this account"), at=at, wait=_wait_words(wait))
    return SignInPaused(sentence, code="locked_out", retry_after_s=wait)


def paused_answer(request: HttpRequest, error: SignInPaused) -> HttpResponse:
    if request.path.startswith("/api/"):
        response = JsonResponse(error.as_body(), status=error.status)
    else:
        response = render(request, "auth/paused.html", {"reason": error.message}, status=error.status)
    for header, value in error.headers.items():
        response[header] = value
    return response


def lockout_response(request: HttpRequest, original_response=None, credentials: dict | None = None) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: the answer to a sign-in of a locked (username, address) pair."""
    return paused_answer(request, locked_error(request, credentials))


def login_throttled(request: HttpRequest) -> HttpResponse | None:
    """The per-address throttle of POST /login/: None to go on, else the 429 page."""
    throttle = LoginThrottle()
    if throttle.allow_request(request, None):
        return None
    wait = max(1, math.ceil(throttle.wait() or 1))
    return paused_answer(
        request, SignInPaused(_(SIGNIN_THROTTLED).format(wait=_wait_words(wait)), code="throttled", retry_after_s=wait)
    )


class PasswordLockoutBackend(AxesStandaloneBackend):
    """django-axes' check, for sign-ins with a username and password and a request (the login pages, the token
    endpoint). Others are not its business: single sign-on backends (no password; their failures are not
    guesses), and code that authenticates without a request (the test client's login, scripts)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None or username is None or password is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)

    def get_user(self, user_id):
        # It never signs anyone in itself; a session written naming the first backend still finds its user.
        return user_signed_in(user_id)


def not_a_password_sign_in(request: HttpRequest, credentials: dict | None) -> bool:
    """AXES_WHITELIST_CALLABLE: a failure without a username (single sign-on) is never counted or locked."""
    return not (credentials or {}).get("username")


def lockout_username(request: HttpRequest, credentials: dict | None) -> str | None:
    """AXES_USERNAME_CALLABLE: the account the username tried names, whatever its case (a lock on "Student" holds
    for "student" and "STUDENT": they sign in to one account), as its name in lower case; a name no account has,
    normalised the same way. Cut to what a username can be (django-axes stores 255 characters; a longer one is no
    account's, and its first 150 characters lock it as well as all of them)."""
    if credentials:
        username = credentials.get("username")
    else:
        username = request.POST.get("username") if request.method == "POST" else None
    if username is None:
        return None
    tried = str(username)[:150]
    # The account as the sign-in finds it (the database compares), so no spelling of its name escapes the lock.
    account = User.objects.named(tried).values_list("username", flat=True).first() if tried else None
    return username_key(account or tried)
