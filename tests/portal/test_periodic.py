"""The embedded setup's in-process worker runs the same periodic tasks as Celery beat."""

import datetime as dt

import pytest
from django.core.management import call_command
from django.utils import timezone

from labs.models import Reservation, ReservationNode, ReservationStatus
from tests.factories import NodeFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_run_periodic_once_runs_the_reservation_tick(capsys):
    node = NodeFactory(name="gpu01")
    ada = UserFactory(username="ada", role="teacher")
    start = timezone.now() - dt.timedelta(minutes=1)
    lapsed = Reservation.objects.create(
        owner=ada,
        created_by=ada,
        title="Never approved",
        starts_at=start,
        ends_at=start + dt.timedelta(hours=1),
        status=ReservationStatus.PENDING,
    )
    ReservationNode.objects.create(reservation=lapsed, node=node, starts_at=lapsed.starts_at, ends_at=lapsed.ends_at)
    call_command("run_periodic", "--once")
    assert "reservations-tick: expired 1" in capsys.readouterr().out
    lapsed.refresh_from_db()
    assert lapsed.status == ReservationStatus.CANCELLED


def test_run_periodic_runs_the_nightly_sign_in_sync_of_a_crontab(settings, capsys):
    """With LDAP configured, beat's schedule has a crontab entry (the nightly sign-in sync): the embedded worker runs
    it too, and knows when next."""
    from celery.schedules import crontab

    from portal.web.management.commands.run_periodic import _seconds_to_next

    settings.CELERY_BEAT_SCHEDULE = {
        "signin-sync": {"task": "accounts.tasks.signin_sync", "schedule": crontab(hour=3, minute=15)}
    }
    call_command("run_periodic", "--once")
    assert "signin-sync: {'synced': 0, 'gone': 0, 'failed': 0}" in capsys.readouterr().out
    assert 0 < _seconds_to_next(crontab(hour=3, minute=15)) <= 24 * 3600
    assert _seconds_to_next(60) == 60.0


def test_a_quiet_lab_leaves_the_console_quiet(caplog):
    """The embedded run's console keeps the portal's address in view: passes that change nothing log nothing at INFO,
    nor does Celery's line per task run."""
    import logging

    caplog.set_level(logging.INFO)
    call_command("run_periodic", "--once")
    noisy = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO and "axes" not in r.name]
    assert not [m for m in noisy if "succeeded in" in m or m.startswith(("follow:", "scheduling pass:"))], noisy
    assert not [m for m in noisy if m.startswith("reservations tick:")], noisy
