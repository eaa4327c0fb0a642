"""deploy/grafana/: the dashboard is JSON Grafana imports, and every metric it charts is one that /metrics says."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest

from labs.models import Budget
from tests.deploy.render import ROOT
from tests.factories import AllocationFactory, CourseFactory

DASHBOARD = ROOT / "deploy" / "grafana" / "gpu-lab-usage.json"


def test_the_dashboard_imports_with_a_prometheus_data_source():
    board = json.loads(DASHBOARD.read_text())
    assert board["uid"] and board["title"] and board["panels"]
    assert [item["pluginId"] for item in board["__inputs"]] == ["prometheus"]
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}" and panel["targets"], panel["title"]


@pytest.mark.django_db
def test_every_metric_the_dashboard_charts_is_on_metrics(client, settings, frozen_now):
    settings.DEBUG = True
    frozen_now("2026-11-18 12:00")
    course = CourseFactory(code="DL-101")
    AllocationFactory(course=course)
    Budget.objects.create(
        name="DL-101 term",
        course=course,
        starts_on=course.term_start,
        ends_on=course.term_end,
        gpu_hours=Decimal("10"),
    )
    scraped = {line.split("{")[0].split(" ")[0] for line in client.get("/metrics").content.decode().splitlines()}
    charted = set()
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel["targets"]:
            charted |= set(re.findall(r"\bportal_[a-z_]+", target["expr"]))
    assert {"portal_budget_used_ratio", "portal_course_gpu_hours_week", "portal_course_gpus_held"} <= charted
    assert charted <= scraped, charted - scraped
