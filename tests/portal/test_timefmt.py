"""One rule for time (issue 27): each kind (date, time, date-time, duration) in the lab's zone and the person's
language, the same on pages, e-mails and CSV files. Rendered here under a zone that is not UTC (America/Sao_Paulo,
UTC−3, no daylight saving since 2019) in both languages."""

from __future__ import annotations

import datetime as dt

import pytest
from django.template import Context, Template
from django.utils import translation

from accounts.timefmt import fmt_date, fmt_datetime, fmt_duration, fmt_time

# 01:30 UTC on 1 March is still 28 February in São Paulo: the day, too, is the lab's.
MOMENT = dt.datetime(2027, 3, 1, 1, 30, tzinfo=dt.UTC)


@pytest.fixture
def sao_paulo(settings):
    settings.TIME_ZONE = "America/Sao_Paulo"


@pytest.mark.parametrize(
    "language,date,time,datetime,duration",
    [
        ("en", "2027-02-28", "22:30", "2027-02-28 22:30", "2 h 05 min"),
        ("pt-br", "28/02/2027", "22:30", "28/02/2027 22:30", "2 h 05 min"),
    ],
)
def test_each_kind_in_the_labs_zone_and_the_persons_language(sao_paulo, language, date, time, datetime, duration):
    with translation.override(language):
        assert fmt_date(MOMENT) == date
        assert fmt_time(MOMENT) == time
        assert fmt_datetime(MOMENT) == datetime
        assert fmt_duration(dt.timedelta(hours=2, minutes=5)) == duration
        page = Template("{% load timefmt %}{{ m|day }}|{{ m|clock }}|{{ m|when }}|{{ s|duration }}").render(
            Context({"m": MOMENT, "s": 7500})
        )
        assert page == f"{date}|{time}|{datetime}|{duration}"


def test_durations_of_every_size():
    assert [fmt_duration(s) for s in (0, 45, 600, 3600, 90061)] == ["0 s", "45 s", "10 min", "1 h 00 min", "1 d 1 h"]
    assert fmt_duration(None) == ""


def test_the_api_says_the_labs_zone(sao_paulo, client, db):
    from tests.factories import UserFactory

    client.force_login(UserFactory(role="student"))
    body = client.get("/api/v1/me/").json()
    assert body["lab_time_zone"] == "America/Sao_Paulo"
