"""What the lab's cluster offers a job beyond whole GPUs: a part of a GPU, storage tiers, the fast network.

Pure functions of a JobSpec and the ClusterConfig (jobs.backends.manifests), used by `job_manifest`:

- **GPU sharing** (JOBS_GPU_SHARING): `none` asks for whole `nvidia.com/gpu`s, as before; `timeslice` counts the
  device plugin's replicas (a whole GPU is all `replicas` of it, a part `round(share * replicas)`, at least 1);
  `hami` asks for `nvidia.com/gpumem` MiB and `nvidia.com/gpucores` percent of one GPU (HAMi enforces the memory
  cap inside the container) and its scheduler; `mps` gives a part one MPS client (a fixed 1/replicas slice).
- **Storage tiers**: `scratch` is node-local (an emptyDir on the node's own disk, the NVMe, counted as
  ephemeral-storage, or a generic ephemeral volume of JOBS_SCRATCH_STORAGE_CLASS, e.g. local-path on the NVMe);
  `bulk` a generic ephemeral volume of JOBS_BULK_STORAGE_CLASS (CephFS on the erasure-coded pool, NFS). Both go
  with the pod; each role has a ceiling per tier (JOBS_STORAGE_LIMITS).
- **Multi-node training**: an RDMA device resource per pod, IPC_LOCK (RDMA pins memory), NCCL_IB_DISABLE, and
  the host's network where the admin allows it (JOBS_HOST_NETWORK), for jobs of more than one node.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Protocol

from jobs.backends.base import JobSpec
from jobs.backends.rules import is_quantity, parse_quantity


class ClusterConfig(Protocol):
    """What these functions read of jobs.backends.manifests.ClusterConfig (which imports this module)."""

    gpu_resource: str
    gpu_sharing: str
    gpu_replicas: int
    gpu_memory_mb: int
    scratch_storage_class: str
    bulk_storage_class: str
    storage_limits: Mapping[str, Mapping[str, str]]
    nccl_socket_ifname: str
    nccl_ib_hca: str
    nccl_ib_disable: str
    rdma_resource: str
    ipc_lock: bool
    host_network: bool


GPU_SHARING_MODES = ("none", "timeslice", "hami", "mps")
HAMI_MEMORY = "nvidia.com/gpumem"
HAMI_CORES = "nvidia.com/gpucores"
SCRATCH_MOUNT = "/scratch"
BULK_MOUNT = "/bulk"
TIERS = ("scratch", "bulk")


def parse_storage_limits(text: str) -> dict[str, dict[str, str]]:
    """ "student:scratch=50Gi,bulk=100Gi;teacher:scratch=200Gi,bulk=1Ti" -> {role: {tier: quantity}}.

    A role without an entry may ask for no scratch or bulk at all. ValueError names what is wrong."""
    limits: dict[str, dict[str, str]] = {}
    for entry in filter(None, (part.strip() for part in text.split(";"))):
        role, sep, rest = entry.partition(":")
        if not sep or not role.strip():
            raise ValueError(f"{entry!r} is not role:tier=size,...")
        tiers = limits.setdefault(role.strip(), {})
        for item in filter(None, (part.strip() for part in rest.split(","))):
            tier, eq, size = (piece.strip() for piece in item.partition("="))
            if not eq or tier not in TIERS or not is_quantity(size):
                raise ValueError(f"{item!r} of {role.strip()} is not scratch=<size> or bulk=<size>")
            tiers[tier] = size
    return limits


def config_problems(spec: JobSpec, config: ClusterConfig) -> list[str]:
    """What this cluster cannot give the spec: a part of a GPU without sharing, storage over the role's ceiling."""
    problems = []
    if spec.gpu_share < 1 and config.gpu_sharing == "none":
        problems.append("this cluster does not share GPUs between jobs (JOBS_GPU_SHARING=none): ask for whole GPUs")
    ceilings = config.storage_limits.get(spec.owner_role, {})
    for tier in TIERS:
        size = getattr(spec, tier)
        if not size:
            continue
        if not is_quantity(size) or parse_quantity(size) <= 0:
            problems.append(f"{tier} must be a size such as 50Gi, got {size!r}")
        elif tier not in ceilings:
            problems.append(f"{spec.owner_role or 'this role'} may not ask for {tier} storage")
        elif parse_quantity(size) > parse_quantity(ceilings[tier]):
            problems.append(f"{tier} of {size} is more than the {ceilings[tier]} a {spec.owner_role} may ask for")
    return problems


