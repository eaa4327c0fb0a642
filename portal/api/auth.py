"""`Authorization: Token <key>` for the API: hashed, revocable, expiring tokens (accounts.ApiToken)."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from accounts.services import token_authenticate


class ExpiringTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key):
        token, refusal = token_authenticate(key)
        if refusal is not None:
            raise exceptions.AuthenticationFailed(refusal)
        return token.user, token
