"""The shell's start checks (settings that are wrong only together), and the refusal to start on any check error.

Each app registers the checks of its own settings (accounts/checks.py, labs/*/checks.py, jobs/checks.py) under the
tag "settings"; these are the shell's: the secret key, the database pool, the hub's OAuth secret, e-mail. manage.py
commands run the checks themselves; uvicorn (portal/asgi.py), WSGI servers (portal/wsgi.py) and Celery workers and
beat (portal/celery.py) do not, so those call refuse_to_start_misconfigured() once Django is set up.
"""

from __future__ import annotations

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

SETTINGS = "settings"  # the tag: `manage.py check --tag settings` runs only these


def refuse_to_start_misconfigured() -> None:
    """Raise ImproperlyConfigured naming every error of the system checks (not the deployment ones, not warnings)."""
    errors = [
        message
        for message in checks.run_checks(include_deployment_checks=False)
        if message.level >= checks.ERROR and not message.is_silenced()
    ]
    if errors:
        raise ImproperlyConfigured(
            "\n".join(f"{m.msg} ({m.id})" + (f"\n    {m.hint}" if m.hint else "") for m in errors)
        )


def asgi_database_problem() -> str | None:
    """Why the ASGI server must not start with these database settings, or None. Under ASGI each request runs in a
    thread of its own, so a persistent connection (DATABASE_CONN_MAX_AGE above 0, without the pool) is one more
    PostgreSQL connection per request thread, never reused, until the server has "too many clients"."""
    database = settings.DATABASES["default"]
    if settings.DATABASE_POOL or not database["ENGINE"].endswith("postgresql"):
        return None
    if database.get("CONN_MAX_AGE", 0) == 0:  # None would be "for ever"
        return None
    return (
        f"DATABASE_CONN_MAX_AGE={database['CONN_MAX_AGE']} under ASGI keeps a PostgreSQL connection for every"
        " request thread, and none is reused: set DATABASE_POOL=true (a pool per process) or leave"
        " DATABASE_CONN_MAX_AGE unset or 0 for the web server (Celery workers may keep theirs)."
    )


def _secret_key() -> str:
    try:
        return settings.SECRET_KEY
    except ImproperlyConfigured:  # Django refuses to hand out an empty SECRET_KEY
        return ""


@checks.register(SETTINGS)
def check_secrets(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """With DEBUG the settings give development values; outside DEBUG nothing stands in for a missing secret."""
    errors = []
    if not _secret_key():
        errors.append(checks.Error("SECRET_KEY must be set when DEBUG is off.", id="portal.E001"))
    if not settings.HUB_OAUTH_CLIENT_SECRET:
        errors.append(
            checks.Error("HUB_OAUTH_CLIENT_SECRET (the hub's OAuth client secret) must be set.", id="portal.E005")
        )
    return errors


@checks.register(SETTINGS)
def check_database_pool(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    if not settings.DATABASE_POOL:
        return []
    database = settings.DATABASES["default"]
    if not database["ENGINE"].endswith("postgresql"):
        return [checks.Error("DATABASE_POOL=true needs PostgreSQL (a postgres:// DATABASE_URL).", id="portal.E002")]
    if database.get("CONN_MAX_AGE", 0) != 0:
        return [
            checks.Error(
                "DATABASE_POOL=true keeps connections in the pool: leave DATABASE_CONN_MAX_AGE unset or 0.",
                id="portal.E003",
            )
        ]
    pool = database.get("OPTIONS", {}).get("pool")
    pool = pool if isinstance(pool, dict) else {}
    smallest, largest = pool.get("min_size", 0), pool.get("max_size", 0)
    if largest < smallest:
        return [
            checks.Error(
                f"DATABASE_POOL_MAX_SIZE ({largest}) must be at least DATABASE_POOL_MIN_SIZE ({smallest}).",
                id="portal.E004",
            )
        ]
    return []


@checks.register(SETTINGS)
def check_email(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    if settings.EMAIL_USE_TLS and settings.EMAIL_USE_SSL:
        return [checks.Error("Set EMAIL_USE_TLS or EMAIL_USE_SSL, not both.", id="portal.E006")]
    return []
