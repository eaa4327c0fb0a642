"""What the portal tells the hub about a person, and who gets a token at all."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from oauth2_provider.oauth2_validators import OAuth2Validator

from accounts.locale import bcp47, language_of
from accounts.selectors import hub_username, role_of


def hub_groups(user) -> list[str]:
    """The person's role as the hub's one group: the hub makes members of "admin" its admins."""
    return [role_of(user)]


class PortalOAuth2Validator(OAuth2Validator):
    # The hub asks for "openid profile": the name it logs people in under and their role come with "profile".
    oidc_claim_scope = {**OAuth2Validator.oidc_claim_scope, "groups": "profile"}

    def get_additional_claims(self) -> dict[str, Any]:
        # Request-agnostic form (callables of the request), so the discovery document lists the claims.
        return {
            # The hub's user name: from the account's id (labs.notebooks names hub users the same way), so two
            # accounts never share a hub account, whatever their names and however they are renamed.
            "preferred_username": lambda request: hub_username(request.user),
            # What the hub and JupyterLab show the person (portal_hub.auth): their name at the portal.
            "name": lambda request: request.user.get_full_name() or request.user.username,
            "email": lambda request: request.user.email,
            "groups": lambda request: hub_groups(request.user),
            # OpenID Connect's standard claim (in "profile"): the person's language at the portal, as a BCP 47 tag
            # ("pt-BR", "en"); the hub starts their JupyterLab in it (deploy/jupyterhub: portal_hub.language).
            "locale": lambda request: bcp47(language_of(request.user)),
        }

    # A person switched off after the hub's redirect or after a token was issued gets nothing more: not a token
    # for the code, not a refreshed one, not their claims. (A switched-off session is anonymous already.)

    def validate_code(self, client_id, code, client, request, *args, **kwargs) -> bool:
        return super().validate_code(client_id, code, client, request, *args, **kwargs) and request.user.is_active

    def validate_refresh_token(self, refresh_token, client, request, *args, **kwargs) -> bool:
        valid = super().validate_refresh_token(refresh_token, client, request, *args, **kwargs)
        return valid and request.user.is_active

    def validate_bearer_token(self, token, scopes, request) -> bool:
        if not super().validate_bearer_token(token, scopes, request):
            return False
        if request.user is not None and not request.user.is_active:
            request.oauth2_error = OrderedDict(
                [("error", "invalid_token"), ("error_description", "The account is switched off.")]
            )
            return False
        return True
