"""Start checks of the people side's settings (portal/settings/people.py, signin.py): what only works together.

Registered by AccountsConfig.ready(); manage.py commands, the ASGI and WSGI apps and Celery refuse to start on an
error (portal/checks.py)."""

from __future__ import annotations

from django.conf import settings
from django.core import checks


@checks.register("settings")
def check_rate_limit_cache(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    if settings.RATE_LIMIT_CACHE not in settings.CACHES:
        return [
            checks.Error(
                f"RATE_LIMIT_CACHE must name one of the caches ({', '.join(settings.CACHES)}).", id="accounts.E001"
            )
        ]
    return []


@checks.register("settings")
def check_university_signin(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    errors = []
    if settings.OIDC_PROVIDER_URL and not (settings.OIDC_RP_CLIENT_ID and settings.OIDC_RP_CLIENT_SECRET):
        errors.append(
            checks.Error(
                "OIDC_PROVIDER_URL needs OIDC_RP_CLIENT_ID and OIDC_RP_CLIENT_SECRET (the portal's client).",
                id="accounts.E002",
            )
        )
    if settings.OIDC_PROVIDER_URL and "openid" not in settings.OIDC_RP_SCOPES.split():
        errors.append(checks.Error("OIDC_RP_SCOPES must include openid.", id="accounts.E003"))
    if settings.LDAP_SERVER_URI and not (settings.LDAP_USER_SEARCH_BASE and settings.LDAP_GROUP_SEARCH_BASE):
        errors.append(
            checks.Error("LDAP_SERVER_URI needs LDAP_USER_SEARCH_BASE and LDAP_GROUP_SEARCH_BASE.", id="accounts.E004")
        )
    return errors
