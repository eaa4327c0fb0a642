# ruff: noqa: E501  (dcgm-exporter prints long lines; the fixture keeps them as it prints them)
"""dcgm-exporter text and Prometheus query JSON, as real servers print them, into GpuSamples."""

import logging
import math

import pytest

from labs.telemetry import sources
from labs.telemetry.dcgm import parse_scrape, samples_from_rows
from labs.telemetry.exposition import parse_line, parse_text
from labs.telemetry.prometheus import QUERY, PrometheusAnswerError, parse_answer, rows_from_answer
from labs.telemetry.samples import GpuTarget, checked, problem_with

NOW = 1_760_000_000.0

# What dcgm-exporter 3.3 (default counters, Kubernetes pod mapping on) serves for a node with two GPUs:
# the pod labels only on the GPU a pod uses, HELP/TYPE lines, metrics we do not read.
DCGM_TEXT = """\
# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-5fd4e2c3-1a2b-4c5d-8e9f-001122334455",pci_bus_id="00000000:01:00.0",device="nvidia0",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15",container="train",namespace="lab-jobs",pod="job-42-attempt-1-abcde"} 2520
DCGM_FI_DEV_SM_CLOCK{gpu="1",UUID="GPU-9a8b7c6d-0000-4000-8000-aabbccddeeff",pci_bus_id="00000000:41:00.0",device="nvidia1",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15"} 210
# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-5fd4e2c3-1a2b-4c5d-8e9f-001122334455",pci_bus_id="00000000:01:00.0",device="nvidia0",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15",container="train",namespace="lab-jobs",pod="job-42-attempt-1-abcde"} 71
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-9a8b7c6d-0000-4000-8000-aabbccddeeff",pci_bus_id="00000000:41:00.0",device="nvidia1",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15"} 33
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-5fd4e2c3-1a2b-4c5d-8e9f-001122334455",pci_bus_id="00000000:01:00.0",device="nvidia0",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15",container="train",namespace="lab-jobs",pod="job-42-attempt-1-abcde"} 387.456000
DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-9a8b7c6d-0000-4000-8000-aabbccddeeff",pci_bus_id="00000000:41:00.0",device="nvidia1",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15"} 21.103000
# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-5fd4e2c3-1a2b-4c5d-8e9f-001122334455",pci_bus_id="00000000:01:00.0",device="nvidia0",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15",container="train",namespace="lab-jobs",pod="job-42-attempt-1-abcde"} 1293847561234
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="1",UUID="GPU-9a8b7c6d-0000-4000-8000-aabbccddeeff",pci_bus_id="00000000:41:00.0",device="nvidia1",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15"} 88123456
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-5fd4e2c3-1a2b-4c5d-8e9f-001122334455",pci_bus_id="00000000:01:00.0",device="nvidia0",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15",container="train",namespace="lab-jobs",pod="job-42-attempt-1-abcde"} 97
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-9a8b7c6d-0000-4000-8000-aabbccddeeff",pci_bus_id="00000000:41:00.0",device="nvidia1",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15"} 0
# HELP DCGM_FI_DEV_FB_FREE Framebuffer memory free (in MiB).
# TYPE DCGM_FI_DEV_FB_FREE gauge
DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-5fd4e2c3-1a2b-4c5d-8e9f-001122334455",pci_bus_id="00000000:01:00.0",device="nvidia0",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15",container="train",namespace="lab-jobs",pod="job-42-attempt-1-abcde"} 2903
DCGM_FI_DEV_FB_FREE{gpu="1",UUID="GPU-9a8b7c6d-0000-4000-8000-aabbccddeeff",pci_bus_id="00000000:41:00.0",device="nvidia1",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15"} 23950
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-5fd4e2c3-1a2b-4c5d-8e9f-001122334455",pci_bus_id="00000000:01:00.0",device="nvidia0",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15",container="train",namespace="lab-jobs",pod="job-42-attempt-1-abcde"} 21207
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-9a8b7c6d-0000-4000-8000-aabbccddeeff",pci_bus_id="00000000:41:00.0",device="nvidia1",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15"} 1
# HELP DCGM_FI_DEV_FB_RESERVED Framebuffer memory reserved (in MiB).
# TYPE DCGM_FI_DEV_FB_RESERVED gauge
DCGM_FI_DEV_FB_RESERVED{gpu="0",UUID="GPU-5fd4e2c3-1a2b-4c5d-8e9f-001122334455",pci_bus_id="00000000:01:00.0",device="nvidia0",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15",container="train",namespace="lab-jobs",pod="job-42-attempt-1-abcde"} 454
DCGM_FI_DEV_FB_RESERVED{gpu="1",UUID="GPU-9a8b7c6d-0000-4000-8000-aabbccddeeff",pci_bus_id="00000000:41:00.0",device="nvidia1",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15"} 454
# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.
# TYPE DCGM_FI_DEV_XID_ERRORS gauge
DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-5fd4e2c3-1a2b-4c5d-8e9f-001122334455",pci_bus_id="00000000:01:00.0",device="nvidia0",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15",err_code="0",err_msg="No Error",container="train",namespace="lab-jobs",pod="job-42-attempt-1-abcde"} 0
DCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="GPU-9a8b7c6d-0000-4000-8000-aabbccddeeff",pci_bus_id="00000000:41:00.0",device="nvidia1",modelName="NVIDIA GeForce RTX 4090",Hostname="dcgm-exporter-7x2kq",DCGM_FI_DRIVER_VERSION="550.54.15",err_code="79",err_msg="GPU has fallen off the bus"} 79
"""


