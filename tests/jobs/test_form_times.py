"""Times on the job form in the lab's zone (LAB_TIME_ZONE), under a zone that is not UTC."""

import datetime as dt

import pytest

from accounts.models import User
from labs.models import Reservation, ReservationStatus
from tests.jobs.factories import ImageRuleFactory, lab

pytestmark = pytest.mark.django_db
UTC = dt.UTC


@pytest.mark.parametrize(
    ("zone", "shown"),
    [
        ("America/Sao_Paulo", "lab class (2026-12-01 10:00–12:00)"),  # UTC-3
        ("Asia/Kolkata", "lab class (2026-12-01 18:30–20:30)"),  # UTC+5:30
        ("UTC", "lab class (2026-12-01 13:00–15:00)"),
    ],
)
def test_the_reservation_list_shows_the_lab_zone(browser_client, settings, frozen_now, zone, shown):
    settings.TIME_ZONE = zone
    ImageRuleFactory()
    lab(1)
    frozen_now(dt.datetime(2026, 12, 1, 6, 0, tzinfo=UTC))
    client = browser_client("teacher")
    teacher = User.objects.get(username="teacher-x")
    Reservation.objects.create(
        owner=teacher,
        created_by=teacher,
        title="lab class",
        starts_at=dt.datetime(2026, 12, 1, 13, 0, tzinfo=UTC),
        ends_at=dt.datetime(2026, 12, 1, 15, 0, tzinfo=UTC),
        status=ReservationStatus.APPROVED,
    )
    page = client.get("/jobs/new/").content.decode()
    assert shown in page
