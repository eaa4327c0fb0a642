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
