"""The files and the user of a local job: who it runs as, what it may be given, how much it may write, and when
its files go. Used by local.py (the backend) and the reconciler (`expire`).

One uid per person. RLIMIT_NPROC counts the processes of a uid, so with one uid for everyone a job holding its
JOBS_LOCAL_MAX_PROCESSES kept everyone else's jobs and notebooks from starting. A portal running as root runs each
person's jobs as JOBS_LOCAL_UID_BASE + their portal user id (gid the same; the hub's local spawner gives their
notebooks the same uid, so the limit is per person), and their work and checkpoint directories belong to that
uid, mode 0700. Why uids and not a pids cgroup per sandbox: uids need no cgroup hierarchy delegated to the portal
(v1 or v2, systemd or not), they also keep one person's files from another's, and the limit is the kernel's own.
Both need root; a portal that is not root cannot change uids: every job keeps the portal's uid in the kernel's eyes
(it is mapped to the person's uid inside bwrap's user namespace, for passwd only), so the process limit is shared
by all of them and the portal. Labs that run the portal unprivileged share it; JOBS_LOCAL_UID_BASE=0 gives the
old single JOBS_LOCAL_UID to everyone.

Disk. The runner adds up what the attempt's work dir and the job's checkpoints hold every few seconds and stops
the attempt past JOBS_DISK_QUOTA (reason disk_quota_exceeded), besides RLIMIT_FSIZE on each file; its /tmp is a
tmpfs of the same size. Not kernel quotas: they need a filesystem mounted with project quotas (prjquota on ext4 or
xfs), which JOBS_LOCAL_DIR rarely is, root to set them, and a loop device per job otherwise, which an unprivileged
portal cannot make. A job may overshoot by what it writes between two measures. Finished attempts' work dirs, and
the checkpoints of jobs that are over, go after JOBS_LOCAL_KEEP_DAYS (`expire`, from the reconciler); logs stay.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings

from accounts.errors import BackendError
from jobs.backends.base import JobSpec, checkpoint_name

# Never given to a job as a dataset: the system's own trees, and the portal's.
PROTECTED_DIRS = ("/etc", "/root", "/proc", "/sys", "/dev", "/run", "/var/run", "/boot")


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def tenant(spec: JobSpec) -> tuple[int, int]:
    """The uid and gid the job runs as: its owner's own (see the module's docstring), else JOBS_LOCAL_UID."""
    base, count = settings.JOBS_LOCAL_UID_BASE, settings.JOBS_LOCAL_UID_COUNT
    if not base or spec.owner_id is None:
        return settings.JOBS_LOCAL_UID, settings.JOBS_LOCAL_GID
    if not 0 < spec.owner_id < count:
        raise BackendError(
            f"Job {spec.name} cannot run here: its owner's id {spec.owner_id} is past the {count} uids of "
            "JOBS_LOCAL_UID_COUNT.",
            retryable=False,
        )
    return base + spec.owner_id, base + spec.owner_id


def give_to_job(uid: int, gid: int, *paths: Path | None) -> None:
    """The job's writable dirs are its own, 0700 (a portal running as root runs it as uid, see tenant); a
    checkpoint dir another uid held before (JOBS_LOCAL_UID_BASE changed) is given over whole."""
    for path in paths:
        if path is None:
            continue
        os.chmod(path, 0o700)
        if os.geteuid() != 0 or os.lstat(path).st_uid == uid:
            continue
        os.chown(path, uid, gid)
        for _, dirnames, filenames, dirfd in os.fwalk(path, follow_symlinks=False):
            for name in dirnames + filenames:
                with contextlib.suppress(OSError):
                    os.chown(name, uid, gid, dir_fd=dirfd, follow_symlinks=False)


def dataset_problems(spec: JobSpec, root: Path) -> list[str]:
    """A dataset's directory is bound read-only: never the system's or the portal's own (an admin's mistake)."""
    protected = [*PROTECTED_DIRS, str(settings.BASE_DIR), str(settings.VAR_DIR), str(root)]
    protected = {os.path.realpath(path) for path in protected}
    # The course datasets the portal itself made (jobs.datasets) live under DATASETS_LOCAL_ROOT, by default inside
    # VAR_DIR: those are given, the rest of VAR_DIR never.
    made = os.path.realpath(settings.DATASETS_LOCAL_ROOT)
    problems = []
    for dataset in spec.datasets:
        path = dataset.local_path or dataset.path
        if not os.path.isabs(path):
            continue  # not bound: only named in $DATASET_<NAME>
        real = os.path.realpath(path)
        if os.path.normpath(path) == path and real.startswith(f"{made}/") and made not in protected:
            continue
        if os.path.normpath(path) != path or any(
            real == other or f"{real}/".startswith(f"{other}/") or f"{other}/".startswith(f"{real.rstrip('/')}/")
            for other in protected
        ):
            problems.append(f"dataset {dataset.name}'s directory {path} may not be given to a job")
    return problems


def checkpoint_jobs(root: Path) -> dict[int, float]:
    """The jobs that have checkpoints here, each with when its directory last changed (a Unix time)."""
    held = {}
    for path in root.glob("checkpoints/job-*-checkpoint"):
        number = path.name[4 : -len("-checkpoint")]
        with contextlib.suppress(OSError):
            if number.isdigit():
                held[int(number)] = path.stat().st_mtime
    return held


def expire(root: Path, *, before: float, jobs_over: Iterable[int] = (), dry_run: bool = False) -> list[Path]:
    """Remove the work dirs of attempts that finished before `before` (a Unix time; their logs and exit status
    stay for the job's page) and the checkpoints of `jobs_over` (jobs over for good). Returns what went."""
    gone = []
    for directory in sorted(root.glob("job-*-a*")):
        result = _read_json(directory / "exit.json")
        if result is None or not (directory / "work").exists():
            continue
        with contextlib.suppress(OSError):
            finished = result.get("finished_at") or (directory / "exit.json").stat().st_mtime
            if finished < before:
                gone.append(directory / "work")
    gone += [path for job_id in sorted(jobs_over) if (path := root / "checkpoints" / checkpoint_name(job_id)).exists()]
    if not dry_run:
        for path in gone:
            shutil.rmtree(path, ignore_errors=True)
    return gone
