"""The lab's inventory as plain data: what nodes exist and which GPUs they carry.

Sources (a YAML or CSV file, Kubernetes, the demo) produce NodeSpecs; services.inventory_sync
writes them. Parsing errors name the line or entry so whoever edits the file can fix it.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path

import yaml
from django.core.exceptions import ValidationError

from labs.models.nodes import node_name_validator

RTX_4090 = "NVIDIA GeForce RTX 4090"
RTX_4090_MEMORY_MB = 24564


class InventoryError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class GpuSpec:
    index: int
    model: str
    memory_mb: int
    uuid: str | None = None


@dataclasses.dataclass(frozen=True)
class NodeSpec:
    name: str
    gpus: tuple[GpuSpec, ...]
    labels: dict[str, str] = dataclasses.field(default_factory=dict)
    # Only sources that observe the node (Kubernetes) say whether it is up or cordoned.
    ready: bool | None = None
    unschedulable: bool | None = None


def demo_specs(count: int = 40) -> list[NodeSpec]:
    return [
        NodeSpec(
            name=f"gpu{number:02d}",
            labels={"nvidia.com/gpu.product": "NVIDIA-GeForce-RTX-4090", "lab/rack": f"r{(number - 1) // 10 + 1}"},
            gpus=(GpuSpec(index=0, model=RTX_4090, memory_mb=RTX_4090_MEMORY_MB, uuid=_demo_uuid(number)),),
        )
        for number in range(1, count + 1)
    ]


def _demo_uuid(number: int) -> str:
    return f"GPU-4090{number:04x}-0000-4000-8000-{number:012x}"


def _check_name(name: object, where: str) -> str:
    if not isinstance(name, str):
        raise InventoryError(f"{where}: the node needs a name.")
    try:
        node_name_validator(name)
    except ValidationError:
        raise InventoryError(
            f"{where}: {name!r} is not a valid node name (lower-case letters, digits, dashes)."
        ) from None
    return name


def _positive_int(value: object, field: str, where: str, *, allow_zero: bool = False) -> int:
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        raise InventoryError(f"{where}: {field} must be a whole number, got {value!r}.") from None
    if number < 0 or (number == 0 and not allow_zero):
        raise InventoryError(f"{where}: {field} must be {'zero or more' if allow_zero else 'positive'}, got {number}.")
    return number


def _labels(value: object, where: str) -> dict[str, str]:
    if value in (None, ""):
        return {}
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, str):
        labels = {}
        for pair in value.split(";"):
            if not pair.strip():
                continue
            if "=" not in pair:
                raise InventoryError(f"{where}: labels are key=value pairs separated by ';', got {pair!r}.")
            key, _, val = pair.partition("=")
            labels[key.strip()] = val.strip()
        return labels
    raise InventoryError(f"{where}: labels must be a mapping or 'key=value;key=value'.")


def parse_yaml(text: str) -> list[NodeSpec]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InventoryError(f"The file is not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        raise InventoryError("The YAML inventory needs a top-level 'nodes:' list.")
    specs = []
    for position, entry in enumerate(data["nodes"], start=1):
        where = f"node #{position}"
        if not isinstance(entry, dict):
            raise InventoryError(f"{where}: each node is a mapping with name, gpus and optional labels.")
        name = _check_name(entry.get("name"), where)
        where = f"node {name}"
        gpus_in = entry.get("gpus", [])
        if not isinstance(gpus_in, list):
            raise InventoryError(f"{where}: gpus must be a list.")
        gpus = []
        for gpu_position, gpu in enumerate(gpus_in):
            if not isinstance(gpu, dict):
                raise InventoryError(f"{where}: GPU #{gpu_position + 1} must be a mapping.")
            gpus.append(
                GpuSpec(
                    index=_positive_int(gpu.get("index", gpu_position), "index", where, allow_zero=True),
                    model=str(gpu.get("model") or RTX_4090),
                    memory_mb=_positive_int(gpu.get("memory_mb", RTX_4090_MEMORY_MB), "memory_mb", where),
                    uuid=str(gpu["uuid"]) if gpu.get("uuid") else None,
                )
            )
        specs.append(NodeSpec(name=name, gpus=tuple(gpus), labels=_labels(entry.get("labels"), where)))
    return _checked(specs)


CSV_COLUMNS = ("node", "gpu_index", "gpu_model", "gpu_memory_mb", "gpu_uuid", "labels")


def parse_csv(text: str) -> list[NodeSpec]:
    """One row per GPU: node,gpu_index,gpu_model,gpu_memory_mb,gpu_uuid,labels (k=v;k=v)."""
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None or "node" not in reader.fieldnames:
        raise InventoryError(
            f"The CSV inventory needs a header row with at least 'node'; columns: {', '.join(CSV_COLUMNS)}."
        )
    nodes: dict[str, dict] = {}
    for row in reader:
        where = f"line {reader.line_num}"
        name = _check_name((row.get("node") or "").strip() or None, where)
        node = nodes.setdefault(name, {"gpus": [], "labels": {}})
        node["labels"].update(_labels(row.get("labels"), where))
        if (row.get("gpu_index") or "").strip() == "":
            continue
        node["gpus"].append(
            GpuSpec(
                index=_positive_int(row["gpu_index"], "gpu_index", where, allow_zero=True),
                model=(row.get("gpu_model") or "").strip() or RTX_4090,
                memory_mb=_positive_int(row.get("gpu_memory_mb") or RTX_4090_MEMORY_MB, "gpu_memory_mb", where),
                uuid=(row.get("gpu_uuid") or "").strip() or None,
            )
        )
    return _checked(
        [NodeSpec(name=name, gpus=tuple(node["gpus"]), labels=node["labels"]) for name, node in nodes.items()]
    )


def _checked(specs: list[NodeSpec]) -> list[NodeSpec]:
    seen_nodes: set[str] = set()
    seen_uuids: set[str] = set()
    for spec in specs:
        if spec.name in seen_nodes:
            raise InventoryError(f"Node {spec.name} is listed twice.")
        seen_nodes.add(spec.name)
        indexes = [gpu.index for gpu in spec.gpus]
        if len(indexes) != len(set(indexes)):
            raise InventoryError(f"Node {spec.name} lists the same GPU index twice.")
        for gpu in spec.gpus:
            if gpu.uuid:
                if gpu.uuid in seen_uuids:
                    raise InventoryError(f"GPU UUID {gpu.uuid} appears twice.")
                seen_uuids.add(gpu.uuid)
    return specs


def parse_inventory_file(path: str | Path) -> list[NodeSpec]:
    path = Path(path)
    parsers = {".csv": parse_csv, ".yaml": parse_yaml, ".yml": parse_yaml}
    parser = parsers.get(path.suffix.lower())
    if parser is None:
        raise InventoryError(f"The inventory file must end in .yaml, .yml or .csv, got {path.name}.")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InventoryError(f"Cannot read the inventory file {path}: {exc.strerror}.") from None
    except UnicodeDecodeError:
        raise InventoryError(f"The inventory file {path} is not UTF-8 text.") from None
    return parser(text)