def by_index(samples):
    return {sample.index: sample for sample in samples}


def test_a_dcgm_exporter_page_becomes_one_sample_per_gpu():
    samples = by_index(parse_scrape(DCGM_TEXT, node="gpu07", now=NOW))
    assert sorted(samples) == [0, 1]
    busy, idle = samples[0], samples[1]
    # The scraped node names the samples, not the exporter pod's Hostname label.
    assert busy.node == idle.node == "gpu07"
    assert busy.uuid == "GPU-5fd4e2c3-1a2b-4c5d-8e9f-001122334455"
    assert busy.model == "NVIDIA GeForce RTX 4090"
    assert busy.util_pct == 97
    assert busy.mem_used_mb == 21207
    assert busy.mem_total_mb == 21207 + 2903 + 454  # used + free + reserved
    assert busy.temp_c == 71
    assert busy.power_w == pytest.approx(387.456)
    assert busy.energy_j == pytest.approx(1293847561.234)  # mJ to J
    assert busy.xid == 0
    assert busy.sampled_at == NOW  # the text format carries no times: the scrape's
    assert idle.util_pct == 0 and idle.mem_used_mb == 1 and idle.xid == 79


def test_missing_labels_and_metrics_leave_values_out_not_the_gpu():
    text = """\
DCGM_FI_DEV_GPU_UTIL{gpu="0"} 55
DCGM_FI_DEV_GPU_TEMP{gpu="0"} 60
DCGM_FI_DEV_FB_USED{gpu="0"} 1000
"""
    (sample,) = parse_scrape(text, node="gpu01", now=NOW)
    assert (sample.index, sample.uuid, sample.model) == (0, None, None)
    assert (sample.util_pct, sample.temp_c, sample.mem_used_mb) == (55, 60, 1000)
    # Without FB_FREE the total is unknown here; the collector takes it from the inventory.
    assert sample.mem_total_mb is None and sample.power_w is None and sample.xid is None


def test_a_series_with_no_gpu_label_is_placed_by_uuid_or_skipped(caplog):
    rows = parse_text(
        'DCGM_FI_DEV_GPU_UTIL{UUID="GPU-aaa",Hostname="gpu03"} 12\nDCGM_FI_DEV_GPU_UTIL{UUID="GPU-zzz"} 99\n'
    ).rows
    with caplog.at_level(logging.WARNING, logger="labs.telemetry"):
        samples = samples_from_rows(rows, now=NOW, uuid_index={"GPU-aaa": ("gpu03", 2)})
    assert [(s.node, s.index, s.util_pct) for s in samples] == [("gpu03", 2, 12)]
    assert "no node or GPU index" in caplog.text


