"""The Kubernetes objects of one job attempt, as plain dicts: a batch/v1 Job, its rendezvous Service, its checkpoint
claim. Pure functions of a JobSpec and a ClusterConfig, so tests validate exactly what is sent.

- One node: a plain Job, one pod, `nvidia.com/gpu` (settings.KUBERNETES_GPU_RESOURCE) limits.
- N nodes: an Indexed Job (completions = parallelism = N), one pod per node (required pod anti-affinity on
  the hostname), and a headless Service named like the Job whose pods publish DNS before they are ready:
  rank 0 is `<job>-0.<job>.<namespace>.svc`. Every pod gets what `torchrun` needs:
  `torchrun --nnodes $WORLD_SIZE --nproc-per-node $NPROC_PER_NODE --node-rank $NODE_RANK
  --master-addr $MASTER_ADDR --master-port $MASTER_PORT train.py`, where WORLD_SIZE counts nodes (as
  Kubeflow's PyTorchJob does) and NODE_RANK is the pod's completion index, read through the downward API.
- Placement: required node affinity on `kubernetes.io/hostname` in the nodes the queue policy assigned (the
  scheduler still checks resources and taints, unlike `nodeName`); tolerations for the GPU taints.
- Safety: non-root (runAsNonRoot, fixed uid/gid, fsGroup), no privilege escalation, all capabilities
  dropped, RuntimeDefault seccomp, no service-account token, no service links.
- Lifetime: activeDeadlineSeconds = max_runtime_s; backoffLimit (default 0: the portal retries by
  attempt); ttlSecondsAfterFinished; terminationGracePeriodSeconds = the stop grace period.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from jobs.backends import resources as cluster
from jobs.backends.base import SCRIPT_PATH, JobSpec, checkpoint_name
from jobs.backends.rules import label_value, scale_quantity

LABEL_PREFIX = "portal.gpulab.io"
LABEL_JOB = f"{LABEL_PREFIX}/job-id"
LABEL_ATTEMPT = f"{LABEL_PREFIX}/attempt"
LABEL_OWNER = f"{LABEL_PREFIX}/owner"
LABEL_COURSE = f"{LABEL_PREFIX}/course"
# Which portal made it (PORTAL_INSTANCE_ID): the reconciler stops only Jobs of its own instance.
LABEL_INSTANCE = f"{LABEL_PREFIX}/instance"
# A script job's text: an annotation of its pods, which a downwardAPI volume makes the read-only file SCRIPT_PATH
# (no object of its own to create and clean up; annotations hold up to 256 KiB, JOBS_SCRIPT_MAX_BYTES stays below).
ANNOTATION_SCRIPT = f"{LABEL_PREFIX}/script"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpu-lab-portal", "app.kubernetes.io/component": "training-job"}
COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
CHECKPOINT_MOUNT = "/checkpoint"


@dataclasses.dataclass(frozen=True)
class ClusterConfig:
    namespace: str = "gpu-lab-jobs"
    gpu_resource: str = "nvidia.com/gpu"
    tolerations: tuple[str, ...] = ("nvidia.com/gpu",)
    run_as_user: int = 1000
    run_as_group: int = 1000
    cpu_per_gpu: str = "4"
    memory_per_gpu: str = "24Gi"
    shm_size: str = "8Gi"
    backoff_limit: int = 0
    ttl_after_finished_s: int = 86400
    grace_s: int = 120
    master_port: int = 29500
    nccl_socket_ifname: str = ""
    nccl_ib_hca: str = ""
    checkpoint_storage_class: str = ""
    checkpoint_size: str = "20Gi"
    instance: str = "default"
    # The lab's cluster (jobs/backends/resources.py): GPU sharing, storage tiers, the fast network.
    gpu_sharing: str = "none"
    gpu_replicas: int = 4
    gpu_memory_mb: int = 24564
    scheduler_name: str = ""
    scratch_storage_class: str = ""
    bulk_storage_class: str = ""
    storage_limits: Mapping[str, Mapping[str, str]] = dataclasses.field(default_factory=dict)
    nccl_ib_disable: str = ""
    rdma_resource: str = ""
    ipc_lock: bool = False
    host_network: bool = False

    @classmethod
    def from_settings(cls) -> ClusterConfig:
        from django.conf import settings

        return cls(
            namespace=settings.JOBS_NAMESPACE,
            gpu_resource=settings.KUBERNETES_GPU_RESOURCE,
            tolerations=tuple(settings.JOBS_TOLERATIONS),
            run_as_user=settings.JOBS_RUN_AS_USER,
            run_as_group=settings.JOBS_RUN_AS_GROUP,
            cpu_per_gpu=settings.JOBS_CPU_PER_GPU,
            memory_per_gpu=settings.JOBS_MEMORY_PER_GPU,
            shm_size=settings.JOBS_SHM_SIZE,
            backoff_limit=settings.JOBS_BACKOFF_LIMIT,
            ttl_after_finished_s=settings.JOBS_TTL_AFTER_FINISHED_S,
            grace_s=settings.JOBS_STOP_GRACE_S,
            master_port=settings.JOBS_MASTER_PORT,
            nccl_socket_ifname=settings.JOBS_NCCL_SOCKET_IFNAME,
            nccl_ib_hca=settings.JOBS_NCCL_IB_HCA,
            checkpoint_storage_class=settings.JOBS_CHECKPOINT_STORAGE_CLASS,
            checkpoint_size=settings.JOBS_CHECKPOINT_SIZE,
            instance=settings.PORTAL_INSTANCE_ID,
            gpu_sharing=settings.JOBS_GPU_SHARING,
            gpu_replicas=settings.JOBS_GPU_REPLICAS,
            gpu_memory_mb=settings.JOBS_GPU_MEMORY_MB,
            scheduler_name=settings.JOBS_SCHEDULER_NAME,
            scratch_storage_class=settings.JOBS_SCRATCH_STORAGE_CLASS,
            bulk_storage_class=settings.JOBS_BULK_STORAGE_CLASS,
            storage_limits=cluster.parse_storage_limits(settings.JOBS_STORAGE_LIMITS),
            nccl_ib_disable=settings.JOBS_NCCL_IB_DISABLE,
            rdma_resource=settings.JOBS_RDMA_RESOURCE,
            ipc_lock=settings.JOBS_IPC_LOCK,
            host_network=settings.JOBS_HOST_NETWORK,
        )


def namespace_of(spec: JobSpec, config: ClusterConfig) -> str:
    return spec.namespace or config.namespace


def selector_labels(job_id: int, attempt: int) -> dict[str, str]:
    """The labels that pick out one attempt's pods (and the Service's endpoints)."""
    return {LABEL_JOB: str(job_id), LABEL_ATTEMPT: str(attempt)}


def owned_labels(config: ClusterConfig) -> dict[str, str]:
    """The labels of every training Job this portal instance makes: what `list_running` selects by."""
    return {**MANAGED_BY, LABEL_INSTANCE: config.instance}


def _labels(spec: JobSpec, config: ClusterConfig) -> dict[str, str]:
    labels = {**owned_labels(config), **selector_labels(spec.job_id, spec.attempt)}
    if spec.owner and label_value(spec.owner):
        labels[LABEL_OWNER] = label_value(spec.owner)
    if spec.course and label_value(spec.course):
        labels[LABEL_COURSE] = label_value(spec.course)
    return labels


def _annotations(spec: JobSpec) -> dict[str, str]:
    annotations = {}
    if spec.display_name:
        annotations[f"{LABEL_PREFIX}/name"] = spec.display_name
    if spec.owner:
        annotations[f"{LABEL_PREFIX}/owner"] = spec.owner
    return annotations


def _pod_metadata(spec: JobSpec, config: ClusterConfig) -> dict[str, Any]:
    metadata: dict[str, Any] = {"labels": _labels(spec, config)}
    if spec.script:
        metadata["annotations"] = {ANNOTATION_SCRIPT: spec.script}
    return metadata


def master_address(spec: JobSpec, config: ClusterConfig) -> str:
    if spec.nodes == 1:
        return "127.0.0.1"
    return f"{spec.name}-0.{spec.name}.{namespace_of(spec, config)}.svc"


def _env(spec: JobSpec, config: ClusterConfig) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [{"name": name, "value": value} for name, value in sorted(spec.env.items())]
    env += [
        {"name": "PORTAL_JOB_ID", "value": str(spec.job_id)},
        {"name": "PORTAL_ATTEMPT", "value": str(spec.attempt)},
        {"name": "MASTER_ADDR", "value": master_address(spec, config)},
        {"name": "MASTER_PORT", "value": str(config.master_port)},
        {"name": "WORLD_SIZE", "value": str(spec.nodes)},
        {"name": "NNODES", "value": str(spec.nodes)},
        {"name": "NPROC_PER_NODE", "value": str(spec.gpus_per_node)},
    ]
    if spec.nodes > 1:
        env.append({"name": "NODE_RANK", "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX}}})
        env += cluster.network_env(spec, config)
    else:
        env.append({"name": "NODE_RANK", "value": "0"})
    if spec.checkpoint:
        env.append({"name": "CHECKPOINT_DIR", "value": CHECKPOINT_MOUNT})
    env += [{"name": dataset.env_name, "value": dataset.path} for dataset in spec.datasets]
    return env


def _volumes(spec: JobSpec, config: ClusterConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    volumes: list[dict[str, Any]] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": config.shm_size}}]
    # A memory-backed /dev/shm in the container (PyTorch data loaders share tensors there), not the host's.
    mounts: list[dict[str, Any]] = [{"name": "dshm", "mountPath": "/dev/shm"}]  # noqa: S108
    for number, dataset in enumerate(spec.datasets):
        volume = f"dataset-{number}"
        volumes.append({"name": volume, "persistentVolumeClaim": {"claimName": dataset.claim, "readOnly": True}})
        mounts.append({"name": volume, "mountPath": dataset.path, "readOnly": True})
    if spec.checkpoint:
        volumes.append({"name": "checkpoint", "persistentVolumeClaim": {"claimName": checkpoint_name(spec.job_id)}})
        mounts.append({"name": "checkpoint", "mountPath": CHECKPOINT_MOUNT})
    if spec.script:
        directory, file_name = SCRIPT_PATH.rsplit("/", 1)
        field = {"fieldPath": f"metadata.annotations['{ANNOTATION_SCRIPT}']"}
        volumes.append(
            {"name": "script", "downwardAPI": {"defaultMode": 0o444, "items": [{"path": file_name, "fieldRef": field}]}}
        )
        mounts.append({"name": "script", "mountPath": directory, "readOnly": True})
    tier_volumes, tier_mounts, _ = cluster.storage_volumes(spec, config)
    return volumes + tier_volumes, mounts + tier_mounts


def _affinity(spec: JobSpec) -> dict[str, Any]:
    affinity: dict[str, Any] = {}
    if spec.node_names:
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": list(spec.node_names)}
                        ]
                    }
                ]
            }
        }
    if spec.nodes > 1:
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": selector_labels(spec.job_id, spec.attempt)},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    return affinity


def job_manifest(spec: JobSpec, config: ClusterConfig) -> dict[str, Any]:
    scale = cluster.host_scale(spec)
    volumes, mounts = _volumes(spec, config)
    network_pod, network_resources, capabilities = cluster.network_pod_settings(spec, config)
    devices = {**cluster.gpu_resources(spec, config), **network_resources}
    memory = scale_quantity(config.memory_per_gpu, scale)
    container: dict[str, Any] = {
        "name": "main",
        "image": spec.image,
        "command": list(spec.command),
        "env": _env(spec, config),
        "resources": {
            "limits": {**devices, "memory": memory},
            "requests": {
                **devices,
                "cpu": scale_quantity(config.cpu_per_gpu, scale),
                "memory": memory,
                **cluster.storage_volumes(spec, config)[2],
            },
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"], **({"add": capabilities} if capabilities else {})},
            "runAsNonRoot": True,
        },
        "volumeMounts": mounts,
    }
    if spec.nodes > 1:
        container["ports"] = [{"name": "rendezvous", "containerPort": config.master_port, "protocol": "TCP"}]
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": config.grace_s,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": config.run_as_user,
            "runAsGroup": config.run_as_group,
            "fsGroup": config.run_as_group,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "tolerations": [{"key": key, "operator": "Exists", "effect": "NoSchedule"} for key in config.tolerations],
        "containers": [container],
        "volumes": volumes,
    }
    affinity = _affinity(spec)
    if affinity:
        pod_spec["affinity"] = affinity
    if config.scheduler_name:
        pod_spec["schedulerName"] = config.scheduler_name
    pod_spec.update(network_pod)
    job_spec: dict[str, Any] = {
        "backoffLimit": config.backoff_limit,
        "activeDeadlineSeconds": int(spec.max_runtime_s),
        "ttlSecondsAfterFinished": config.ttl_after_finished_s,
        "template": {"metadata": _pod_metadata(spec, config), "spec": pod_spec},
    }
    if spec.nodes > 1:
        pod_spec["subdomain"] = spec.name
        job_spec.update({"completionMode": "Indexed", "completions": spec.nodes, "parallelism": spec.nodes})
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": spec.name,
            "namespace": namespace_of(spec, config),
            "labels": _labels(spec, config),
            "annotations": _annotations(spec),
        },
        "spec": job_spec,
    }


def service_manifest(spec: JobSpec, config: ClusterConfig, *, owner_uid: str | None = None) -> dict[str, Any]:
    """The headless Service that gives a multi-node job's pods DNS names; owned by the Job, so it goes with it."""
    metadata: dict[str, Any] = {
        "name": spec.name,
        "namespace": namespace_of(spec, config),
        "labels": _labels(spec, config),
    }
    if owner_uid:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": spec.name,
                "uid": owner_uid,
                "controller": False,
                "blockOwnerDeletion": False,
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata,
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": selector_labels(spec.job_id, spec.attempt),
            "ports": [
                {"name": "rendezvous", "port": config.master_port, "targetPort": config.master_port, "protocol": "TCP"}
            ],
        },
    }


