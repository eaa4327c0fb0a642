"""API tokens: hashed, revocable, expiring, and what made them."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from accounts.models.people import User


class TokenSource(models.TextChoices):
    SESSION = "session", _("A browser session (the account page)")
    PASSWORD = "password", _("The password (POST /api/v1/token/)")
    OPERATOR = "operator", _("An operator (portal_user --token)")


class ApiToken(models.Model):
    """An API token (`Authorization: Token <key>`). Only the key's SHA-256 is stored; the key is shown once.

    A person may hold several (one per script or machine), each with its own expiry (none: until revoked).
    Revoked and expired tokens stay as rows, so a script using one is told why it gets 401. Sign out everywhere ends
    those a browser session made (older ones count as such), a new password all (accounts.services).
    """

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    key_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)  # the key's first characters, to tell tokens apart
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    source = models.CharField(max_length=16, choices=TokenSource.choices, default=TokenSource.SESSION)
    session_generation = models.PositiveIntegerField(null=True, blank=True)  # the user's, when a session made it

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "revoked_at"], name="apitoken_user_live")]

    def __str__(self) -> str:
        return f"{self.user}: {self.name or self.prefix}"
