"""One usage meter (labs.selectors.quota_meter, templates/labs/_quota_meter.html) for the dashboard and the
notebooks page: both turn amber at NOTEBOOKS_QUOTA_WARN_PCT, where the warning notice goes out."""

import datetime as dt
from decimal import Decimal

import pytest

from labs.selectors import quota_meter
from tests.factories import PASSWORD, AllocationFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("used", "allowed", "percent", "level"),
    [(0, 20, 0, "ok"), (11.9, 20, 59, "ok"), (12, 20, 60, "warn"), (20, 20, 100, "full"), (25, 20, 100, "full")],
)
def test_the_meter_turns_amber_at_the_setting(settings, used, allowed, percent, level):
    settings.NOTEBOOKS_QUOTA_WARN_PCT = 60
    assert quota_meter(used, allowed) == {"used": used, "allowed": allowed, "percent": percent, "level": level}
    assert quota_meter(Decimal(used), Decimal(allowed))["level"] == level


def test_nothing_allowed_is_full():
    assert quota_meter(0, 0) == {"used": 0, "allowed": 0, "percent": 0, "level": "full"}


@pytest.fixture
def twelve_of_twenty_hours(client, frozen_now):
    """A student (20 GPU-hours a week) who used 12 of them this week."""
    now = frozen_now("2026-03-11 12:00")  # a Wednesday
    student = UserFactory(username="bo", role="student")
    AllocationFactory(
        user=student, gpu=NodeFactory().gpus.first(), share=1, starts_at=now - dt.timedelta(hours=12), ends_at=now
    )
    assert client.login(username="bo", password=PASSWORD)
    return student


@pytest.mark.parametrize(("page", "testid"), [("/", "meter-gpu-hours"), ("/notebooks/", "nb-meter")])
def test_both_pages_show_the_same_meter(client, settings, twelve_of_twenty_hours, page, testid):
    settings.NOTEBOOKS_QUOTA_WARN_PCT = 80
    html = client.get(page).content.decode()
    assert f'data-testid="{testid}" data-level="ok"' in html and "12.0 / 20" in html
    assert "of your weekly GPU-hours" not in html
    settings.NOTEBOOKS_QUOTA_WARN_PCT = 50
    html = client.get(page).content.decode()
    assert f'class="meter meter-warn" data-testid="{testid}" data-level="warn"' in html
    assert "You have used 60 % of your weekly GPU-hours." in html
