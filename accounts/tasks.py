"""Celery tasks of people's accounts."""

from __future__ import annotations

from celery import shared_task

from accounts.signin.ldap import ldap_sync_all


@shared_task(name="accounts.tasks.signin_sync")
def signin_sync() -> dict[str, int]:
    """Nightly: apply the directory's groups again to everyone who signs in through LDAP (safe to run twice)."""
    return ldap_sync_all()
