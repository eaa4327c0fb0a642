"""deploy/components/monitoring: every alert rule parses (promtool check rules), the important ones fire when they
should (promtool test rules), and every series they read is one its source exports."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml

from labs.telemetry import dcgm
from tests.deploy.render import find, render

LAB = "deploy/overlays/lab"
# What kube-state-metrics (kube-prometheus-stack) exports that the rules read, and Prometheus' own.
KUBE_STATE_METRICS = {
    "kube_node_status_condition",
    "kube_job_status_active",
    "kube_cronjob_status_last_successful_time",
}
PROMETHEUS = {"up"}
FUNCTIONS = {"abs", "count", "sum", "max", "vector", "time", "absent", "humanizeDuration", "humanizePercentage"}


def promtool() -> str:
    tool = shutil.which("promtool")
    if tool is None:
        raise AssertionError("promtool is missing: scripts/test.sh installs it (Debian package prometheus)")
    return tool


def rules() -> dict:
    return find(render(LAB), "PrometheusRule", "gpu-lab", "monitoring")["spec"]


def alerts() -> dict[str, dict]:
    return {rule["alert"]: rule for group in rules()["groups"] for rule in group["rules"]}


def test_every_rule_parses(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(rules()))
    result = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in result.stdout


def test_the_alerts_the_lab_asked_for_are_there():
    assert {
        "GpuXidError",
        "GpuTooHot",
        "LabNodeDown",
        "JobQueueWaitLong",
        "BudgetExceeded",
        "ReconcilerDrift",
        "PortalBackupMissing",
    } <= set(alerts())
    for name, rule in alerts().items():
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name


@pytest.mark.django_db
def test_every_series_is_one_its_source_exports(client, settings, frozen_now):
    from tests.deploy.test_grafana import a_budget_in_force

    settings.DEBUG = True
    a_budget_in_force(frozen_now)  # the budget gauges exist only while one is in force
    scraped = {line.split("{")[0].split(" ")[0] for line in client.get("/metrics").content.decode().splitlines()}
    read_by_the_collector = {v for v in vars(dcgm).values() if isinstance(v, str) and v.startswith("DCGM_FI_")}
    for name, rule in alerts().items():
        expr = re.sub(r'"[^"]*"', "", rule["expr"])  # label values are not series
        expr = re.sub(r"\{[^}]*\}", "", expr)
        series = set(re.findall(r"\b[a-zA-Z_][a-zA-Z0-9_]*\b(?=\s*(?:\{|\[|\)|>|<|=|!|-|\+|\*|/|$|\s))", expr))
        series -= FUNCTIONS | {"by", "unless", "or", "and", "on", "without", "ignoring"}
        series = {s for s in series if not s.isdigit()}
        for each in series:
            if each.startswith("portal_"):
                assert each in scraped, (name, each)
            elif each.startswith("DCGM_"):
                assert each in read_by_the_collector, (name, each)
            else:
                assert each in KUBE_STATE_METRICS | PROMETHEUS, (name, each)


TESTS = """
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      # gpu 0 reports Xid 79 (fell off the bus); gpu 1 Xid 13 (an application's illegal address: ignored).
      - series: 'DCGM_FI_DEV_XID_ERRORS{Hostname="gpu07", gpu="0"}'
        values: '0 79x10'
      - series: 'DCGM_FI_DEV_XID_ERRORS{Hostname="gpu07", gpu="1"}'
        values: '0 13x10'
      - series: 'DCGM_FI_DEV_GPU_TEMP{Hostname="gpu08", gpu="0"}'
        values: '80 88x10'
      # The last successful backup at t=0; 27 hours later it is missing.
      - series: 'kube_cronjob_status_last_successful_time{namespace="gpu-lab", cronjob="gpu-lab-backup"}'
        values: '0x1700'
      - series: 'portal_budget_used_ratio{name="DL-101 term", scope="course"}'
        values: '0.9 1.05x10'
      # The cluster runs 3 training Jobs, the ledger knows 2.
      - series: 'kube_job_status_active{namespace="gpu-lab-jobs", job_name="job-1-a1"}'
        values: '1x30'
      - series: 'kube_job_status_active{namespace="gpu-lab-jobs", job_name="job-2-a1"}'
        values: '1x30'
      - series: 'kube_job_status_active{namespace="gpu-lab-jobs", job_name="job-3-a1"}'
        values: '1x30'
      - series: 'portal_running{kind="job"}'
        values: '2x30'
    alert_rule_test:
      - eval_time: 5m
        alertname: GpuXidError
        exp_alerts:
          - exp_labels: {severity: critical, Hostname: gpu07, gpu: "0"}
            exp_annotations:
              summary: "GPU 0 on gpu07 reported Xid 79"
      - eval_time: 5m
        alertname: GpuTooHot
        exp_alerts:
          - exp_labels: {severity: warning, Hostname: gpu08, gpu: "0"}
            exp_annotations:
              summary: "GPU 0 on gpu08 at 88 °C"
      - eval_time: 10h
        alertname: PortalBackupMissing
        exp_alerts: []
      - eval_time: 27h
        alertname: PortalBackupMissing
        exp_alerts:
          - exp_labels: {severity: critical, namespace: gpu-lab, cronjob: gpu-lab-backup}
            exp_annotations:
              summary: "No successful database backup for over 26 hours"
      - eval_time: 20m
        alertname: ReconcilerDrift
        exp_alerts:
          - exp_labels: {severity: warning}
            exp_annotations:
              summary: "The cluster runs 1 training Job(s) more or fewer than the portal's ledger says"
"""


def test_the_alerts_fire_when_they_should_and_ignore_the_applications_xids(tmp_path):
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rules()))
    tests = yaml.safe_load(TESTS)
    for case in tests["tests"][0]["alert_rule_test"]:
        for expected in case["exp_alerts"]:
            # The descriptions as the rules write them, templates rendered for the one that has any.
            description = alerts()[case["alertname"]]["annotations"]["description"]
            expected["exp_annotations"]["description"] = description.replace(
                "{{ $value | humanizeDuration }}", "1d 3h 0m 0s"
            )
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests, allow_unicode=True))
    result = subprocess.run(
        [promtool(), "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("broken", ["rate(portal_jobs[5m]", "portal_jobs >"])
def test_promtool_refuses_a_rule_that_does_not_parse(tmp_path, broken):
    spec = rules()
    spec["groups"][0]["rules"][0]["expr"] = broken
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