def test_malformed_lines_are_skipped_and_the_rest_is_read(caplog):
    text = (
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1"} 40\n'
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-1" 61\n'  # unclosed labels
        "DCGM_FI_DEV_POWER_USAGE{gpu=0} 100\n"  # unquoted label value
        'DCGM_FI_DEV_FB_USED{gpu="0"} twelve\n'  # not a number
        'DCGM_FI_DEV_FB_FREE{gpu="0",} 23000\n'  # trailing comma: allowed
        "\n   \n# a comment\n"
    )
    with caplog.at_level(logging.WARNING, logger="labs.telemetry"):
        (sample,) = parse_scrape(text, node="gpu02", now=NOW)
    assert sample.util_pct == 40 and sample.temp_c is None and sample.mem_used_mb is None
    assert "3 unreadable lines" in caplog.text


def test_a_timestamp_no_float_can_hold_is_a_malformed_line_not_a_crash(caplog):
    text = 'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 40\nDCGM_FI_DEV_GPU_TEMP{gpu="0"} 61 ' + "9" * 400 + "\n"
    with caplog.at_level(logging.WARNING, logger="labs.telemetry"):
        (sample,) = parse_scrape(text, node="gpu07", now=NOW)  # a node no other test logs for (logs are throttled)
    assert sample.util_pct == 40 and sample.temp_c is None and "1 unreadable lines in gpu07" in caplog.text


def test_old_times_from_an_exporter_or_prometheus_are_refused_by_the_checks():
    (scraped,) = parse_scrape('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 40 1000\n', node="gpu02", now=NOW)
    answer = prometheus_answer([series("DCGM_FI_DEV_GPU_UTIL", "40", t=-1e18, Hostname="gpu03", gpu="0")])
    (queried,) = parse_answer(answer, now=NOW)
    assert scraped.sampled_at == 1.0 and queried.sampled_at == -1e18
    assert "in the past" in problem_with(scraped, now=NOW) and "in the past" in problem_with(queried, now=NOW)
    assert checked([scraped, queried], source="test", now=NOW) == []


def test_one_nodes_page_cannot_cost_the_other_nodes_their_samples(monkeypatch):
    pages = {
        "gpu01": 'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 40 ' + "9" * 400 + "\n",
        "gpu02": 'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 41\n',
    }
    monkeypatch.setattr(sources.http, "get_text", lambda url, timeout_s: pages[url.split("//")[1].split(":")[0]])
    targets = [GpuTarget(n, node, 0, None, "RTX 4090", 24564, "ready") for n, node in enumerate(pages)]
    collected = sources.DcgmSource(url_template="http://{node}:9400/metrics", timeout_s=1).collect(targets, NOW)
    assert [(sample.node, sample.util_pct) for sample in collected] == [("gpu02", 41.0)]


def test_exposition_line_details():
    row = parse_line(r'm{a="x\"y",b="back\\slash",c="new\nline"} 1.5e3 1700000000123')
    assert row.labels == {"a": 'x"y', "b": "back\\slash", "c": "new\nline"}
    assert row.value == 1500.0 and row.timestamp == pytest.approx(1_700_000_000.123)
    assert parse_line("m NaN").value != parse_line("m NaN").value
    assert parse_line("m +Inf").value == math.inf
    assert parse_line("m{} 3").labels == {}
    assert parse_line("# HELP m text") is None
    with pytest.raises(ValueError):
        parse_line("m 1 2 3")
    with pytest.raises(ValueError):
        parse_line('{a="b"} 1')


def prometheus_answer(result):
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


def series(name, value, t=NOW, **labels):
    return {"metric": {"__name__": name, **labels}, "value": [t, value]}


DCGM_LABELS = {
    "gpu": "0",
    "UUID": "GPU-5fd4e2c3-1a2b-4c5d-8e9f-001122334455",
    "device": "nvidia0",
    "modelName": "NVIDIA GeForce RTX 4090",
    "Hostname": "gpu12",
    "DCGM_FI_DRIVER_VERSION": "550.54.15",
    "instance": "10.42.0.17:9400",
    "job": "dcgm-exporter",
    "kubernetes_node": "gpu12",
    "namespace": "gpu-operator",
    "pod": "nvidia-dcgm-exporter-7x2kq",
}


