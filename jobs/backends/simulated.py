"""A backend that runs nothing: each attempt only pretends to run, for the whole-portal benchmark.

`bench_portal --job-processes sim` (its default) measures the portal, not the jobs: on the 2-core machine the
sandboxed job processes of the local backend took the cores the portal was being measured on. This backend speaks
the same contract (base.py) with no process at all: an attempt is a small JSON file under
JOBS_LOCAL_DIR/simulated/, so that every process (web, worker, beat) sees the same attempts; it is `pending` for
JOBS_SIMULATED_START_S after create, then `running`, then `succeeded` JOBS_SIMULATED_RUN_S later (never later than
its max_runtime_s). Its log says that the run was simulated and which argv it stood for; it appears once the attempt
runs. A cancelled attempt is `failed` (cancelled), as on the other backends. Never for students: `check --deploy`
refuses it (jobs.E006).
"""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path

from django.conf import settings

from accounts.errors import BackendError
from jobs.backends.base import JobRef, JobSpec, JobStatus, LogPage, PodStatus
from jobs.backends.logs import Ask, last_lines


class SimulatedJobs:
    name = "simulated"

    def __init__(self, root: Path | str | None = None, *, start_s: float | None = None, run_s: float | None = None):
        self.root = Path(root if root is not None else Path(settings.JOBS_LOCAL_DIR) / "simulated")
        self.start_s = settings.JOBS_SIMULATED_START_S if start_s is None else start_s
        self.run_s = settings.JOBS_SIMULATED_RUN_S if run_s is None else run_s

    def _path(self, ref: JobRef) -> Path:
        return self.root / f"{ref.name}.json"

    def _read(self, ref: JobRef) -> dict | None:
        try:
            return json.loads(self._path(ref).read_text())
        except (OSError, ValueError):
            return None

    def _write(self, ref: JobRef, record: dict) -> None:
        path = self._path(ref)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(record))
            os.replace(tmp, path)
        except OSError as exc:
            raise BackendError(f"Could not record the simulated job {ref.name}: {exc}", retryable=True) from exc

    def create(self, spec: JobSpec) -> JobStatus:
        if problems := spec.problems():
            raise BackendError("; ".join(problems), retryable=False)
        if self._read(spec.ref) is None:  # idempotent: a second dispatch finds the first one's attempt
            now = time.time()
            starts = now + self.start_s
            self._write(spec.ref, {
                "created_at": now, "started_at": starts, "finishes_at": starts + min(self.run_s, spec.max_runtime_s),
                "nodes": list(spec.node_names) or [""] * spec.nodes, "argv": list(spec.command), "cancelled_at": None,
            })  # fmt: skip
        return self.status(spec.ref)

    def status(self, ref: JobRef, *, now: float | None = None) -> JobStatus:
        record = self._read(ref)
        if record is None:
            return JobStatus(name=ref.name, phase="missing", message="not created")
        now = time.time() if now is None else now
        started, finishes, cancelled = record["started_at"], record["finishes_at"], record["cancelled_at"]
        ranks = list(enumerate(record["nodes"]))
        if cancelled is not None and cancelled < finishes:
            pods = tuple(PodStatus(f"{ref.name}-{n}", n, node, "Failed", None, "cancelled") for n, node in ranks)
            began = started if started <= cancelled else None
            return JobStatus(ref.name, "failed", pods, "cancelled", began, cancelled)
        if now >= finishes:
            pods = tuple(PodStatus(f"{ref.name}-{n}", n, node, "Succeeded", 0) for n, node in ranks)
            return JobStatus(ref.name, "succeeded", pods, "simulated", started, finishes)
        if now >= started:
            pods = tuple(PodStatus(f"{ref.name}-{n}", n, node, "Running") for n, node in ranks)
            return JobStatus(ref.name, "running", pods, "running (simulated)", started)
        return JobStatus(ref.name, "pending", (), "starting (simulated)")

    def delete(self, ref: JobRef, *, grace_s: int | None = None) -> None:
        record = self._read(ref)
        if record is None or record["cancelled_at"] is not None or time.time() >= record["finishes_at"]:
            return
        self._write(ref, {**record, "cancelled_at": time.time()})

    def logs(
        self,
        ref: JobRef,
        *,
        rank: int = 0,
        tail_lines: int | None = None,
        offset: int | None = None,
        limit_bytes: int | None = None,
    ) -> LogPage:
        record = self._read(ref)
        if record is None or self.status(ref).phase == "pending" or not 0 <= rank < len(record["nodes"]):
            return LogPage()
        whole = f"[simulated run, no process] rank {rank}: {shlex.join(record['argv'])}\n".encode()
        ask = Ask.of(tail_lines, offset, limit_bytes)
        size = len(whole)
        if ask.offset is not None:
            start = min(ask.offset, size)
            data = whole[start : start + ask.take]
            return LogPage(data, start, start + len(data), size, ask.cut(size - start))
        start = max(0, size - ask.take)
        data = whole[start:]
        if ask.tail_lines is None:
            return LogPage(data, start, size, size, ask.cut(size))
        lines, cut = last_lines(data, ask.tail_lines, more_before=start > 0)
        return LogPage(lines, size - len(lines), size, size, cut)

    def purge(self, job_id: int) -> None:
        for path in self.root.glob(f"job-{int(job_id)}-a*.json"):
            path.unlink(missing_ok=True)

    def output_roots(self, job_id: int, attempt: int) -> dict[str, str]:
        return {}

    def list_running(self) -> list[JobRef]:
        running = []
        now = time.time()
        for path in sorted(self.root.glob("job-*-a*.json")):
            job_id, _, attempt = path.name[4:-5].partition("-a")
            if not (job_id.isdigit() and attempt.isdigit()):
                continue
            ref = JobRef(int(job_id), int(attempt))
            record = self._read(ref)
            if record is not None and self.status(ref, now=now).phase in ("pending", "running"):
                running.append(JobRef(ref.job_id, ref.attempt, created_at=record["created_at"]))
        return sorted(running, key=lambda ref: (ref.job_id, ref.attempt))
