"""A Prometheus server's instant-query API (`/api/v1/query`) answering with dcgm-exporter series.

One query fetches every metric of every GPU:
`{__name__=~"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_FB_USED|..."}`; the answer is
`{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {...}, "value": [t, "v"]}]}}`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from labs.telemetry.dcgm import DEFAULT_NODE_LABELS, METRICS, samples_from_rows
from labs.telemetry.exposition import Row
from labs.telemetry.samples import GpuSample, throttled

QUERY = '{__name__=~"' + "|".join(METRICS) + '"}'


class PrometheusAnswerError(ValueError):
    """The server answered, but not with a vector of samples."""


def rows_from_answer(answer: object) -> list[Row]:
    """The rows of an instant-query answer; raises PrometheusAnswerError when the answer is an error or not one."""
    if not isinstance(answer, dict):
        raise PrometheusAnswerError("the answer is not a JSON object")
    if answer.get("status") != "success":
        kind = answer.get("errorType") or "error"
        raise PrometheusAnswerError(f"Prometheus answered {kind}: {answer.get('error') or 'no reason given'}")
    data = answer.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
        raise PrometheusAnswerError("the answer has no vector result")
    rows: list[Row] = []
    bad = 0
    for entry in data["result"]:
        row = _row(entry)
        if row is None:
            bad += 1
        else:
            rows.append(row)
    if bad:
        throttled.warning("prometheus", "malformed", "telemetry: %d unreadable series in the Prometheus answer", bad)
    return rows


def _row(entry: object) -> Row | None:
    if not isinstance(entry, dict):
        return None
    metric, value = entry.get("metric"), entry.get("value")
    if not isinstance(metric, dict) or not isinstance(value, list) or len(value) != 2:
        return None
    labels = {str(k): str(v) for k, v in metric.items() if isinstance(v, (str, int, float))}
    name = labels.pop("__name__", None)
    if not name:
        return None
    try:
        timestamp = float(value[0])
        number = float(value[1])  # Prometheus sends values as strings: "42", "NaN", "+Inf"
    except (TypeError, ValueError):
        return None
    if not math.isfinite(timestamp):
        return None
    return Row(name=name, labels=labels, value=number, timestamp=timestamp)


def parse_answer(
    answer: object,
    *,
    now: float,
    node_labels: Iterable[str] = DEFAULT_NODE_LABELS,
    uuid_index: dict[str, tuple[str, int]] | None = None,
) -> list[GpuSample]:
    return samples_from_rows(
        rows_from_answer(answer), now=now, node_labels=node_labels, uuid_index=uuid_index, source="prometheus"
    )
