"""Training jobs as processes on this machine: for the run command, the demo and the tests.

Each attempt gets a directory under settings.JOBS_LOCAL_DIR named like the Kubernetes Job (`job-42-a1`),
and a runner process (local_runner.py) that outlives the worker which started it. Everything the backend
knows is in that directory (spec, pids, exit status, logs), so a restarted worker picks up where the last
one stopped, and a dispatch that runs twice never starts the attempt twice: the runner holds a lock on
the directory for its whole life and refuses to run an attempt that is running or finished.

Each rank runs the job's argv (never a shell) in a bubblewrap sandbox (sandbox.py): as an unprivileged user,
seeing only the system's programs, its Python, its work dir and checkpoints (writable) and its datasets
(read-only), never the portal's files, processes, database or sockets; with a loopback of its own per attempt
(the torchrun rendezvous variables on 127.0.0.1 work between its ranks), a small environment of its own (not the
worker's: no secrets leak; applied only in the sandbox's last, unprivileged exec), a passwd entry, HOME, USER and
LOGNAME, CUDA_VISIBLE_DEVICES set to the GPUs the policy assigned it, a seccomp filter, rlimits on CPU time,
memory, processes and file size, and its output in rank-N.log, capped at JOBS_LOG_MAX_BYTES (read back a page at
a time: logs.py). Without bwrap a job is refused, never run unsandboxed. The container image is recorded but not
used.

Who a job runs as (one uid per person), what it may be bound to, its disk quota and when its files go:
local_files.py.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from django.conf import settings

from accounts.errors import BackendError
from jobs.backends import local_files, outputs, sandbox
from jobs.backends.base import SCRIPT_PATH, JobRef, JobSpec, JobStatus, LogPage, PodStatus, checkpoint_name
from jobs.backends.local_runner import group_alive
from jobs.backends.logs import Ask, last_lines

RUNNER = Path(__file__).with_name("local_runner.py")
ACK_TIMEOUT_S = 15.0


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalJobs:
    name = "local"
    disk_check_s = 5.0

    def __init__(self, root: Path | str | None = None, grace_s: int | None = None) -> None:
        self.root = Path(root if root is not None else settings.JOBS_LOCAL_DIR)
        self.grace_s = settings.JOBS_STOP_GRACE_S if grace_s is None else grace_s

    def _dir(self, ref: JobRef) -> Path:
        return self.root / ref.name

    def checkpoint_dir(self, job_id: int) -> Path:
        return self.root / "checkpoints" / checkpoint_name(job_id)

    @contextlib.contextmanager
    def _launch_lock(self, directory: Path) -> Iterator[None]:
        with open(directory / "launch.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield

    @staticmethod
    def _runner_alive(directory: Path) -> bool:
        try:
            handle = open(directory / "run.lock", "a")  # noqa: SIM115
        except OSError:
            return False
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
            return False

    # --- create -------------------------------------------------------------------------------

    def create(self, spec: JobSpec) -> JobStatus:
        problems = spec.problems()
        if problems:
            raise BackendError(f"Job {spec.name} cannot be created: {'; '.join(problems)}.", retryable=False)
        why = sandbox.missing()
        if why is not None:
            raise BackendError(f"Job {spec.name} cannot run on this machine: {why}", retryable=False)
        uid, gid = local_files.tenant(spec)
        problems = local_files.dataset_problems(spec, self.root)
        if problems:
            raise BackendError(f"Job {spec.name} cannot be created: {'; '.join(problems)}.", retryable=False)
        directory = self._dir(spec.ref)
        try:
            (directory / "work").mkdir(parents=True, exist_ok=True)
            if spec.checkpoint:
                self.checkpoint_dir(spec.job_id).mkdir(parents=True, exist_ok=True)
                self._resume(spec)
            checkpoints = self.checkpoint_dir(spec.job_id) if spec.checkpoint else None
            local_files.give_to_job(uid, gid, directory / "work", checkpoints)
            with self._launch_lock(directory):
                if (directory / "exit.json").exists() or self._runner_alive(directory):
                    return self.status(spec.ref)
                if (directory / "launched").exists():
                    return self.status(spec.ref)  # it ran and its runner was lost: never run an attempt twice
                _write_json(directory / "spec.json", self._runner_spec(spec, directory, uid=uid, gid=gid))
                pid = self._spawn(directory)
                (directory / "launched").write_text(str(pid))
        except OSError as exc:
            raise BackendError(f"Could not start job {spec.name} here: {exc}", retryable=True) from exc
        return self.status(spec.ref)

    def _resume(self, spec: JobSpec) -> None:
        """A job run again from another's checkpoint starts with a copy of it (its regular files and directories
        only, up to JOBS_CHECKPOINT_SIZE), made once: before its first attempt, into its empty checkpoint dir."""
        target = self.checkpoint_dir(spec.job_id)
        if not spec.resume_from or spec.attempt != 1 or any(target.iterdir()):
            return
        source = self.checkpoint_dir(spec.resume_from)
        outputs.copy_tree(source, target, max_bytes=sandbox.quantity(settings.JOBS_CHECKPOINT_SIZE))

    def output_roots(self, job_id: int, attempt: int) -> dict[str, str]:
        """What the job's page lists: its checkpoints and the work dir of its current attempt."""
        return {
            "checkpoint": str(self.checkpoint_dir(job_id)),
            "work": str(self._dir(JobRef(job_id, attempt)) / "work"),
        }

    def _limits(self, spec: JobSpec) -> dict:
        """rlimits of each rank, from the cluster's per-GPU shares: CPU seconds over its runtime, memory, files."""
        share = settings.JOBS_CPU_PER_GPU.strip()
        cpus = int(share[:-1]) / 1000 if share.endswith("m") else float(share)
        return {
            "cpu": int(spec.max_runtime_s * cpus * spec.gpus_per_node) + 60,
            "data": sandbox.quantity(settings.JOBS_MEMORY_PER_GPU) * spec.gpus_per_node,
            "fsize": sandbox.quantity(settings.JOBS_CHECKPOINT_SIZE),
            "nproc": settings.JOBS_LOCAL_MAX_PROCESSES,
            "core": 0,
        }

    @staticmethod
    def program_problem(argv: tuple[str, ...], env: dict[str, str]) -> str | None:
        """Why the runner would not find argv[0] (as it looks, on the job's PATH); None when it would."""
        path = env.get("PATH") or os.pathsep.join([str(Path(sys.executable).parent), os.defpath.lstrip(os.pathsep)])
        if shutil.which(argv[0], path=path) is None:
            return f"cannot start {argv[0]!r}: there is no such program on this machine's job PATH"
        return None

    def _runner_spec(self, spec: JobSpec, directory: Path, *, uid: int | None = None, gid: int | None = None) -> dict:
        if uid is None or gid is None:
            uid, gid = local_files.tenant(spec)
        user = sandbox.Identity.user_name(spec.owner or "job")
        port = _free_port() if spec.nodes > 1 else int(settings.JOBS_MASTER_PORT)
        quota = sandbox.quantity(settings.JOBS_DISK_QUOTA)
        base = {
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.defpath.lstrip(os.pathsep)]),
            "HOME": str(directory / "work"),
            "USER": user,
            "LOGNAME": user,
            "TMPDIR": str(directory / "work"),
            "LANG": "C.UTF-8",
            "PYTHONUNBUFFERED": "1",
            **spec.env,
            "PORTAL_JOB_ID": str(spec.job_id),
            "PORTAL_ATTEMPT": str(spec.attempt),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "WORLD_SIZE": str(spec.nodes),
            "NNODES": str(spec.nodes),
            "NPROC_PER_NODE": str(spec.gpus_per_node),
        }
        writable, readable = [str(directory / "work")], []
        if spec.checkpoint:
            base["CHECKPOINT_DIR"] = str(self.checkpoint_dir(spec.job_id))
            writable.append(base["CHECKPOINT_DIR"])
        for dataset in spec.datasets:
            base[dataset.env_name] = dataset.local_path or dataset.path
            if os.path.isabs(base[dataset.env_name]):
                readable.append(base[dataset.env_name])
        ranks = []
        for rank in range(spec.nodes):
            gpus = spec.gpu_indices[rank] if spec.gpu_indices else ()
            env = {**base, "NODE_RANK": str(rank), "CUDA_VISIBLE_DEVICES": ",".join(str(g) for g in gpus)}
            ranks.append({"rank": rank, "node": spec.node_names[rank] if spec.node_names else "", "env": env})
        return {
            "argv": list(spec.command),
            # A script: made read-only in the sandbox at SCRIPT_PATH, where the command (SCRIPT_ARGV) reads it.
            "files": {SCRIPT_PATH: spec.script} if spec.script else {},
            "image": spec.image,
            "cwd": str(directory / "work"),
            "max_runtime_s": spec.max_runtime_s,
            "grace_s": self.grace_s,
            "ranks": ranks,
            "log_max_bytes": settings.JOBS_LOG_MAX_BYTES,
            "sandbox": {
                "uid": uid,
                "gid": gid,
                "user": user,
                "home": str(directory / "work"),
                "writable": writable,
                "readable": readable,
                "limits": self._limits(spec),
                "disk_quota": quota,
                "disk_check_s": self.disk_check_s,
                "tmp_size": quota,
            },
        }

    def _spawn(self, directory: Path, *args: str) -> int:
        """Start a runner and wait for it to say it holds the attempt ("ok"), or that one does or did."""
        with open(directory / "runner.log", "ab") as errors:
            proc = subprocess.Popen(  # noqa: S603 - our own runner script, argv
                [sys.executable, str(RUNNER), str(directory), *args],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=errors,
                # The fixed PATH of the processes with rights: it finds a bwrap in /usr/local/bin too (os.defpath,
                # /bin:/usr/bin, did not: the runner said bwrap was missing on the GPU machine).
                env={"PATH": sandbox.HOST_PATH, "LANG": "C.UTF-8"},
                close_fds=True,
            )
        try:
            ready, _, _ = select.select([proc.stdout], [], [], ACK_TIMEOUT_S)
            answer = proc.stdout.readline().decode().strip() if ready else ""
        finally:
            proc.stdout.close()
            proc.wait(timeout=ACK_TIMEOUT_S)
        if answer not in ("ok", "busy", "done"):
            raise BackendError(f"The local runner of {directory.name} did not start (see runner.log).", retryable=True)
        return proc.pid

    # --- status -------------------------------------------------------------------------------

    def status(self, ref: JobRef) -> JobStatus:
        directory = self._dir(ref)
        spec = _read_json(directory / "spec.json")
        if spec is None:
            return JobStatus(name=ref.name, phase="missing", message="not created")
        state = _read_json(directory / "state.json") or {}
        pids = {rank["rank"]: rank["pid"] for rank in state.get("ranks", [])}
        result = _read_json(directory / "exit.json")
        if result is not None:
            codes = result.get("exit_codes") or []
            pods = tuple(
                PodStatus(
                    name=f"{ref.name}-{rank['rank']}",
                    rank=rank["rank"],
                    node=rank["node"],
                    phase="Succeeded" if n < len(codes) and codes[n] == 0 else "Failed",
                    exit_code=codes[n] if n < len(codes) else None,
                    reason=result.get("reason", ""),
                )
                for n, rank in enumerate(spec["ranks"])
            )
            return JobStatus(
                name=ref.name,
                phase=result["phase"],
                pods=pods,
                message=result.get("message", ""),
                started_at=result.get("started_at"),
                finished_at=result.get("finished_at"),
            )
        alive = self._runner_alive(directory)
        if not alive and not (directory / "launched").exists():
            return JobStatus(name=ref.name, phase="missing", message="not started (a dispatch was interrupted)")
        phase = "running" if state else "pending"
        message = "running" if state else "starting"
        if not alive:
            if not any(group_alive(rank["pgid"]) for rank in state.get("ranks", [])):
                return JobStatus(name=ref.name, phase="failed", message="the local runner was lost")
            message = "running, but its runner was lost (delete it to stop it)"
        pods = tuple(
            PodStatus(name=f"{ref.name}-{rank['rank']}", rank=rank["rank"], node=rank["node"], phase="Running")
            for rank in spec["ranks"]
            if rank["rank"] in pids
        )
        return JobStatus(name=ref.name, phase=phase, pods=pods, message=message, started_at=state.get("started_at"))

    def list_running(self) -> list[JobRef]:
        """Every attempt under JOBS_LOCAL_DIR that was launched (or is being) and has not finished."""
        running = []
        for directory in sorted(self.root.glob("job-*-a*")):
            job_id, _, attempt = directory.name[4:].partition("-a")
            if not (job_id.isdigit() and attempt.isdigit()) or (directory / "exit.json").exists():
                continue
            ref = JobRef(int(job_id), int(attempt))
            if self.status(ref).phase not in ("pending", "running"):
                continue
            try:
                created = (directory / "spec.json").stat().st_mtime
            except OSError:
                continue
            running.append(JobRef(ref.job_id, ref.attempt, created_at=created))
        return sorted(running, key=lambda ref: (ref.job_id, ref.attempt))

    # --- delete, logs, purge --------------------------------------------------------------------

    def delete(self, ref: JobRef, *, grace_s: int | None = None) -> None:
        """Cancel: SIGTERM to every rank, SIGKILL after the grace period. The directory stays, for the logs."""
        directory = self._dir(ref)
        if not (directory / "spec.json").exists():
            return
        grace = self.grace_s if grace_s is None else grace_s
        try:
            with self._launch_lock(directory):
                if (directory / "exit.json").exists():
                    return
                _write_json(directory / "stop", {"grace_s": grace})
                if self._runner_alive(directory):
                    return
                if not (directory / "launched").exists():
                    _write_json(
                        directory / "exit.json",
                        {"phase": "failed", "reason": "cancelled", "message": "cancelled before it started",
                         "exit_codes": [], "started_at": None, "finished_at": None},
                    )  # fmt: skip
                    return
                self._spawn(directory, "--reap")
        except OSError as exc:
            raise BackendError(f"Could not stop job {ref.name}: {exc}", retryable=True) from exc

    def logs(
        self,
        ref: JobRef,
        *,
        rank: int = 0,
        tail_lines: int | None = None,
        offset: int | None = None,
        limit_bytes: int | None = None,
    ) -> LogPage:
        """A page of rank-N.log, read by seeking: never more than JOBS_LOG_RESPONSE_MAX_BYTES in memory."""
        ask = Ask.of(tail_lines, offset, limit_bytes)
        path = self._dir(ref) / f"rank-{int(rank)}.log"
        try:
            with open(path, "rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                if ask.offset is not None:
                    start = min(ask.offset, size)
                    handle.seek(start)
                    data = handle.read(ask.take)
                    return LogPage(data, start, start + len(data), size, ask.cut(size - start))
                start = max(0, size - ask.take)
                handle.seek(start)
                data = handle.read(ask.take)
        except FileNotFoundError:
            return LogPage()
        except OSError as exc:
            raise BackendError(f"Could not read the log of {ref.name}: {exc}", retryable=True) from exc
        if ask.tail_lines is None:
            return LogPage(data, start, start + len(data), size, ask.cut(size))
        lines, cut = last_lines(data, ask.tail_lines, more_before=start > 0)
        end = start + len(data)
        return LogPage(lines, end - len(lines), end, size, cut)

    def checkpoint_jobs(self) -> dict[int, float]:
        return local_files.checkpoint_jobs(self.root)

    def expire(self, *, before: float, jobs_over: Iterable[int] = (), dry_run: bool = False) -> list[Path]:
        return local_files.expire(self.root, before=before, jobs_over=jobs_over, dry_run=dry_run)

    def purge(self, job_id: int) -> None:
        """Drop the job's checkpoints and the directories of its finished attempts."""
        shutil.rmtree(self.checkpoint_dir(job_id), ignore_errors=True)
        for directory in self.root.glob(f"job-{int(job_id)}-a*"):
            if (directory / "exit.json").exists():
                shutil.rmtree(directory, ignore_errors=True)
