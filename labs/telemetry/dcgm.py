"""dcgm-exporter's metrics, from a scrape of a node's :9400/metrics or from a Prometheus server, to GpuSamples.

dcgm-exporter labels each series with the GPU (`gpu` index, `UUID`, `device`, `modelName`,
`pci_bus_id`), the exporter's `Hostname`, the driver version and, on Kubernetes, the pod that uses
the GPU. Versions differ in which of those they print; only `gpu` or `UUID` is needed here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from labs.telemetry.exposition import Row, parse_text
from labs.telemetry.samples import GpuSample, gpu_key, throttled

UTIL = "DCGM_FI_DEV_GPU_UTIL"  # percent
FB_USED = "DCGM_FI_DEV_FB_USED"  # MiB
FB_FREE = "DCGM_FI_DEV_FB_FREE"  # MiB
FB_RESERVED = "DCGM_FI_DEV_FB_RESERVED"  # MiB, newer exporters; part of the total
TEMP = "DCGM_FI_DEV_GPU_TEMP"  # °C
POWER = "DCGM_FI_DEV_POWER_USAGE"  # W
ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"  # mJ since the driver loaded
XID = "DCGM_FI_DEV_XID_ERRORS"  # the last Xid error's code

METRICS = (UTIL, FB_USED, FB_FREE, FB_RESERVED, TEMP, POWER, ENERGY, XID)

# Where a Prometheus server may keep the node's name; the first one present wins.
DEFAULT_NODE_LABELS = ("Hostname", "kubernetes_node", "node", "instance")


def node_from_labels(labels: dict[str, str], candidates: Iterable[str] = DEFAULT_NODE_LABELS) -> str | None:
    for name in candidates:
        value = labels.get(name)
        if value:
            # `instance` is host:port; a node is known by its host name.
            host = value.rsplit(":", 1)[0] if name == "instance" and value.count(":") == 1 else value
            return host.split(".")[0] if not _is_ip(host) else host
    return None


def _is_ip(host: str) -> bool:
    parts = host.split(".")
    return len(parts) == 4 and all(part.isdigit() for part in parts)


def samples_from_rows(
    rows: Iterable[Row],
    *,
    now: float,
    node: str | None = None,
    node_labels: Iterable[str] = DEFAULT_NODE_LABELS,
    uuid_index: dict[str, tuple[str, int]] | None = None,
    source: str = "dcgm",
) -> list[GpuSample]:
    """Group the rows by GPU and make one sample per GPU.

    `node` names the node when the rows come from scraping it (its own Hostname label may be a
    pod's name); otherwise the node is read from the labels. A series without a `gpu` label is
    placed by its UUID through `uuid_index` ({uuid: (node, index)}) when it can be.
    """
    node_labels = tuple(node_labels)
    gpus: dict[str, dict] = {}
    for row in rows:
        if row.name not in METRICS:
            continue
        labels = row.labels
        uuid = labels.get("UUID") or labels.get("uuid") or None
        where = node or node_from_labels(labels, node_labels)
        index = _index(labels.get("gpu"))
        if (index is None or where is None) and uuid and uuid_index and uuid in uuid_index:
            where, index = uuid_index[uuid]
        if where is None or index is None:
            throttled.warning(
                f"{source}:{where}:{uuid}",
                "unplaced",
                "telemetry: %s series %s has no node or GPU index (labels %s); skipped",
                source,
                row.name,
                sorted(labels),
            )
            continue
        gpu = gpus.setdefault(gpu_key(where, index), {"node": where, "index": index, "values": {}, "times": []})
        if uuid:
            gpu["uuid"] = uuid
        if labels.get("modelName"):
            gpu["model"] = labels["modelName"]
        gpu["values"][row.name] = row.value
        if row.timestamp is not None:
            gpu["times"].append(row.timestamp)
    return [_sample(gpu, now) for gpu in gpus.values()]


def _index(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        index = int(value)
    except ValueError:
        return None
    return index if 0 <= index < 1024 else None


def _sample(gpu: dict, now: float) -> GpuSample:
    values = gpu["values"]
    used = values.get(FB_USED)
    free = values.get(FB_FREE)
    total = None
    if used is not None and free is not None:
        total = used + free + (values.get(FB_RESERVED) or 0.0)
    energy = values.get(ENERGY)
    xid = values.get(XID)
    return GpuSample(
        node=gpu["node"],
        index=gpu["index"],
        # The freshest series decides: Prometheus answers with the evaluation time of each value.
        sampled_at=max(gpu["times"]) if gpu["times"] else now,
        uuid=gpu.get("uuid"),
        model=gpu.get("model"),
        util_pct=values.get(UTIL),
        mem_used_mb=used,
        mem_total_mb=total,
        temp_c=values.get(TEMP),
        power_w=values.get(POWER),
        energy_j=energy / 1000.0 if energy is not None and math.isfinite(energy) else energy,
        xid=int(xid) if xid is not None and math.isfinite(xid) and xid == int(xid) else xid,
    )


def parse_scrape(text: str, *, node: str, now: float) -> list[GpuSample]:
    """The samples in one node's dcgm-exporter page."""
    result = parse_text(text, names=METRICS)
    if result.skipped:
        throttled.warning(
            f"dcgm:{node}",
            "malformed",
            "telemetry: %d unreadable lines in %s's dcgm-exporter page",
            result.skipped,
            node,
        )
    return samples_from_rows(result.rows, now=now, node=node, source="dcgm")
