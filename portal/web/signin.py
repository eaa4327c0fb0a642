"""The university's sign-in pages: start the OpenID Connect flow, and come back from it.

The flow itself is mozilla-django-oidc's (state, nonce, PKCE in the session); these views add what a person sees
when it fails (a page that says what happened and where to go, never a 500) and the state's time limit."""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.contrib.auth import REDIRECT_FIELD_NAME
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from accounts.signin.oidc import SigninError, oidc_enabled, provider_metadata

logger = logging.getLogger("portal.signin")


def signin_failed(request: HttpRequest, sentence: str, *, status: int = 400) -> HttpResponse:
    return render(request, "auth/signin_failed.html", {"sentence": sentence}, status=status)


class OIDCStartView(OIDCAuthenticationRequestView):
    """GET /login/oidc/?next=...: off to the IdP with state, nonce and a PKCE challenge."""

    def __init__(self, *args, **kwargs):
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)  # the endpoints come at request time

    def get(self, request):
        if not oidc_enabled():
            raise Http404(_("No university sign-in is configured."))
        try:
            metadata = provider_metadata()
        except SigninError as exc:
            return signin_failed(request, exc.sentence, status=exc.status)
        self.OIDC_OP_AUTH_ENDPOINT = metadata["authorization_endpoint"]
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        return super().get(request)


class OIDCCallbackView(OIDCAuthenticationCallbackView):
    """GET /login/oidc/callback/?code=...&state=...: the IdP sends the browser back here."""

    @property
    def failure_url(self):
        return reverse("login")

    def login_failure(self):
        return signin_failed(
            self.request,
            _("%(provider)s did not sign you in. Start again from the sign-in page.")
            % {"provider": settings.OIDC_PROVIDER_NAME},
        )

    def get(self, request):
        if not oidc_enabled():
            raise Http404(_("No university sign-in is configured."))
        if request.GET.get("error"):
            logger.info(
                "OIDC sign-in came back with %s: %s",
                request.GET.get("error"),
                request.GET.get("error_description", "")[:200],
            )
        elif "code" in request.GET and "state" in request.GET:
            states = request.session.get("oidc_states") or {}
            entry = states.get(request.GET["state"])
            if entry is None:
                # Used already (a replay, the back button) or never started in this browser.
                logger.warning("OIDC callback with an unknown or used state")
                return signin_failed(
                    request,
                    _(
                        "This sign-in link was used already or did not start in this browser. Start again from the "
                        "sign-in page."
                    ),
                )
            if time.time() - float(entry.get("added_on", 0)) > settings.OIDC_STATE_TTL_S:
                del states[request.GET["state"]]
                request.session["oidc_states"] = states
                logger.warning("OIDC callback with an expired state")
                return signin_failed(
                    request, _("The sign-in took too long and expired. Start again from the sign-in page.")
                )
        else:
            return signin_failed(
                request, _("This is not an answer from the sign-in. Start again from the sign-in page.")
            )
        try:
            return super().get(request)
        except SigninError as exc:
            return signin_failed(request, exc.sentence, status=exc.status)


def oidc_start_url(next_url: str = "") -> str:
    url = reverse("oidc_start")
    if next_url:
        from urllib.parse import urlencode

        url += "?" + urlencode({REDIRECT_FIELD_NAME: next_url})
    return url
