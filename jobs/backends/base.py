"""The contract between the portal and whatever runs training jobs: small dataclasses in and out.

A job attempt is named by (job id, attempt): `job_name` derives the one name every backend uses, so a
dispatch that runs twice finds the first one's work instead of starting it again. Four verbs:
- `create(spec)`: start the attempt; idempotent (an attempt that exists already is success);
- `status(ref)`: where the attempt stands, with what each pod or rank did;
- `delete(ref, grace_s=...)`: stop it (SIGTERM, grace, SIGKILL) and remove it; idempotent;
- `logs(ref, rank=0, tail_lines=None, offset=None, limit_bytes=None)`: a page of the output of one rank (a pod
  of a multi-node job), never more than JOBS_LOG_RESPONSE_MAX_BYTES (jobs/backends/logs.py);
- `list_running()`: every attempt of this portal the backend has not finished (the reconciler's view of the world:
  on the cluster, only Jobs with the portal's labels and its PORTAL_INSTANCE_ID; someone else's are not listed);
and `purge(job_id)` drops what outlives attempts (the checkpoint volume) once the job is over for good;
`output_roots(job_id, attempt)` names the directories the portal can read of a job ({} where it cannot).
Every failure raises accounts.errors.BackendError, whose `retryable` says whether trying again may help.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Literal, Protocol

Phase = Literal["pending", "running", "succeeded", "failed", "missing"]

# Environment variable names a job may set: a C identifier, as POSIX shells and Kubernetes accept.
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Names the portal sets itself; a job's env may not override them.
RESERVED_ENV = frozenset(
    {
        "PORTAL_JOB_ID",
        "PORTAL_ATTEMPT",
        "CHECKPOINT_DIR",
        "MASTER_ADDR",
        "MASTER_PORT",
        "WORLD_SIZE",
        "NODE_RANK",
        "NNODES",
        "NPROC_PER_NODE",
        "CUDA_VISIBLE_DEVICES",
        "NVIDIA_VISIBLE_DEVICES",
        "JOB_COMPLETION_INDEX",
    }
)


# A job given as a script (`JobSpec.script`) runs as this file, read-only, by the image's POSIX shell: /bin/sh is
# in every image (bash is not: slim and Alpine images lack it); a `#!` first line is only a comment to it.
SCRIPT_PATH = "/portal/job.sh"
SCRIPT_ARGV = ("/bin/sh", SCRIPT_PATH)


def job_name(job_id: int, attempt: int) -> str:
    """The name of one attempt everywhere (Kubernetes Job, Service, local directory): `job-42-a1`."""
    return f"job-{int(job_id)}-a{int(attempt)}"


def checkpoint_name(job_id: int) -> str:
    """The checkpoint volume of a job, shared by all its attempts so that a requeued attempt resumes."""
    return f"job-{int(job_id)}-checkpoint"


@dataclasses.dataclass(frozen=True, slots=True)
class JobRef:
    job_id: int
    attempt: int
    namespace: str = ""
    # When the backend created it (a Unix time), as `list_running` reports it; not part of the attempt's identity.
    created_at: float | None = dataclasses.field(default=None, compare=False)

    @property
    def name(self) -> str:
        return job_name(self.job_id, self.attempt)


@dataclasses.dataclass(frozen=True, slots=True)
class DatasetVolume:
    """A read-only dataset: a PersistentVolumeClaim on the cluster, a directory on this machine.

    The job finds it at `mount_path` (default /data/<name>) and in $DATASET_<NAME>.
    """

    name: str
    claim: str = ""
    local_path: str = ""
    mount_path: str = ""

    @property
    def path(self) -> str:
        return self.mount_path or f"/data/{self.name}"

    @property
    def env_name(self) -> str:
        return "DATASET_" + re.sub(r"[^A-Za-z0-9]", "_", self.name).upper()


@dataclasses.dataclass(frozen=True, slots=True)
class JobSpec:
    """One attempt of a training job, as the dispatcher hands it to a backend.

    `node_names` and `gpu_indices` are the placement the queue policy chose: one entry per node, in rank
    order. `command` is an argv list, never a shell string. `env` is the job's own variables. A job given as a
    `script` has SCRIPT_ARGV as its command: each backend puts the script's text at SCRIPT_PATH, read-only.
    """

    job_id: int
    attempt: int
    image: str
    command: tuple[str, ...]
    gpus_per_node: int
    max_runtime_s: int
    nodes: int = 1
    node_names: tuple[str, ...] = ()
    gpu_indices: tuple[tuple[int, ...], ...] = ()
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    display_name: str = ""
    owner: str = ""
    # The portal user's id: the local backend runs each person's jobs as a uid of their own (JOBS_LOCAL_UID_BASE).
    owner_id: int | None = None
    course: str = ""
    namespace: str = ""
    datasets: tuple[DatasetVolume, ...] = ()
    checkpoint: bool = True
    # A part of one GPU (0 < share < 1, one GPU on one node) where the cluster shares GPUs (JOBS_GPU_SHARING).
    gpu_share: float = 1.0
    # Storage tiers (Kubernetes quantities, "" for none): node-local scratch at /scratch, bulk at /bulk; their sizes
    # are bounded per role (JOBS_STORAGE_LIMITS, jobs.backends.manifests.config_problems).
    scratch: str = ""
    bulk: str = ""
    owner_role: str = ""
    script: str = ""
    # "Run again from this checkpoint": the job whose checkpoint this job starts from (copied into its own before
    # its first attempt: locally a copy, on the cluster a clone of the claim, jobs.backends.manifests).
    resume_from: int | None = None

    @property
    def ref(self) -> JobRef:
        return JobRef(self.job_id, self.attempt, self.namespace)

    @property
    def name(self) -> str:
        return job_name(self.job_id, self.attempt)

    def problems(self) -> list[str]:
        """What is wrong with the spec itself, whatever the backend (empty if nothing)."""
        problems = []
        if self.job_id < 0 or self.attempt < 1:
            problems.append("the job id must not be negative and the attempt starts at 1")
        if not self.command or not all(isinstance(arg, str) for arg in self.command):
            problems.append("the command must be a non-empty list of strings (argv)")
        if self.script and (tuple(self.command) != SCRIPT_ARGV or "\x00" in self.script):
            problems.append(f"a script runs as {' '.join(SCRIPT_ARGV)}, without NUL bytes")
        if self.gpus_per_node < 1 or self.nodes < 1:
            problems.append("a job needs at least one GPU on at least one node")
        if not 0 < self.gpu_share <= 1:
            problems.append("gpu_share must be above 0 and at most 1")
        elif self.gpu_share < 1 and (self.gpus_per_node != 1 or self.nodes != 1):
            problems.append("a part of a GPU is for one GPU on one node only")
        if self.max_runtime_s < 1:
            problems.append("max_runtime_s must be at least 1")
        if self.node_names and len(self.node_names) != self.nodes:
            problems.append(f"{self.nodes} nodes asked for but {len(self.node_names)} assigned")
        if self.gpu_indices and (
            len(self.gpu_indices) != self.nodes or any(len(g) != self.gpus_per_node for g in self.gpu_indices)
        ):
            problems.append("gpu_indices must list gpus_per_node indices for each node")
        for name, value in self.env.items():
            if not isinstance(name, str) or not ENV_NAME.match(name):
                problems.append(f"{name!r} is not a valid environment variable name")
            elif name in RESERVED_ENV or name.startswith("DATASET_"):
                problems.append(f"{name} is set by the portal and may not be overridden")
            elif not isinstance(value, str):
                problems.append(f"the value of {name} must be a string")
        names = [d.name for d in self.datasets]
        if len(names) != len(set(names)):
            problems.append("two datasets have the same name")
        return problems


@dataclasses.dataclass(frozen=True, slots=True)
class PodStatus:
    """One pod (Kubernetes) or rank (local) of an attempt."""

    name: str
    rank: int
    node: str = ""
    phase: str = ""
    exit_code: int | None = None
    reason: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class JobStatus:
    name: str
    phase: Phase
    pods: tuple[PodStatus, ...] = ()
    message: str = ""
    started_at: float | None = None
    finished_at: float | None = None

    @property
    def exit_codes(self) -> tuple[int, ...]:
        return tuple(p.exit_code for p in self.pods if p.exit_code is not None)

    @property
    def finished(self) -> bool:
        return self.phase in ("succeeded", "failed")


@dataclasses.dataclass(frozen=True, slots=True)
class LogPage:
    """A piece of one rank's log: raw bytes (as the job wrote them) and where they lie in the whole log.

    `start`/`end` are byte offsets into the log (None where the backend cannot tell); `size` is the whole log's
    length when known; `truncated` says the cap cut what was asked for (the whole log, N lines, or a range).
    """

    data: bytes = b""
    start: int | None = 0
    end: int | None = 0
    size: int | None = 0
    truncated: bool = False

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


class JobBackend(Protocol):
    name: str

    def create(self, spec: JobSpec) -> JobStatus: ...

    def status(self, ref: JobRef) -> JobStatus: ...

    def delete(self, ref: JobRef, *, grace_s: int | None = None) -> None: ...

    def logs(
        self,
        ref: JobRef,
        *,
        rank: int = 0,
        tail_lines: int | None = None,
        offset: int | None = None,
        limit_bytes: int | None = None,
    ) -> LogPage: ...

    def purge(self, job_id: int) -> None: ...

    def output_roots(self, job_id: int, attempt: int) -> dict[str, str]: ...

    def list_running(self) -> list[JobRef]: ...
