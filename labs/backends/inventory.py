"""Where the node inventory comes from: a file (or nothing) locally, Kubernetes nodes in a cluster."""

from __future__ import annotations

from typing import Protocol

from django.conf import settings
from kubernetes import client

from labs.backends.kube import api_client, kubernetes_error, request_timeout
from labs.inventory import RTX_4090, RTX_4090_MEMORY_MB, GpuSpec, NodeSpec, parse_inventory_file


class InventoryBackend(Protocol):
    name: str

    def list_nodes(self) -> list[NodeSpec]: ...

    def set_unschedulable(self, node_name: str, unschedulable: bool) -> None: ...


class LocalInventory:
    """The inventory file named by INVENTORY_FILE, or nothing (then seed_demo fills the lab)."""

    name = "local"

    def __init__(self, path: str | None = None) -> None:
        self.path = path if path is not None else settings.INVENTORY_FILE

    def list_nodes(self) -> list[NodeSpec]:
        return parse_inventory_file(self.path) if self.path else []

    def set_unschedulable(self, node_name: str, unschedulable: bool) -> None:
        # Nothing schedules onto local nodes but the portal, which reads the node's status.
        return None


class KubernetesInventory:
    """Nodes that advertise GPUs as an extended resource (nvidia.com/gpu by default)."""

    name = "kubernetes"

    def __init__(self, api: client.ApiClient | None = None, gpu_resource: str | None = None) -> None:
        self.api = api or api_client()
        self.gpu_resource = gpu_resource or settings.KUBERNETES_GPU_RESOURCE

    def list_nodes(self) -> list[NodeSpec]:
        try:
            nodes = client.CoreV1Api(self.api).list_node(_request_timeout=request_timeout())
        except Exception as exc:
            raise kubernetes_error(exc, "list nodes") from exc
        specs = []
        for node in nodes.items:
            spec = self._spec(node)
            if spec is not None:
                specs.append(spec)
        return specs

    def _spec(self, node) -> NodeSpec | None:
        capacity = (node.status.capacity or {}) if node.status else {}
        try:
            count = int(capacity.get(self.gpu_resource, 0))
        except (TypeError, ValueError):
            count = 0
        if count <= 0:
            return None
        labels = dict(node.metadata.labels or {})
        # GPU feature discovery labels the product ("NVIDIA-GeForce-RTX-4090") and memory in MiB.
        product = labels.get("nvidia.com/gpu.product")
        model = product.replace("-", " ") if product else RTX_4090
        try:
            memory_mb = int(labels.get("nvidia.com/gpu.memory", RTX_4090_MEMORY_MB))
        except ValueError:
            memory_mb = RTX_4090_MEMORY_MB
        conditions = (node.status.conditions or []) if node.status else []
        ready = any(c.type == "Ready" and c.status == "True" for c in conditions)
        return NodeSpec(
            name=node.metadata.name,
            gpus=tuple(GpuSpec(index=i, model=model, memory_mb=memory_mb) for i in range(count)),
            labels=labels,
            ready=ready,
            unschedulable=bool(node.spec.unschedulable) if node.spec else False,
        )

    def set_unschedulable(self, node_name: str, unschedulable: bool) -> None:
        try:
            client.CoreV1Api(self.api).patch_node(
                node_name, {"spec": {"unschedulable": unschedulable}}, _request_timeout=request_timeout()
            )
        except Exception as exc:
            raise kubernetes_error(exc, f"{'cordon' if unschedulable else 'uncordon'} node {node_name}") from exc


def get_inventory_backend() -> InventoryBackend:
    if settings.INVENTORY_BACKEND == "kubernetes":
        return KubernetesInventory()
    return LocalInventory()
