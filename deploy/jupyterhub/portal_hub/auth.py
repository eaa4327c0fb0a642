"""The hub's sign-in through the portal: GenericOAuthenticator, and the person's portal name to show them."""

from __future__ import annotations

from typing import Any

from oauthenticator.generic import GenericOAuthenticator


class PortalOAuthenticator(GenericOAuthenticator):
    """Signs people in at the portal (its OAuth 2 / OpenID Connect provider).

    The hub user is the portal's ``preferred_username`` claim: ``u<id>``, from the portal account's id, never from
    its user name, so no two accounts share a hub user (and its servers and home) and a rename keeps them. What
    JupyterLab shows the person is their name at the portal (the ``name`` claim), as the hub's ``user_info``.
    """

    async def update_auth_model(self, auth_model: dict[str, Any]) -> dict[str, Any]:
        auth_model = await super().update_auth_model(auth_model)
        claims = (auth_model.get("auth_state") or {}).get(self.user_auth_state_key) or {}
        name = str(claims.get("name") or "").strip()
        if name:
            auth_model["user_info"] = {"name": name, "display_name": name}
        return auth_model
