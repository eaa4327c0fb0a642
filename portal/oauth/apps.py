from django.apps import AppConfig


class OAuthConfig(AppConfig):
    """No models of its own: the tokens live in django-oauth-toolkit's tables."""

    name = "portal.oauth"
    label = "oauth"
    verbose_name = "One login (OAuth provider)"
