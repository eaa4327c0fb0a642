"""The person's language: the one they chose on the account page (accounts.User.language) beats what their browser
asks for (Accept-Language, read by Django's LocaleMiddleware before this). Until they choose, the browser decides."""

from __future__ import annotations

from django.conf import settings
from django.utils import translation


def chosen_language(user) -> str | None:
    """The language a signed-in person chose, if the portal still speaks it; None: the browser decides."""
    code = getattr(user, "language", "") if getattr(user, "is_authenticated", False) else ""
    return code if code and code in dict(settings.LANGUAGES) else None


class PersonLanguageMiddleware:
    """After LocaleMiddleware and AuthenticationMiddleware: a signed-in person's own choice wins."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if code := chosen_language(request.user):
            translation.activate(code)
            request.LANGUAGE_CODE = code
        return self.get_response(request)