def test_a_prometheus_vector_becomes_samples_with_its_evaluation_time():
    answer = prometheus_answer(
        [
            series("DCGM_FI_DEV_GPU_UTIL", "88", t=NOW - 2, **DCGM_LABELS),
            series("DCGM_FI_DEV_FB_USED", "20000", t=NOW - 2, **DCGM_LABELS),
            series("DCGM_FI_DEV_FB_FREE", "4564", t=NOW - 2, **DCGM_LABELS),
            series("DCGM_FI_DEV_GPU_TEMP", "66", t=NOW - 2, **DCGM_LABELS),
            series("DCGM_FI_DEV_POWER_USAGE", "301.5", t=NOW - 2, **DCGM_LABELS),
            series("DCGM_FI_DEV_XID_ERRORS", "0", t=NOW - 2, **DCGM_LABELS, err_code="0"),
            # A metric we do not read, with labels we have never seen: ignored.
            series("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "0.71", t=NOW - 2, **DCGM_LABELS, extra="yes"),
        ]
    )
    (sample,) = parse_answer(answer, now=NOW)
    assert (sample.node, sample.index, sample.util_pct, sample.mem_total_mb) == ("gpu12", 0, 88, 24564)
    assert sample.power_w == 301.5 and sample.xid == 0
    assert sample.sampled_at == NOW - 2


def test_prometheus_node_falls_back_through_the_labels():
    labels = {"gpu": "1", "instance": "gpu05.lab.example.org:9400"}
    (sample,) = parse_answer(prometheus_answer([series("DCGM_FI_DEV_GPU_TEMP", "40", **labels)]), now=NOW)
    assert (sample.node, sample.index) == ("gpu05", 1)
    (sample,) = parse_answer(
        prometheus_answer([series("DCGM_FI_DEV_GPU_TEMP", "40", gpu="0", node="gpu09", Hostname="exporter-pod")]),
        now=NOW,
        node_labels=("node", "Hostname"),
    )
    assert sample.node == "gpu09"
    # Only a UUID: placed through the inventory.
    (sample,) = parse_answer(
        prometheus_answer([series("DCGM_FI_DEV_GPU_TEMP", "40", UUID="GPU-x")]),
        now=NOW,
        uuid_index={"GPU-x": ("gpu30", 0)},
    )
    assert (sample.node, sample.index) == ("gpu30", 0)


def test_prometheus_values_that_are_not_numbers_are_left_for_the_checks():
    answer = prometheus_answer(
        [
            series("DCGM_FI_DEV_GPU_TEMP", "NaN", gpu="0", Hostname="gpu01"),
            series("DCGM_FI_DEV_GPU_UTIL", "lots", gpu="0", Hostname="gpu01"),  # unreadable: dropped
            {"metric": "nonsense"},
            {"metric": {"gpu": "0"}, "value": [NOW, "1"]},  # no __name__
        ]
    )
    (sample,) = parse_answer(answer, now=NOW)
    assert math.isnan(sample.temp_c) and sample.util_pct is None


@pytest.mark.parametrize(
    "answer,message",
    [
        ({"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}, "bad_data"),
        ({"status": "success", "data": {"resultType": "matrix", "result": []}}, "no vector"),
        ({"status": "success"}, "no vector"),
        ([], "not a JSON object"),
    ],
)
def test_prometheus_errors_are_reported_not_parsed(answer, message):
    with pytest.raises(PrometheusAnswerError, match=message):
        rows_from_answer(answer)


def test_the_query_asks_for_every_metric_in_one_go():
    assert QUERY.startswith('{__name__=~"DCGM_FI_DEV_GPU_UTIL|')
    for name in ("FB_USED", "FB_FREE", "GPU_TEMP", "POWER_USAGE", "TOTAL_ENERGY_CONSUMPTION", "XID_ERRORS"):
        assert f"DCGM_FI_DEV_{name}" in QUERY
