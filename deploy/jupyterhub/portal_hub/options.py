"""The portal's user_options: check the signature, then turn them into spawner settings.

The portal starts every notebook as the named server ``nb{session}`` with a JSON body of user_options::

    {"session": 17, "profile": "pytorch-quarter", "image": "...", "gpu_share": 0.25, "gpu_mem_mb": 6141,
     "cpu": 2.0, "mem_gb": 8.0, "node": "gpu07", "gpu_index": 0, "gpu_uuid": "GPU-...", "max_seconds": 14400,
     "user_id": 42, "sig": "<hex>"}

(``user_id``, the portal user's id, gives a local server the person's own uid: spawners.LocalSpawner; options signed
before it was added have none.)

``sig`` is HMAC-SHA256, keyed by the portal's service token, of the other keys as canonical JSON (sorted keys, no
spaces). The hub runs `apply_user_options` before every spawner start, whoever asked for it (the portal, an admin on
the hub's pages, a replay of the options saved in the hub's database), so a spawn with missing, malformed or badly
signed options, or options signed for another server, never reaches a spawner: the request gets 403 and nothing is
left running. Options are checked but not interpreted by the hub beyond what is here: placement, quotas and session
lengths are the portal's decisions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import math
import re
from collections.abc import Callable
from typing import Any

SPAWNER_KINDS = ("kubernetes", "local", "echo")
GPU_SHARING_MODES = ("timeslice", "hami", "mps", "none")
GPU_RESOURCE = "nvidia.com/gpu"
# HAMi's default resource names: device memory in MiB and a percentage of the GPU's cores.
HAMI_MEMORY = "nvidia.com/gpumem"
HAMI_CORES = "nvidia.com/gpucores"
# Notebook pods carry these labels (besides KubeSpawner's own) so a NetworkPolicy can select them.
LABEL_PREFIX = "portal.gpulab.io"
NOTEBOOK_LABELS = {"app.kubernetes.io/part-of": "gpu-lab-portal", f"{LABEL_PREFIX}/role": "notebook"}
GIB = 1024**3

_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-/:@+]{0,511}$")
_HEX = re.compile(r"^[0-9a-f]{64}$")
_DATASET_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_CLAIM = re.compile(r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)?$")
_ABS_PATH = re.compile(r"^(/[A-Za-z0-9._@+-]+)+$")
MAX_DATASETS = 64


class OptionsRefused(ValueError):
    """The options cannot start a server: say why in one sentence (it reaches the log and the API answer)."""


@dataclasses.dataclass(frozen=True)
class DatasetMount:
    """A dataset or course share: the claim mounted at mount_path on the cluster, the directory bound at its own path
    locally; read-only unless `writable` (a course share in its teachers' notebooks)."""

    name: str
    claim: str
    local_path: str
    mount_path: str
    writable: bool = False

    @property
    def env_name(self) -> str:
        return "DATASET_" + re.sub(r"[^A-Za-z0-9]", "_", self.name).upper()


@dataclasses.dataclass(frozen=True)
class SessionOptions:
    """One notebook session as the portal placed it."""

    session: int
    profile: str
    image: str
    gpu_share: float  # of one GPU: 0 (no GPU) to 1 (the whole GPU)
    gpu_mem_mb: int
    cpu: float
    mem_gb: float
    node: str
    gpu_index: int
    gpu_uuid: str
    max_seconds: int
    user_id: int | None = None  # the portal user's (absent from options signed before it was added)
    datasets: tuple[DatasetMount, ...] = ()  # datasets and course shares the person may use (absent: none)

    @property
    def server_name(self) -> str:
        return f"nb{self.session}"

    @property
    def mem_bytes(self) -> int:
        return int(round(self.mem_gb * GIB))


def canonical(options: dict[str, Any]) -> bytes:
    """The bytes the signature covers: every key but ``sig``, sorted, compact."""
    return json.dumps({k: v for k, v in options.items() if k != "sig"}, sort_keys=True, separators=(",", ":")).encode()


def signature(options: dict[str, Any], key: str) -> str:
    return hmac.new(key.encode(), canonical(options), hashlib.sha256).hexdigest()


def signed(options: dict[str, Any], key: str) -> dict[str, Any]:
    """The options with their signature, as the portal sends them (for tests and tools)."""
    return {**options, "sig": signature(options, key)}


def _int(options: dict[str, Any], name: str, *, minimum: int) -> int:
    value = options.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise OptionsRefused(f"{name} must be a whole number of at least {minimum}, got {value!r}.")
    return value


def _number(options: dict[str, Any], name: str, *, minimum: float, maximum: float, above: bool = False) -> float:
    value = options.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise OptionsRefused(f"{name} must be a number, got {value!r}.")
    if value < minimum or value > maximum or (above and value == minimum):
        low = f"above {minimum}" if above else f"at least {minimum}"
        raise OptionsRefused(f"{name} must be {low} and at most {maximum}, got {value!r}.")
    return float(value)


def _text(options: dict[str, Any], name: str, *, pattern: re.Pattern[str] | None = None, limit: int = 128) -> str:
    value = options.get(name)
    if not isinstance(value, str) or len(value) > limit or (pattern is not None and not pattern.match(value)):
        raise OptionsRefused(f"{name} is not a valid value: {value!r}.")
    return value


def _datasets(options: dict[str, Any]) -> tuple[DatasetMount, ...]:
    """The signed datasets, each checked: a name, a claim name, absolute normalised paths (no '..')."""
    value = options.get("datasets", [])
    if not isinstance(value, list) or len(value) > MAX_DATASETS:
        raise OptionsRefused(f"datasets must be a list of at most {MAX_DATASETS}.")
    mounts = []
    for item in value:
        if not isinstance(item, dict):
            raise OptionsRefused("each dataset must be an object.")
        mount = DatasetMount(
            name=_text(item, "name", pattern=_DATASET_NAME, limit=63),
            claim=_text(item, "claim", pattern=_CLAIM, limit=253),
            local_path=_text(item, "local_path", limit=500) if item.get("local_path") else "",
            mount_path=_text(item, "mount_path", pattern=_ABS_PATH, limit=500),
            writable=item.get("writable") is True,
        )
        for path in (mount.local_path, mount.mount_path):
            if path and (not _ABS_PATH.match(path) or ".." in path.split("/")):
                raise OptionsRefused(f"dataset {mount.name}'s path {path!r} is not an absolute, plain path.")
        mounts.append(mount)
    if len({m.name for m in mounts}) != len(mounts):
        raise OptionsRefused("two datasets have the same name.")
    return tuple(mounts)


def verify(options: Any, *, key: str, server_name: str) -> SessionOptions:
    """The session the options describe, or OptionsRefused when they are missing, badly signed or malformed.

    The signature is checked first, so nothing about unsigned options is interpreted.
    """
    if not options or not isinstance(options, dict):
        raise OptionsRefused("no options: notebooks are started by the portal, with options it signs.")
    sig = options.get("sig")
    if not isinstance(sig, str) or not _HEX.match(sig):
        raise OptionsRefused("the options are not signed.")
    if not key or not hmac.compare_digest(sig, signature(options, key)):
        raise OptionsRefused("the options' signature does not match.")
    session = SessionOptions(
        session=_int(options, "session", minimum=1),
        profile=_text(options, "profile", limit=63),
        image=_text(options, "image", pattern=_IMAGE, limit=512),
        gpu_share=_number(options, "gpu_share", minimum=0, maximum=1),
        gpu_mem_mb=_int(options, "gpu_mem_mb", minimum=0),
        cpu=_number(options, "cpu", minimum=0, maximum=1024, above=True),
        mem_gb=_number(options, "mem_gb", minimum=0, maximum=4096, above=True),
        node=_text(options, "node", pattern=_NODE_NAME, limit=253),
        gpu_index=_int(options, "gpu_index", minimum=0),
        gpu_uuid=_text(options, "gpu_uuid"),
        max_seconds=_int(options, "max_seconds", minimum=1),
        user_id=_int(options, "user_id", minimum=1) if "user_id" in options else None,
        datasets=_datasets(options),
    )
    # A signed set of options starts one server: the one named after its session.
    if server_name != session.server_name:
        raise OptionsRefused(f"the options are for server {session.server_name}, not {server_name or '(default)'}.")
    return session


# --- What the options become ---------------------------------------------------------------------------------------


def session_env(opts: SessionOptions) -> dict[str, str]:
    """Told to the notebook itself, for people and for tools that read them (nothing enforces them here)."""
    return {
        "PORTAL_SESSION": str(opts.session),
        "PORTAL_PROFILE": opts.profile,
        "PORTAL_NODE": opts.node,
        "PORTAL_GPU_INDEX": str(opts.gpu_index),
        "PORTAL_GPU_UUID": opts.gpu_uuid,
        "PORTAL_GPU_SHARE": repr(opts.gpu_share),
        "PORTAL_GPU_MEM_MB": str(opts.gpu_mem_mb),
        "PORTAL_SESSION_MAX_SECONDS": str(opts.max_seconds),
    }


def dataset_env(opts: SessionOptions, *, local: bool) -> dict[str, str]:
    """$DATASET_<NAME>: where each dataset is in this notebook, as a job finds its datasets."""
    return {d.env_name: (d.local_path if local and d.local_path else d.mount_path) for d in opts.datasets}


def kube_volumes(opts: SessionOptions) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """KubeSpawner's volumes and volume_mounts for the datasets: each claim, read-only unless writable."""
    volumes, mounts = [], []
    for number, dataset in enumerate(d for d in opts.datasets if d.claim):
        name = f"dataset-{number}"
        read_only = not dataset.writable
        volumes.append({"name": name, "persistentVolumeClaim": {"claimName": dataset.claim, "readOnly": read_only}})
        mounts.append({"name": name, "mountPath": dataset.mount_path, "readOnly": read_only})
    return volumes, mounts


def gpu_resources(opts: SessionOptions, *, sharing: str, replicas: int) -> dict[str, str]:
    """The extended resources a notebook pod asks for (as both request and limit, as Kubernetes requires).

    - ``timeslice``: the NVIDIA device plugin's time-slicing advertises ``replicas`` ``nvidia.com/gpu`` per physical
      GPU, so a share is ``max(1, round(share * replicas))`` of them and a whole GPU is all of them (then nobody
      else is scheduled on it). Time-slicing isolates neither memory nor faults: gpu_mem_mb is only advisory here
      (the notebook sees it as PORTAL_GPU_MEM_MB).
    - ``hami``: HAMi's vGPU: one ``nvidia.com/gpu`` with ``nvidia.com/gpumem`` MiB of device memory and
      ``nvidia.com/gpucores`` percent of the cores, both enforced inside the container.
    - ``mps``: the NVIDIA device plugin's CUDA MPS sharing: ``replicas`` equal clients per GPU, each capped at
      1/replicas of the memory and SMs; a pod gets one replica, whatever its share (the caps are fixed slices).
    - ``none``: whole GPUs only: every notebook with a GPU gets one; the portal must not place two on one GPU.

    A share of 0 asks for no GPU at all.
    """
    if opts.gpu_share <= 0:
        return {}
    if sharing == "timeslice":
        count = replicas if opts.gpu_share >= 1 else max(1, round(opts.gpu_share * replicas))
        return {GPU_RESOURCE: str(min(count, replicas))}
    if sharing == "hami":
        cores = max(1, min(100, round(opts.gpu_share * 100)))
        resources = {GPU_RESOURCE: "1", HAMI_CORES: str(cores)}
        if opts.gpu_mem_mb > 0:
            resources[HAMI_MEMORY] = str(opts.gpu_mem_mb)
        return resources
    if sharing in ("mps", "none"):
        return {GPU_RESOURCE: "1"}
    raise ValueError(f"unknown GPU sharing mode {sharing!r}")


def kube_settings(opts: SessionOptions, *, sharing: str, replicas: int) -> dict[str, Any]:
    """KubeSpawner attributes for this session (merged into what the hub config sets for every notebook)."""
    gpus = gpu_resources(opts, sharing=sharing, replicas=replicas)
    env = {**session_env(opts), **dataset_env(opts, local=False)}
    volumes, mounts = kube_volumes(opts)
    if not gpus:
        # No GPU asked for: keep the NVIDIA runtime from handing the image's NVIDIA_VISIBLE_DEVICES=all GPUs over.
        env["NVIDIA_VISIBLE_DEVICES"] = "void"
    return {
        "image": opts.image,
        "cpu_limit": opts.cpu,
        "cpu_guarantee": opts.cpu,
        "mem_limit": opts.mem_bytes,
        "mem_guarantee": opts.mem_bytes,
        "node_selector": {"kubernetes.io/hostname": opts.node},
        "extra_resource_limits": gpus,
        "extra_resource_guarantees": dict(gpus),
        "extra_labels": {f"{LABEL_PREFIX}/session": str(opts.session)},
        # The end of the session: the kubelet kills the pod when it has run this long, and the hub notices.
        "extra_pod_config": {"activeDeadlineSeconds": opts.max_seconds},
        "environment": env,
        **({"volumes": volumes, "volume_mounts": mounts} if volumes else {}),
    }


def common_settings(opts: SessionOptions) -> dict[str, Any]:
    """Settings of every spawner (the local ones only report cpu/memory to the notebook as CPU_LIMIT/MEM_LIMIT)."""
    return {
        "cpu_limit": opts.cpu,
        "cpu_guarantee": opts.cpu,
        "mem_limit": opts.mem_bytes,
        "mem_guarantee": opts.mem_bytes,
        "environment": {**session_env(opts), **dataset_env(opts, local=True)},
    }


def _merge(spawner: Any, name: str, value: Any) -> None:
    current = getattr(spawner, name)
    if isinstance(value, dict) and isinstance(current, dict):
        value = {**current, **value}
    elif isinstance(value, list) and isinstance(current, list):
        # The hub config's volumes (homes) and this session's datasets; the config's kept aside the first time, so a
        # server started again gets its datasets once, not once per start.
        base = spawner.__dict__.setdefault(f"_portal_config_{name}", list(current))
        value = [*base, *value]
    setattr(spawner, name, value)


def apply_hook(*, key: str, kind: str, sharing: str = "timeslice", replicas: int = 4) -> Callable[[Any, Any], None]:
    """The `Spawner.apply_user_options` hook: refuse (403) or configure the spawner for the session."""
    if kind not in SPAWNER_KINDS:
        raise ValueError(f"unknown spawner kind {kind!r}")
    if sharing not in GPU_SHARING_MODES:
        raise ValueError(f"unknown GPU sharing mode {sharing!r}")

    def apply_user_options(spawner: Any, user_options: Any) -> None:
        from tornado import web  # the hub's own dependency; options.py stays importable without it

        try:
            opts = verify(user_options, key=key, server_name=spawner.name)
        except OptionsRefused as refused:
            spawner.log.warning("Refusing to start %s: %s", spawner._log_name, refused)
            raise web.HTTPError(403, f"Refused to start {spawner._log_name}: {refused}") from None
        if kind == "kubernetes":
            settings = kube_settings(opts, sharing=sharing, replicas=replicas)
            if sharing == "none" and 0 < opts.gpu_share < 1:
                spawner.log.warning(
                    "%s asks for %s of a GPU; without GPU sharing it gets a whole one",
                    spawner._log_name,
                    opts.gpu_share,
                )
            elif sharing == "mps" and opts.gpu_share > 0 and abs(opts.gpu_share * replicas - 1) > 1e-6:
                spawner.log.warning(
                    "%s asks for %s of a GPU; MPS gives every notebook 1/%d of one",
                    spawner._log_name,
                    opts.gpu_share,
                    replicas,
                )
        else:
            settings = common_settings(opts)
        for name, value in settings.items():
            _merge(spawner, name, value)
        spawner.session_options = opts

    return apply_user_options
