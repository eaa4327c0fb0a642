"""Celery tasks of people's accounts."""

from __future__ import annotations

from celery import shared_task

from accounts.signin import ldap_enabled


@shared_task(name="accounts.tasks.signin_sync")
def signin_sync() -> dict[str, int]:
    """Nightly: apply the directory's groups again to everyone who signs in through LDAP (safe to run twice).

    Without LDAP it does nothing and imports no python-ldap (the optional `ldap` extra); beat schedules it only with
    LDAP anyway. `manage.py signin_sync` runs it in-process."""
    if not ldap_enabled():
        return {"synced": 0, "gone": 0, "failed": 0}
    from accounts.signin.ldap import ldap_sync_all

    return ldap_sync_all()


@shared_task(name="accounts.tasks.audit_prune")
def audit_prune() -> dict[str, int]:
    """Remove audit entries older than AUDIT_RETENTION_DAYS (safe to run twice)."""
    from accounts.audit import audit_prune as prune

    return {"removed": prune()}


@shared_task(name="accounts.tasks.more_requests_expire")
def more_requests_expire() -> dict[str, int]:
    """End the overrides whose time is up, and warn a day before (safe to run twice: each is told once)."""
    from accounts.more_requests import more_requests_expire as expire

    return expire()
