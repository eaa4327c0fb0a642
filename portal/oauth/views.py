"""The toolkit's userinfo and discovery views, held to what the portal does."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_not_required
from django.db import transaction
from django.http import HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import csrf_exempt
from oauth2_provider import views

from portal.oauth.services import oauth_code_burn, oauth_code_lock

# ID tokens are signed with the RSA key only (settings: OIDC_RSA_PRIVATE_KEY; the hub's client is RS256).
ID_TOKEN_SIGNING_ALGORITHMS = ["RS256"]


# As the toolkit's view: the hub calls it server to server, with no CSRF cookie (as_view copies dispatch's marks).
@method_decorator(csrf_exempt, name="dispatch")
@method_decorator(login_not_required, name="dispatch")
class UserInfoView(views.UserInfoView):
    """Claims for the bearer of an access token sent in the Authorization header, and only there.

    RFC 9700 (2.4.2) and RFC 6750 (5.3): tokens in a URL end up in logs, histories and Referer headers.
    The toolkit's own check (COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT) covers resource views, not this one.
    """

    def dispatch(self, request, *args, **kwargs):
        if "access_token" in request.GET:
            description = "Send the access token in the Authorization header (Bearer), never in the URL."
            response = JsonResponse({"error": "invalid_request", "error_description": description}, status=400)
            response["WWW-Authenticate"] = f'Bearer error="invalid_request", error_description="{description}"'
            response["Cache-Control"] = "no-store"
            return response
        return super().dispatch(request, *args, **kwargs)


@method_decorator(csrf_exempt, name="dispatch")
@method_decorator(login_not_required, name="dispatch")
class TokenView(views.TokenView):
    """The toolkit's token endpoint, where an authorization code is good for one try, right or wrong.

    The toolkit keeps a code after a refused exchange (a wrong PKCE verifier, redirect URI or client secret), so
    whoever intercepted one could try again and again within its minute. Here a refused exchange burns it, and the
    tries of one code wait for each other (a row lock), so two at once are still one try each, in turn."""

    def post(self, request, *args, **kwargs) -> HttpResponse:
        code = request.POST.get("code") if request.POST.get("grant_type") == "authorization_code" else None
        if not code:
            return super().post(request, *args, **kwargs)
        with transaction.atomic():
            oauth_code_lock(code=code)
            response = super().post(request, *args, **kwargs)
            if response.status_code != 200:
                oauth_code_burn(code=code)
        return response


class ConnectDiscoveryInfoView(views.ConnectDiscoveryInfoView):
    """The toolkit's discovery document, advertising only the signing algorithm ID tokens are made with."""

    def get(self, request, *args, **kwargs) -> HttpResponse:
        response = super().get(request, *args, **kwargs)
        document = json.loads(response.content)
        document["id_token_signing_alg_values_supported"] = ID_TOKEN_SIGNING_ALGORITHMS
        replaced = JsonResponse(document, status=response.status_code)
        for header in ("Access-Control-Allow-Origin", "Cache-Control"):
            if header in response:
                replaced[header] = response[header]
        return replaced
