"""The hub's OAuth client at the portal, written from settings."""

from __future__ import annotations

from django.conf import settings
from oauth2_provider.models import AbstractApplication, get_application_model


def hub_redirect_uri() -> str:
    return f"{settings.NOTEBOOKS_HUB_PUBLIC_URL}/hub/oauth_callback"


def hub_client_sync() -> AbstractApplication:
    """Create or update the hub's confidential authorization-code client; safe to run again and at once.

    The hub is the lab's own: people already logged in at the portal go straight through (no consent page).
    Raises ValidationError when the settings make an unusable client (an http redirect URI outside DEBUG).
    """
    Application = get_application_model()
    fields = {
        "name": "JupyterHub",
        "user": None,
        "client_type": Application.CLIENT_CONFIDENTIAL,
        "authorization_grant_type": Application.GRANT_AUTHORIZATION_CODE,
        "client_secret": settings.HUB_OAUTH_CLIENT_SECRET,
        "hash_client_secret": True,
        "redirect_uris": hub_redirect_uri(),
        "post_logout_redirect_uris": "",
        "allowed_origins": "",
        "skip_authorization": True,
        "algorithm": Application.RS256_ALGORITHM,
    }
    Application(client_id=settings.HUB_OAUTH_CLIENT_ID, **fields).full_clean(validate_unique=False)
    # update_or_create locks the row, and a concurrent first creation falls back to updating the winner's.
    application, _ = Application.objects.update_or_create(client_id=settings.HUB_OAUTH_CLIENT_ID, defaults=fields)
    return application


def oauth_tokens_revoke(*, user) -> int:
    """Revoke what the portal's OAuth provider handed out for this person (to the hub and any other client):
    access, refresh and ID tokens and unused grants. The hub's next userinfo or refresh call with them fails.
    How many access and refresh tokens there were."""
    from django.db import transaction
    from oauth2_provider.models import (
        get_access_token_model,
        get_grant_model,
        get_id_token_model,
        get_refresh_token_model,
    )

    with transaction.atomic():
        refresh = get_refresh_token_model().objects.filter(user=user, revoked__isnull=True)
        count = refresh.count()
        for token in refresh:
            token.revoke()  # also deletes its access token
        access, _ = get_access_token_model().objects.filter(user=user).delete()
        get_id_token_model().objects.filter(user=user).delete()
        get_grant_model().objects.filter(user=user).delete()
    return count + access


def oauth_code_lock(*, code: str) -> None:
    """Hold the authorization code's row until the caller's transaction ends: one exchange of a code at a time."""
    from oauth2_provider.models import get_grant_model

    list(get_grant_model().objects.select_for_update().filter(code=code).values_list("pk", flat=True))


def oauth_code_burn(*, code: str) -> bool:
    """Forget an authorization code after a refused exchange, so it is good for no further try; True if it was
    still there."""
    from oauth2_provider.models import get_grant_model

    deleted, _ = get_grant_model().objects.filter(code=code).delete()
    return bool(deleted)
