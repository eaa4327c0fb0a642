"""The CLI prints times in the lab's zone unless told otherwise (issue 27: one rule for time): --tz names another,
--tz local is this machine's, and a portal that cannot say leaves this machine's."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest
from gpulab import _output, cli

MOMENT = dt.datetime(2027, 3, 1, 1, 30, tzinfo=dt.UTC)  # Sun 28 Feb 22:30 in São Paulo


@pytest.fixture(autouse=True)
def _machine_zone_back():
    yield
    _output.print_times_in(None)


def test_times_print_in_the_zone_the_cli_was_given():
    asked = []
    _output.print_times_in(lambda: asked.append(1) or zoneinfo.ZoneInfo("America/Sao_Paulo"))
    assert _output.when(MOMENT) == "Sun 28 Feb 22:30"
    assert _output.when(MOMENT + dt.timedelta(hours=1)) == "Sun 28 Feb 23:30"
    assert asked == [1]  # the portal is asked once per run


def test_tz_names_a_zone_or_this_machine(monkeypatch):
    parser = cli.build_parser()
    args = parser.parse_args(["jobs", "ls", "--tz", "Asia/Tokyo"])
    assert cli._zone_of(args) == zoneinfo.ZoneInfo("Asia/Tokyo")
    assert cli._zone_of(parser.parse_args(["jobs", "ls", "--tz", "local"])) is None
    with pytest.raises(cli.GpulabError, match="not a time zone"):
        cli._zone_of(parser.parse_args(["jobs", "ls", "--tz", "Mars/Olympus"]))


def test_without_tz_the_labs_zone_from_the_portal(monkeypatch):
    class Lab:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def me(self):
            return type("Me", (), {"lab_time_zone": "America/Sao_Paulo"})()

    monkeypatch.setattr(cli.commands, "client", lambda args: Lab())
    args = cli.build_parser().parse_args(["jobs", "ls"])
    assert cli._zone_of(args) == zoneinfo.ZoneInfo("America/Sao_Paulo")
    monkeypatch.setattr(cli.commands, "client", lambda args: (_ for _ in ()).throw(OSError("unreachable")))
    assert cli._zone_of(args) is None  # the machine's zone, as before
