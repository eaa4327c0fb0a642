"""The SRTF oracle: preemptive shortest-remaining-time-first with the true durations, a reference no lab can run.

No one knows a job's true duration before it ends, so no scheduler reaches this; it is the yardstick the
replay prints the portal's figures against. The model:
- `nodes` interchangeable one-GPU nodes; a k-GPU job holds k nodes at once (as the replay's lab does);
- at every submission and every end, the jobs present are ranked by true remaining time (ties: submission
  order) and taken greedily: a job runs if it fits on the nodes the jobs ranked before it left over, so a
  wide job that does not fit lets shorter-ranked narrower work run (work-conserving);
- preemption is free and instant: a job stopped keeps its progress and resumes with no overhead.
Between two events the ranking cannot change what runs: a running job's remaining time only falls, so it never
drops behind a job it was ahead of, and a job it passes still does not fit where it did not.

Wait is JCT minus the true duration (all the time a job is not running); the other figures are computed as the
replay computes them (bench/simulate.py), so the two print side by side.
"""

from __future__ import annotations

import dataclasses
import heapq
import time

from bench.figures import jain_index, percentile
from bench.traces import TraceError, TraceJob


@dataclasses.dataclass
class OracleResult:
    jobs: int
    gpus: int
    mean_wait_s: float
    p95_wait_s: float
    mean_jct_s: float
    jain_index: float
    idle_gpu_hours_while_waiting: float
    preemptions: int
    wall_s: float

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def srtf_oracle(trace: list[TraceJob], gpus: int = 40, slowdown_floor_s: float = 10.0) -> OracleResult:
    """Replay the trace under preemptive SRTF with the true durations on `gpus` one-GPU nodes."""
    if not trace:
        raise TraceError("The trace has no jobs.")
    too_big = [t.job_id for t in trace if t.gpus > gpus]
    if too_big:
        raise TraceError(f"{len(too_big)} jobs need more GPUs than the lab has (first: {too_big[0]}).")
    started = time.perf_counter()
    end, preemptions, idle_waiting_s = srtf_ends(trace, gpus)
    waits = [end[i] - t.submit_s - t.duration_s for i, t in enumerate(trace)]
    jcts = [end[i] - t.submit_s for i, t in enumerate(trace)]
    slowdowns: dict[str, list[float]] = {}
    for i, t in enumerate(trace):
        slowdowns.setdefault(t.user, []).append(max(jcts[i] / max(t.duration_s, slowdown_floor_s), 1.0))
    return OracleResult(
        jobs=len(trace),
        gpus=gpus,
        mean_wait_s=sum(waits) / len(waits),
        p95_wait_s=percentile(waits, 95),
        mean_jct_s=sum(jcts) / len(jcts),
        jain_index=jain_index(sum(s) / len(s) for s in slowdowns.values()),
        idle_gpu_hours_while_waiting=idle_waiting_s / 3600.0,
        preemptions=preemptions,
        wall_s=time.perf_counter() - started,
    )


def srtf_ends(trace: list[TraceJob], gpus: int) -> tuple[list[float], int, float]:
    """When each job ends under SRTF; the preemptions; GPU-seconds idle while a job that fitted waited."""
    order = sorted(range(len(trace)), key=lambda i: (trace[i].submit_s, i))
    remaining = [t.duration_s for t in trace]
    end = [0.0] * len(trace)
    active: set[int] = set()
    running: set[int] = set()
    preemptions = 0
    idle_waiting_s = 0.0
    now = trace[order[0]].submit_s
    arrivals = 0
    finishes: list[tuple[float, int]] = []  # (end time if nothing changes, job) for the jobs running now
    while arrivals < len(order) or active:
        next_arrival = trace[order[arrivals]].submit_s if arrivals < len(order) else float("inf")
        next_end = finishes[0][0] if finishes else float("inf")
        when = min(next_arrival, next_end)
        elapsed = when - now
        if elapsed > 0:
            for i in running:
                remaining[i] -= elapsed
            held = sum(trace[i].gpus for i in running)
            if any(trace[i].gpus <= gpus - held for i in active - running):
                idle_waiting_s += (gpus - held) * elapsed
        now = when
        while arrivals < len(order) and trace[order[arrivals]].submit_s <= now:
            active.add(order[arrivals])
            arrivals += 1
        for i in [i for i in running if remaining[i] <= 1e-6]:
            running.discard(i)
            active.discard(i)
            end[i] = now
        free = gpus
        chosen: set[int] = set()
        for i in sorted(active, key=lambda i: (remaining[i], trace[i].submit_s, i)):
            if trace[i].gpus <= free:
                chosen.add(i)
                free -= trace[i].gpus
                if free == 0:
                    break
        preemptions += len(running - chosen)
        running = chosen
        finishes = sorted((now + remaining[i], i) for i in running)
        heapq.heapify(finishes)
    return end, preemptions, idle_waiting_s
