"""Training jobs (jobs/): where they run, their sandbox and logs, preemption and fair share, the Kubernetes Job
details, images and runtimes. The scheduling pass and the follow loop are scheduled in workers.py."""

from __future__ import annotations

from pathlib import Path

from accounts.env import envchoice, envint, envlist, envmatch, envstr
from portal.settings.base import DEBUG, VAR_DIR

# --- Training jobs
# Where jobs run: subprocesses on this machine (local: the run command, the demo, tests) or batch/v1 Jobs.
# Outside DEBUG the cluster, unless SINGLE_MACHINE_LAB (see "Where user code runs" in lab.py).
JOBS_BACKEND = envchoice("JOBS_BACKEND", "local" if DEBUG else "kubernetes", ("local", "kubernetes", "simulated"))
# `simulated` runs nothing (bench_portal's default: the portal measured without job processes on its cores): an attempt
# is pending for JOBS_SIMULATED_START_S, runs for JOBS_SIMULATED_RUN_S (at most its max runtime), then succeeds.
JOBS_SIMULATED_START_S = envint("JOBS_SIMULATED_START_S", 1, minimum=0)
JOBS_SIMULATED_RUN_S = envint("JOBS_SIMULATED_RUN_S", 2, minimum=0)
# Local jobs run sandboxed (jobs/backends/sandbox.py: bubblewrap, no network, none of the portal's files), with each
# rank's log capped at JOBS_LOG_MAX_BYTES and at most JOBS_LOCAL_MAX_PROCESSES processes of their user.
# When the portal runs as root, each person's jobs (and local notebooks) run as a uid of their own:
# JOBS_LOCAL_UID_BASE + their portal user id, below JOBS_LOCAL_UID_BASE + JOBS_LOCAL_UID_COUNT (keep that range free
# of the machine's users and subuid ranges; jobs.checks says when it passes uid_t); 0 as the base, or a job without an
# owner, runs as JOBS_LOCAL_UID/GID.
JOBS_LOCAL_UID = envint("JOBS_LOCAL_UID", 65534, minimum=1)
JOBS_LOCAL_GID = envint("JOBS_LOCAL_GID", 65534, minimum=1)
JOBS_LOCAL_UID_BASE = envint("JOBS_LOCAL_UID_BASE", 1_000_000_000, minimum=0)
JOBS_LOCAL_UID_COUNT = envint("JOBS_LOCAL_UID_COUNT", 1_000_000, minimum=1)
JOBS_LOCAL_MAX_PROCESSES = envint("JOBS_LOCAL_MAX_PROCESSES", 4096, minimum=16)
# What a local job's work dir and checkpoints may hold on disk together (a quantity: "20Gi", "500Mi"; 0: no limit):
# past it the job is stopped (disk_quota_exceeded). Its /tmp (memory) is as large.
JOBS_DISK_QUOTA = envmatch(
    "JOBS_DISK_QUOTA", "20Gi", r"\d+(\.\d+)?([KMGTP]i?)?", "must be a quantity such as 20Gi or 500Mi."
)
# Finished attempts' work dirs and the checkpoints of jobs that are over are removed after this many days (the
# reconciler); their logs stay.
JOBS_LOCAL_KEEP_DAYS = envint("JOBS_LOCAL_KEEP_DAYS", 7, minimum=1)
# A job's outputs and checkpoint on its page (jobs/outputs.py): its owner is told this many days before they go; a
# listing shows at most LIST_MAX files, a download serves at most DOWNLOAD_MAX_BYTES.
JOBS_OUTPUTS_NOTICE_DAYS = envint("JOBS_OUTPUTS_NOTICE_DAYS", 2, minimum=0)
JOBS_OUTPUTS_LIST_MAX = envint("JOBS_OUTPUTS_LIST_MAX", 2000, minimum=10, maximum=100_000)
JOBS_OUTPUTS_DOWNLOAD_MAX_BYTES = envint("JOBS_OUTPUTS_DOWNLOAD_MAX_BYTES", 2 * 1024**3, minimum=1024)
# Datasets and course shares (jobs/datasets.py): a teacher's course datasets live locally under DATASETS_LOCAL_ROOT;
# a notebook mounts at most DATASETS_PER_NOTEBOOK_MAX of those its person may use.
DATASETS_LOCAL_ROOT = Path(envstr("DATASETS_LOCAL_ROOT", str(VAR_DIR / "datasets")))
DATASETS_PER_NOTEBOOK_MAX = envint("DATASETS_PER_NOTEBOOK_MAX", 16, minimum=0, maximum=64)
# The usage pages' storage figures (jobs/storage.py) are measured this often.
JOBS_STORAGE_MEASURE_S = envint("JOBS_STORAGE_MEASURE_S", 3600, minimum=60)
# Idle GPUs in running jobs (jobs/idle.py): GPUs all under IDLE_GPU_PCT for WARN_S get the owner a notice, and for
# ACTION_S the job is cancelled or requeued (ACTION: cancel, requeue or off); a job submitted with an
# idle_ok_reason is exempt. Missing or stale telemetry counts as busy.
JOBS_IDLE_GPU_PCT = envint("JOBS_IDLE_GPU_PCT", 5, minimum=0, maximum=100)
JOBS_IDLE_GPU_WARN_S = envint("JOBS_IDLE_GPU_WARN_S", 3600, minimum=60)
JOBS_IDLE_GPU_ACTION_S = envint("JOBS_IDLE_GPU_ACTION_S", 2 * 3600, minimum=60)
JOBS_IDLE_GPU_ACTION = envchoice("JOBS_IDLE_GPU_ACTION", "cancel", ("cancel", "requeue", "off"))
JOBS_LOG_MAX_BYTES = envint("JOBS_LOG_MAX_BYTES", 64 * 1024 * 1024, minimum=1024)
# One answer of the logs API (and the job page) holds at most this much of a log; more is paged by byte offsets.
# From Kubernetes the portal also reads no further than JOBS_LOG_MAX_BYTES into a pod's log per request.
JOBS_LOG_RESPONSE_MAX_BYTES = envint("JOBS_LOG_RESPONSE_MAX_BYTES", 1024 * 1024, minimum=1024)
# Following a log (?follow=1, jobs/log_follow.py): a read every POLL_MS, the job's state every STATE_MS, and a stream
# ends after MAX_S at the latest (the client resumes with ?since=).
JOBS_LOG_FOLLOW_POLL_S = envint("JOBS_LOG_FOLLOW_POLL_MS", 500, minimum=50, maximum=10_000) / 1000
JOBS_LOG_FOLLOW_STATE_S = envint("JOBS_LOG_FOLLOW_STATE_MS", 2000, minimum=100, maximum=60_000) / 1000
JOBS_LOG_FOLLOW_MAX_S = envint("JOBS_LOG_FOLLOW_MAX_S", 3600, minimum=1, maximum=24 * 3600)
JOBS_NAMESPACE = envstr("JOBS_NAMESPACE", "gpu-lab-jobs")
# Local backend: one directory per job attempt (pid, exit status, log) and per job (checkpoints).
JOBS_LOCAL_DIR = Path(envstr("JOBS_LOCAL_DIR", str(VAR_DIR / "jobs")))
# SIGTERM, then this long to write a checkpoint, then SIGKILL: for preemption and cancel alike.
JOBS_STOP_GRACE_S = envint("JOBS_STOP_GRACE_S", 120, minimum=0, maximum=3600)
JOBS_PREEMPT_GRACE_S = JOBS_STOP_GRACE_S
# Work younger than this is not preempted for fair share or priority (Slurm's PreemptExemptTime).
JOBS_PREEMPT_EXEMPT_S = envint("JOBS_PREEMPT_EXEMPT_S", 600, minimum=0)
# Usage counts half after this long in the fair-share factor (Slurm's default: 7 days).
JOBS_FAIRSHARE_HALF_LIFE_S = envint("JOBS_FAIRSHARE_HALF_LIFE_S", 7 * 24 * 3600, minimum=3600)
JOBS_SCHEDULE_INTERVAL_S = envint("JOBS_SCHEDULE_INTERVAL_S", 30, minimum=5)
# Kubernetes Job details: finished Jobs are garbage-collected after the TTL; the portal retries by attempt.
JOBS_TTL_AFTER_FINISHED_S = envint("JOBS_TTL_AFTER_FINISHED_S", 24 * 3600, minimum=0)
JOBS_BACKOFF_LIMIT = envint("JOBS_BACKOFF_LIMIT", 0, minimum=0, maximum=10)
JOBS_RUN_AS_USER = envint("JOBS_RUN_AS_USER", 1000, minimum=1)
JOBS_RUN_AS_GROUP = envint("JOBS_RUN_AS_GROUP", 1000, minimum=1)
JOBS_CPU_PER_GPU = envstr("JOBS_CPU_PER_GPU", "4")
JOBS_MEMORY_PER_GPU = envstr("JOBS_MEMORY_PER_GPU", "24Gi")
JOBS_SHM_SIZE = envstr("JOBS_SHM_SIZE", "8Gi")
# Taint keys of the GPU nodes that job pods tolerate (operator Exists).
JOBS_TOLERATIONS = envlist("JOBS_TOLERATIONS", ["nvidia.com/gpu"])
# Each job's writable checkpoint claim (empty class: the cluster's default); datasets are existing read-only claims.
JOBS_CHECKPOINT_STORAGE_CLASS = envstr("JOBS_CHECKPOINT_STORAGE_CLASS", "")
JOBS_CHECKPOINT_SIZE = envstr("JOBS_CHECKPOINT_SIZE", "20Gi")
# The node pool's network for multi-node jobs (torchrun rendezvous, NCCL); empty means NCCL picks.
JOBS_MASTER_PORT = envint("JOBS_MASTER_PORT", 29500, minimum=1024, maximum=65535)
JOBS_NCCL_SOCKET_IFNAME = envstr("JOBS_NCCL_SOCKET_IFNAME", "")
JOBS_NCCL_IB_HCA = envstr("JOBS_NCCL_IB_HCA", "")
# Images every job and notebook profile may use besides the admin console's allow-list (an exact reference, or a
# pattern with *): one allow-list for both (labs/images.py).
JOBS_IMAGE_ALLOW = envlist(
    "JOBS_IMAGE_ALLOW", ["pytorch/pytorch:*", "nvcr.io/nvidia/pytorch:*", "python:3.12-slim", "quay.io/jupyter/*"]
)
# The largest script a job may be given instead of a command (bytes, UTF-8); on the cluster it travels in a pod
# annotation, and all of a pod's annotations together hold at most 256 KiB.
JOBS_SCRIPT_MAX_BYTES = envint("JOBS_SCRIPT_MAX_BYTES", 64 * 1024, minimum=1024, maximum=200 * 1024)
# Bounds on a job's max_runtime_s (the policy plans with it; the backend kills the job when it is reached).
JOBS_MIN_RUNTIME_S = envint("JOBS_MIN_RUNTIME_S", 60, minimum=1)
JOBS_MAX_RUNTIME_S = envint("JOBS_MAX_RUNTIME_S", 7 * 24 * 3600, minimum=60)
# How often running jobs' status is read from the backend (start, finish, stop).
JOBS_FOLLOW_INTERVAL_S = envint("JOBS_FOLLOW_INTERVAL_S", 5, minimum=1)
# An attempt whose Job (or process) vanished under it is queued again as the next attempt, as a preemption is, while
# the job is preemptible and below this many attempts; otherwise it fails with the reason (0: always fail).
JOBS_LOST_MAX_ATTEMPTS = envint("JOBS_LOST_MAX_ATTEMPTS", 5, minimum=0, maximum=100)
