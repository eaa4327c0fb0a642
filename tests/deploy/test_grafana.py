"""deploy/grafana/: the boards are JSON Grafana imports, and every series they chart is one its source exports."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest

from labs.models import Budget
from tests.deploy.render import ROOT
from tests.factories import AllocationFactory, CourseFactory

DASHBOARD = ROOT / "deploy" / "grafana" / "gpu-lab-usage.json"


def a_budget_in_force(frozen_now) -> None:
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


@pytest.mark.django_db
def test_every_metric_the_dashboard_charts_is_on_metrics(client, settings, frozen_now):
    settings.DEBUG = True
    a_budget_in_force(frozen_now)
    scraped = {line.split("{")[0].split(" ")[0] for line in client.get("/metrics").content.decode().splitlines()}
    charted = set()
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel["targets"]:
            charted |= set(re.findall(r"\bportal_[a-z_]+", target["expr"]))
    assert {"portal_budget_used_ratio", "portal_course_gpu_hours_week", "portal_course_gpus_held"} <= charted
    assert charted <= scraped, charted - scraped


NODES = ROOT / "deploy" / "grafana" / "gpu-lab-nodes.json"


@pytest.mark.parametrize("path", [DASHBOARD, NODES])
def test_every_board_imports_with_one_prometheus_data_source(path):
    board = json.loads(path.read_text())
    assert board["uid"] and board["title"] and board["panels"]
    assert [item["pluginId"] for item in board["__inputs"]] == ["prometheus"]
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}" and panel["targets"], panel["title"]


@pytest.mark.django_db
def test_the_nodes_board_charts_dcgm_exporters_series_and_the_portals_queue(client, settings):
    from labs.telemetry import dcgm

    settings.DEBUG = True
    scraped = {line.split("{")[0].split(" ")[0] for line in client.get("/metrics").content.decode().splitlines()}
    collected = {value for value in vars(dcgm).values() if isinstance(value, str) and value.startswith("DCGM_FI_")}
    board = json.loads(NODES.read_text())
    exprs = {panel["title"]: " ".join(t["expr"] for t in panel["targets"]) for panel in board["panels"]}
    charted = set(re.findall(r"\bDCGM_FI_[A-Z_]+", " ".join(exprs.values())))
    # Utilisation, memory, temperature, power: the series the portal's own collector reads from dcgm-exporter.
    assert {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"} <= charted
    assert charted <= collected, charted - collected
    portal = set(re.findall(r"\bportal_[a-z_]+", " ".join(exprs.values())))
    assert {"portal_jobs", "portal_job_queue_wait_seconds"} <= portal and portal <= scraped, portal - scraped
    kinds = {panel["title"]: panel["type"] for panel in board["panels"]}
    assert kinds["Temperature heat map (°C)"] == "heatmap"
    assert 'pod!=""' in exprs["Who holds each GPU"]  # dcgm-exporter's pod mapping: the holder
    assert board["templating"]["list"][0]["query"]["query"] == "label_values(DCGM_FI_DEV_GPU_UTIL, Hostname)"


def test_the_monitoring_component_ships_every_board_to_grafana():
    from tests.deploy.render import render

    docs = render("deploy/overlays/lab")
    boards = {
        name
        for doc in docs
        if doc["kind"] == "ConfigMap" and (doc["metadata"].get("labels") or {}).get("grafana_dashboard") == "1"
        for name in doc["data"]
    }
    assert boards == {path.name for path in (ROOT / "deploy" / "grafana").glob("*.json")}
