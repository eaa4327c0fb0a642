"""The CLI prints times in the portal's zone (the offset each API time carries), unless told otherwise."""

import datetime as dt
import time

import pytest
from gpulab import _output
from gpulab.cli import main

# 10:00 in São Paulo, as the API writes a time of a lab there.
SERVER_TIME = dt.datetime.fromisoformat("2026-12-01T10:00:00-03:00")


@pytest.fixture(autouse=True)
def _machine_in_tokyo(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    monkeypatch.delenv("GPULAB_TIME_ZONE", raising=False)
    time.tzset()
    _output.set_time_zone(None)
    yield
    monkeypatch.undo()
    time.tzset()
    _output.set_time_zone(None)


def test_times_are_the_servers_by_default_whatever_the_machines_zone():
    assert _output.when(SERVER_TIME) == "Tue 01 Dec 10:00"


@pytest.mark.parametrize(
    ("zone", "shown"),
    [("local", "Tue 01 Dec 22:00"), ("Europe/Lisbon", "Tue 01 Dec 13:00"), ("server", "Tue 01 Dec 10:00")],
)
def test_a_zone_may_be_chosen(zone, shown, monkeypatch):
    _output.set_time_zone(zone)
    assert _output.when(SERVER_TIME) == shown
    _output.set_time_zone(None)
    monkeypatch.setenv("GPULAB_TIME_ZONE", zone)
    assert _output.when(SERVER_TIME) == shown


def test_an_unknown_zone_is_one_line_and_a_usage_exit(capsys):
    code = main(["jobs", "ls", "--time-zone", "Mars/Olympus"])
    assert code != 0
    assert "unknown time zone 'Mars/Olympus'" in capsys.readouterr().err
