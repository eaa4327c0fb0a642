"""`Authorization: Token <key>` for the API, with the tokens' expiry (API_TOKEN_TTL_DAYS)."""

from __future__ import annotations

from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication

from portal.accounts.selectors import token_expired, token_expires_at


class ExpiringTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key):
        if "\x00" in key:  # PostgreSQL cannot even look such a key up; no key has one
            raise exceptions.AuthenticationFailed("Invalid token.")
        user, token = super().authenticate_credentials(key)
        if token_expired(token):
            expired_on = timezone.localtime(token_expires_at(token)).strftime("%Y-%m-%d %H:%M %Z")
            raise exceptions.AuthenticationFailed(
                f"This API token expired on {expired_on}. Get a new one on your account page "
                "or with your password from POST /api/v1/token/."
            )
        return user, token