def gpu_resources(spec: JobSpec, config: ClusterConfig) -> dict[str, str]:
    """The GPU part of one pod's requests and limits (extended resources: the same in both)."""
    gpus, share = spec.gpus_per_node, spec.gpu_share
    if config.gpu_sharing == "timeslice":
        count = gpus * config.gpu_replicas if share >= 1 else max(1, round(share * config.gpu_replicas))
        return {config.gpu_resource: str(count)}
    if config.gpu_sharing == "hami" and share < 1:
        memory = int(share * config.gpu_memory_mb)
        return {config.gpu_resource: "1", HAMI_MEMORY: str(memory), HAMI_CORES: str(max(1, round(share * 100)))}
    if config.gpu_sharing == "hami":
        return {config.gpu_resource: str(gpus), HAMI_CORES: "100"}  # whole GPUs, nobody else's work beside
    return {config.gpu_resource: "1" if share < 1 else str(gpus)}  # mps: one client; none: whole GPUs


def host_scale(spec: JobSpec) -> int | Decimal:
    """CPU and memory per pod scale with the GPUs, or with the part of one."""
    return spec.gpus_per_node if spec.gpu_share >= 1 else Decimal(str(spec.gpu_share))


def storage_volumes(spec: JobSpec, config: ClusterConfig) -> tuple[list[dict], list[dict], dict[str, str]]:
    """(volumes, mounts, extra requests) for the spec's scratch and bulk tiers."""
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    requests: dict[str, str] = {}
    for tier, mount, storage_class in (
        ("scratch", SCRATCH_MOUNT, config.scratch_storage_class),
        ("bulk", BULK_MOUNT, config.bulk_storage_class),
    ):
        size = getattr(spec, tier)
        if not size:
            continue
        if tier == "scratch" and not storage_class:
            # The node's own disk (the kubelet's, on the NVMe); the scheduler counts it as ephemeral storage.
            volumes.append({"name": tier, "emptyDir": {"sizeLimit": size}})
            requests["ephemeral-storage"] = size
        else:
            claim: dict[str, Any] = {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": size}},
            }
            if storage_class:
                claim["storageClassName"] = storage_class
            volumes.append({"name": tier, "ephemeral": {"volumeClaimTemplate": {"spec": claim}}})
        mounts.append({"name": tier, "mountPath": mount})
    return volumes, mounts, requests


def network_env(spec: JobSpec, config: ClusterConfig) -> list[dict[str, str]]:
    """NCCL's settings for a multi-node job (none for one node: NCCL finds its GPUs by itself there)."""
    if spec.nodes == 1:
        return []
    env = []
    for name, value in (
        ("NCCL_SOCKET_IFNAME", config.nccl_socket_ifname),
        ("NCCL_IB_HCA", config.nccl_ib_hca),
        ("NCCL_IB_DISABLE", config.nccl_ib_disable),
    ):
        if value:
            env.append({"name": name, "value": value})
    return env


def network_pod_settings(spec: JobSpec, config: ClusterConfig) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """(pod spec fields, container resources, added capabilities) for a multi-node job on the fast network."""
    if spec.nodes == 1:
        return {}, {}, []
    pod: dict[str, Any] = {}
    if config.host_network:
        # The host's interfaces (RoCE/InfiniBand without a secondary CNI); DNS stays the cluster's.
        pod = {"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet"}
    resources = {config.rdma_resource: "1"} if config.rdma_resource else {}
    capabilities = ["IPC_LOCK"] if config.rdma_resource or config.ipc_lock else []
    return pod, resources, capabilities
