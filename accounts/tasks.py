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
