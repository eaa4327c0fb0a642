"""Replay a job trace through the queue policy as a discrete-event simulation.

The simulation calls the very functions the portal's scheduling pass calls (`jobs.policy.schedule`, or
`schedule_fifo` for the baseline) with the same dataclasses, at every event: a submission, a job ending, a
preempted job letting go of its GPUs, and a tick every `tick_s` while jobs wait (the Celery beat tick).

What the model assumes, and why:
- The policy never sees a job's true duration. A job's `max_runtime_s` is the user's estimate: its true
  duration rounded up to the next of 1 h, 4 h, 24 h and 7 d, beyond 7 d the next whole week (traces.py).
  Users pick a round limit safely above what they expect, and most limits are far above the real run time
  (a 70 s job asks for an hour), as in real clusters. Jobs never run past their estimate.
- The lab: `gpus` GPUs on nodes of `gpus_per_node` each (the lab: one RTX 4090 per node). A trace job of k
  GPUs asks for k GPUs on one node when it fits on one, else for whole nodes (k / gpus_per_node of them):
  on one-GPU nodes a k-GPU job is a k-node job, as the trace README's reference FIFO replay assumes.
- Preemption: the victim gets SIGTERM and `preempt_grace_s` to write a checkpoint, holding its GPUs for
  the whole grace period. With `checkpoint` (the default) it keeps the work done so far and pays
  `restart_overhead_s` when it resumes; without, it starts over. A job whose work ends within the grace
  period just finishes.
- Wait is all the time a job spends queued, over all its attempts. JCT is submission to completion.
  Slowdown is bounded slowdown: JCT / max(duration, `slowdown_floor_s`), at least 1.
- Utilisation is GPU-time held by jobs (grace periods and restarts included) within the trace's window,
  from the first to the last submission, over the lab's GPU-time in that window.
- Runtime predictions (`predict`, the default): the trace has no commands, so a job's "same work" is its
  user's jobs with the same GPU count and the same limit asked (the limit is part of the request the policy
  sees, as the image and command are in the lab): the run times of those that had FINISHED in the replay
  before it was submitted, nothing later (no peeking), read by `jobs.policy.runtime.predict_runtime` as the
  portal reads a person's past jobs. A resumed job expects what is left of its prediction.
- ETAs: every job's estimated start in the pass at its submission (what its page would show), against its
  first start; jobs that started in that pass did not wait and are not counted.
- Idle GPU-hours while a fitting job waited: for every stretch of time, the GPUs no job holds, counted
  when some waiting job (not held by a quota or waiting for its reservation) would fit on the free GPUs
  right now. GPUs set aside for a job that starts when a preempted job lets go count as idle.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
from typing import Literal

from bench.figures import SimResult, eta_figures, jain_index, percentile
from bench.traces import ESTIMATE_STEPS_S, TRACE_COLUMNS, TraceError, TraceJob, estimate_max_runtime, load_trace
from jobs.policy import (
    ClusterState,
    Node,
    PassResult,
    PolicyConfig,
    QueuedJob,
    RunningJob,
    UsageMeter,
    schedule,
    schedule_fifo,
)
from jobs.policy.runtime import expected_total, predict_runtime

PolicyName = Literal["fifo", "portal"]


@dataclasses.dataclass(frozen=True)
class SimConfig:
    gpus: int = 40
    gpus_per_node: int = 1
    policy: PolicyName = "portal"
    tick_s: float = 60.0
    restart_overhead_s: float = 60.0
    checkpoint: bool = True
    slowdown_floor_s: float = 10.0
    predict: bool = True
    policy_config: PolicyConfig = dataclasses.field(default_factory=PolicyConfig)

    @property
    def nodes(self) -> int:
        return max(self.gpus // self.gpus_per_node, 1)


class _Job:
    __slots__ = (
        "trace", "max_runtime", "nodes", "gpus_per_node", "done", "attempt", "queued_since", "waited",
        "first_start", "end", "attempt_start", "overhead", "placements", "version", "queued", "running",
        "preemptions", "expected", "eta", "planned",
    )  # fmt: skip

    def __init__(self, trace: TraceJob, gpus_per_node: int) -> None:
        self.trace = trace
        self.max_runtime = estimate_max_runtime(trace.duration_s)
        if trace.gpus <= gpus_per_node:
            self.nodes, self.gpus_per_node = 1, trace.gpus
        else:
            self.nodes, self.gpus_per_node = math.ceil(trace.gpus / gpus_per_node), gpus_per_node
        self.done = 0.0
        self.attempt = 1
        self.queued_since = trace.submit_s
        self.waited = 0.0
        self.first_start: float | None = None
        self.end: float | None = None
        self.attempt_start = 0.0
        self.overhead = 0.0
        self.placements: tuple = ()
        self.version = 0
        self.queued: QueuedJob | None = None
        self.running: RunningJob | None = None
        self.preemptions = 0
        self.expected: float | None = None
        self.eta: float | None = None
        self.planned = False

    @property
    def total_gpus(self) -> int:
        return self.nodes * self.gpus_per_node


SUBMIT, FINISH, RELEASE, TICK = 0, 1, 2, 3


class Simulation:
    def __init__(self, trace: list[TraceJob], config: SimConfig) -> None:
        if not trace:
            raise TraceError("The trace has no jobs.")
        self.config = config
        self.jobs = [_Job(t, config.gpus_per_node) for t in trace]
        too_big = [j.trace.job_id for j in self.jobs if j.nodes > config.nodes]
        if too_big:
            raise TraceError(f"{len(too_big)} jobs need more GPUs than the lab has (first: {too_big[0]}).")
        self.names = [f"node{i + 1:03d}" for i in range(config.nodes)]
        self.free: list[set[int]] = [set(range(config.gpus_per_node)) for _ in self.names]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.queue: dict[str, _Job] = {}
        self.running: dict[str, _Job] = {}
        self.stopping: dict[str, _Job] = {}
        self.events: list[tuple[float, int, int, _Job | None, int]] = []
        self.seq = 0
        self.meter = UsageMeter(config.policy_config.half_life_s)
        self.window = (trace[0].submit_s, max(t.submit_s for t in trace))
        self.busy_s = 0.0
        self.idle_waiting_s = 0.0
        self.held = 0
        self.fits_waiting = False
        self.tick_pending = False
        self.passes = 0
        self.pass_s = 0.0
        self.preemptions = 0
        # Run times of the jobs that finished so far per (user, GPUs, limit), oldest first; jobs submitted now.
        self.history: dict[tuple[str, int, float], list[float]] = {}
        self.fresh: list[_Job] = []

    def _push(self, when: float, kind: int, job: _Job | None = None, version: int = 0) -> None:
        self.seq += 1
        heapq.heappush(self.events, (when, self.seq, kind, job, version))

    def run(self) -> SimResult:
        started = time.perf_counter()
        for job in self.jobs:
            self._push(job.trace.submit_s, SUBMIT, job)
        now = self.events[0][0]
        while self.events:
            when = self.events[0][0]
            self._account(now, when)
            now = when
            while self.events and self.events[0][0] == now:
                _, _, kind, job, version = heapq.heappop(self.events)
                if kind == SUBMIT:
                    self._enqueue(job, now)
                elif kind == FINISH and job.version == version:
                    self._finish(job, now)
                elif kind == RELEASE and job.version == version:
                    self._release(job, now)
                elif kind == TICK:
                    self.tick_pending = False
            self._pass(now)
            if self.queue and not self.tick_pending:
                self.tick_pending = True
                self._push(now + self.config.tick_s, TICK)
        return self._result(time.perf_counter() - started)

    # --- Accounting between events ---------------------------------------------------------

    def _account(self, start: float, end: float) -> None:
        if end <= start:
            return
        low, high = max(start, self.window[0]), min(end, self.window[1])
        if high > low:
            self.busy_s += self.held * (high - low)
        if self.fits_waiting:
            idle = self.config.nodes * self.config.gpus_per_node - self.held
            self.idle_waiting_s += idle * (end - start)

    # --- Job life cycle --------------------------------------------------------------------

    def _enqueue(self, job: _Job, now: float) -> None:
        job.queued_since = now
        if self.config.predict and job.attempt == 1:
            history = self.history.get((job.trace.user, job.trace.gpus, job.max_runtime), ())
            job.expected = predict_runtime(history, job.max_runtime).expected_s
            self.fresh.append(job)
        elif job.attempt == 1:
            self.fresh.append(job)
        expected = job.expected
        if expected is not None and job.done:
            expected = max(expected_total(expected, job.max_runtime, job.done) - job.done, 1.0)
        job.queued = QueuedJob(
            id=job.trace.job_id,
            user=job.trace.user,
            gpus_per_node=job.gpus_per_node,
            nodes=job.nodes,
            max_runtime_s=job.max_runtime,
            submitted_at=job.trace.submit_s,
            attempt=job.attempt,
            queued_since=now,
            expected_runtime_s=expected,
        )
        self.queue[job.trace.job_id] = job

    def _start(self, job: _Job, placements: tuple, now: float, backfill: bool = False) -> None:
        del self.queue[job.trace.job_id]
        job.waited += now - job.queued_since
        if job.first_start is None:
            job.first_start = now
        job.attempt_start = now
        job.overhead = self.config.restart_overhead_s if job.attempt > 1 and self.config.checkpoint else 0.0
        job.placements = placements
        for placement in placements:
            self.free[self.index[placement.node]].difference_update(placement.gpus)
        self.held += job.total_gpus
        job.running = RunningJob(
            id=job.trace.job_id,
            user=job.trace.user,
            gpus_per_node=job.gpus_per_node,
            max_runtime_s=job.max_runtime,
            submitted_at=job.trace.submit_s,
            started_at=now,
            placements=placements,
            attempt=job.attempt,
            backfill=backfill,
            expected_runtime_s=job.queued.expected_runtime_s,
        )
        self.running[job.trace.job_id] = job
        job.version += 1
        self._push(now + job.overhead + (job.trace.duration_s - job.done), FINISH, job, job.version)

    def _let_go(self, job: _Job, now: float) -> None:
        for placement in job.placements:
            self.free[self.index[placement.node]].update(placement.gpus)
        self.held -= job.total_gpus
        self.meter.add(job.trace.user, job.total_gpus, job.attempt_start, now)
        job.placements = ()
        job.running = None

    def _finish(self, job: _Job, now: float) -> None:
        self.running.pop(job.trace.job_id, None)
        self.stopping.pop(job.trace.job_id, None)
        self._let_go(job, now)
        job.end = now
        self.history.setdefault((job.trace.user, job.trace.gpus, job.max_runtime), []).append(job.trace.duration_s)

    def _preempt(self, job: _Job, now: float, grace_s: float) -> None:
        finish_at = job.attempt_start + job.overhead + (job.trace.duration_s - job.done)
        self.preemptions += 1
        job.preemptions += 1
        del self.running[job.trace.job_id]
        self.stopping[job.trace.job_id] = job
        job.running = dataclasses.replace(job.running, stopping_until=now + grace_s)
        if finish_at <= now + grace_s:
            return  # it ends within the grace period: its FINISH event stands
        if self.config.checkpoint:
            job.done += max(0.0, now - job.attempt_start - job.overhead)
        else:
            job.done = 0.0
        job.version += 1
        self._push(now + grace_s, RELEASE, job, job.version)

    def _release(self, job: _Job, now: float) -> None:
        del self.stopping[job.trace.job_id]
        self._let_go(job, now)
        job.attempt += 1
        self._enqueue(job, now)

    # --- The scheduling pass -------------------------------------------------------------

    def _state(self, now: float) -> ClusterState:
        nodes = [
            Node(name=name, gpus=self.config.gpus_per_node, free_gpus=tuple(self.free[i]))
            for i, name in enumerate(self.names)
        ]
        holders = [*self.running.values(), *self.stopping.values()]
        queued = [job.queued for job in self.queue.values()]
        if self.config.policy == "fifo":
            return ClusterState(now=now, nodes=nodes, queued=queued, running=[j.running for j in holders])
        usage = self.meter.read(now, ((j.trace.user, j.attempt_start, j.total_gpus) for j in holders))
        return ClusterState(now=now, nodes=nodes, queued=queued, running=[j.running for j in holders], usage=usage)

    def _pass(self, now: float) -> None:
        if not self.queue:
            self.fits_waiting = False
            self.fresh.clear()
            return
        state = self._state(now)
        tick = time.perf_counter()
        if self.config.policy == "fifo":
            result: PassResult = schedule_fifo(state)
        else:
            result = schedule(state, self.config.policy_config)
        self.pass_s += time.perf_counter() - tick
        self.passes += 1
        for preemption in result.preemptions:
            self._preempt(self.running[preemption.job_id], now, preemption.grace_s)
        for start in result.starts:
            self._start(self.queue[start.job_id], start.placements, now, start.backfill)
        if self.fresh:
            waiting = result.waiting_by_id()
            for job in self.fresh:
                entry = waiting.get(job.trace.job_id)
                job.eta = now if entry is None else entry.estimated_start
                job.planned = entry is not None and entry.code != "starting"
            self.fresh.clear()
        self.fits_waiting = self._fitting_job_waits(result)

    def _fitting_job_waits(self, result: PassResult) -> bool:
        """Would some waiting job, not held by a quota or its reservation, fit on the GPUs free now?"""
        free_counts = [len(f) for f in self.free]
        if not any(free_counts):
            return False
        shapes = {
            (self.queue[w.job_id].gpus_per_node, self.queue[w.job_id].nodes)
            for w in result.waiting
            if w.code in ("waiting", "starting")
        }
        return any(sum(1 for c in free_counts if c >= g) >= k for g, k in shapes)

    # --- Figures -------------------------------------------------------------------------

    def _result(self, wall_s: float) -> SimResult:
        unfinished = [j.trace.job_id for j in self.jobs if j.end is None]
        if unfinished:
            raise RuntimeError(f"{len(unfinished)} jobs never finished (first: {unfinished[0]}).")
        floor = self.config.slowdown_floor_s
        waits = [j.waited for j in self.jobs]
        jcts = [j.end - j.trace.submit_s for j in self.jobs]
        per_user: dict[str, dict[str, float]] = {}
        grouped: dict[str, list[_Job]] = {}
        for job in self.jobs:
            grouped.setdefault(job.trace.user, []).append(job)
        for user, jobs in sorted(grouped.items()):
            slowdowns = [max((j.end - j.trace.submit_s) / max(j.trace.duration_s, floor), 1.0) for j in jobs]
            per_user[user] = {
                "jobs": len(jobs),
                "gpu_hours": sum(j.trace.gpus * j.trace.duration_s for j in jobs) / 3600.0,
                "mean_wait_s": sum(j.waited for j in jobs) / len(jobs),
                "mean_jct_s": sum(j.end - j.trace.submit_s for j in jobs) / len(jobs),
                "mean_slowdown": sum(slowdowns) / len(slowdowns),
                "preemptions": sum(j.preemptions for j in jobs),
            }
        span = self.window[1] - self.window[0]
        spread = self.config.policy_config.eta_spread
        capacity = self.config.nodes * self.config.gpus_per_node * span
        return SimResult(
            policy=self.config.policy,
            gpus=self.config.nodes * self.config.gpus_per_node,
            jobs=len(self.jobs),
            mean_wait_s=sum(waits) / len(waits),
            p95_wait_s=percentile(waits, 95),
            mean_jct_s=sum(jcts) / len(jcts),
            utilisation=self.busy_s / capacity if capacity > 0 else 0.0,
            idle_gpu_hours_while_waiting=self.idle_waiting_s / 3600.0,
            jain_index=jain_index(u["mean_slowdown"] for u in per_user.values()),
            per_user=per_user,
            preemptions=self.preemptions,
            passes=self.passes,
            pass_ms_mean=self.pass_s * 1000.0 / self.passes if self.passes else 0.0,
            wall_s=wall_s,
            predictions=self.config.predict,
            eta=eta_figures(((j.trace.submit_s, j.eta, j.first_start) for j in self.jobs), spread),
            eta_planned=eta_figures(((j.trace.submit_s, j.eta, j.first_start) for j in self.jobs if j.planned), spread),
        )


__all__ = [
    "ESTIMATE_STEPS_S",
    "TRACE_COLUMNS",
    "SimConfig",
    "SimResult",
    "Simulation",
    "TraceError",
    "TraceJob",
    "estimate_max_runtime",
    "jain_index",
    "load_trace",
    "percentile",
    "simulate",
]


def simulate(trace: list[TraceJob], config: SimConfig | None = None) -> SimResult:
    return Simulation(trace, config or SimConfig()).run()
