"""Render deploy/ with `kubectl kustomize` (as deploy/README.md does) and walk what comes out."""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
DEPLOY = ROOT / "deploy"
OVERLAYS = ("deploy/overlays/demo", "deploy/overlays/production", "deploy/overlays/lab")
# Everything the README renders: both overlays, the GPU side, the notebooks' policy alone.
RENDERED = (*OVERLAYS, "deploy/gpu", "deploy/kubernetes")
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob")
PORTAL_NAMESPACES = ("gpu-lab", "gpu-lab-jobs", "gpu-lab-notebooks")


def kubectl() -> str:
    tool = shutil.which("kubectl")
    if tool is None:
        raise AssertionError("kubectl is missing: scripts/test.sh installs it (Debian package kubernetes-client)")
    return tool


@functools.cache
def _render(directory: str) -> tuple[dict, ...]:
    result = subprocess.run(
        [kubectl(), "kustomize", directory], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, f"kubectl kustomize {directory}: {result.stderr}"
    return tuple(doc for doc in yaml.safe_load_all(result.stdout) if doc)


def render(directory: str) -> list[dict]:
    """The manifests of one kustomization (a fresh copy each time: tests may change them)."""
    import copy

    return copy.deepcopy(list(_render(directory)))


def find(docs: list[dict], kind: str, name: str, namespace: str | None = None) -> dict:
    for doc in docs:
        meta = doc["metadata"]
        if doc["kind"] == kind and meta["name"] == name and (namespace is None or meta.get("namespace") == namespace):
            return doc
    raise AssertionError(f"no {kind} {name} rendered")


def pod_template(doc: dict) -> dict:
    """The pod template of a workload (metadata and spec); a CronJob's is its Job template's."""
    if doc["kind"] == "CronJob":
        return doc["spec"]["jobTemplate"]["spec"]["template"]
    return doc["spec"]["template"]


def containers(pod_spec: dict) -> Iterator[dict]:
    yield from pod_spec.get("initContainers") or []
    yield from pod_spec.get("containers") or []


def workloads(docs: list[dict]) -> Iterator[dict]:
    return (doc for doc in docs if doc["kind"] in WORKLOADS)