def checkpoint_claim_manifest(spec: JobSpec, config: ClusterConfig) -> dict[str, Any]:
    """The job's writable checkpoint volume; one per job, kept across attempts (ReadWriteMany across nodes): every
    attempt's pods mount this same claim at /checkpoint, so a requeued attempt reads what the last one wrote."""
    claim_spec: dict[str, Any] = {
        "accessModes": ["ReadWriteMany" if spec.nodes > 1 else "ReadWriteOnce"],
        "resources": {"requests": {"storage": config.checkpoint_size}},
    }
    if config.checkpoint_storage_class:
        claim_spec["storageClassName"] = config.checkpoint_storage_class
    if spec.resume_from:
        # "Run again from this checkpoint": a clone of the earlier job's claim (a CSI driver that clones volumes,
        # in the same namespace and storage class), so the job starts with its files in /checkpoint.
        claim_spec["dataSource"] = {"kind": "PersistentVolumeClaim", "name": checkpoint_name(spec.resume_from)}
    labels = {**MANAGED_BY, LABEL_JOB: str(spec.job_id)}
    if spec.owner and label_value(spec.owner):
        labels[LABEL_OWNER] = label_value(spec.owner)
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": checkpoint_name(spec.job_id), "namespace": namespace_of(spec, config), "labels": labels},
        "spec": claim_spec,
    }
