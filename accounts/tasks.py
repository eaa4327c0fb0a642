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


@shared_task(name="accounts.tasks.notify_deliver")
def notify_deliver(user_id: int | None, course_id: int | None, channel: str) -> dict:
    """Send a person's (or a course channel's) pending notifications on one channel, as one message; on a failure
    send itself again after the backoff (accounts/notify/delivery.py). Safe to run twice."""
    from accounts.notify.delivery import deliver
    from accounts.notify.services import enqueue

    result = deliver(user_id=user_id, course_id=course_id, channel=channel)
    if result["retry_in"] is not None:
        enqueue(user_id=user_id, course_id=course_id, channel=channel, countdown=result["retry_in"])
    return result


@shared_task(name="accounts.tasks.notify_sweep")
def notify_sweep() -> int:
    """Periodic: send what is due and still waits (a broker that was down, a lost task; without a broker, everything:
    NOTIFY_SEND_FROM_PERIODIC)."""
    from django.conf import settings

    from accounts.notify.delivery import deliver, pending_recipients
    from accounts.notify.services import enqueue

    recipients = pending_recipients()
    for user_id, course_id, channel in recipients:
        if settings.NOTIFY_SEND_FROM_PERIODIC:  # the embedded run: this is the periodic runner, never a request
            deliver(user_id=user_id, course_id=course_id, channel=channel)  # a failure is due again after its backoff
        else:
            enqueue(user_id=user_id, course_id=course_id, channel=channel, countdown=0)
    return len(recipients)
