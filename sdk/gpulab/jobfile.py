"""A job described in YAML (`gpulab jobs submit -f job.yaml`): the fields of POST /api/v1/jobs/.

name: resnet-ddp
image: pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime
command: [torchrun, --nnodes=4, --nproc-per-node=1, train.py]
gpus: 1            # per node
nodes: 4
max_runtime_s: 7200
env: {EPOCHS: "10"}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gpulab._calls import JOB_FIELDS


class JobFileError(ValueError):
    """The file is missing, not YAML, or not a job: the message says which, in one line."""


def load_job_file(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise JobFileError(f"{path}: no such file.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise JobFileError(f"{path}: cannot be read ({exc}).") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise JobFileError(f"{path}: not valid YAML{where}: {problem}.") from None
    if not isinstance(data, dict):
        raise JobFileError(f"{path}: a job file is a YAML mapping (name:, image:, command:, ...), not {_kind(data)}.")
    unknown = sorted(str(key) for key in data if key not in JOB_FIELDS)
    if unknown:
        raise JobFileError(f"{path}: unknown field(s) {', '.join(unknown)}; a job has {', '.join(JOB_FIELDS)}.")
    command = data.get("command")
    if command is not None and not (isinstance(command, list) and all(isinstance(a, str | int) for a in command)):
        raise JobFileError(f"{path}: command is a list of arguments, e.g. [python, train.py], not {_kind(command)}.")
    if command is not None:
        data["command"] = [str(arg) for arg in command]
    if isinstance(data.get("env"), dict):
        data["env"] = {str(k): str(v) for k, v in data["env"].items()}
    return data


def _kind(value: Any) -> str:
    if value is None:
        return "empty"
    return {str: "a string", list: "a list", int: "a number", float: "a number", bool: "true/false"}.get(
        type(value), type(value).__name__
    )
