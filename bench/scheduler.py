"""A busy lab for timing one scheduling pass: many queued jobs, every node but a few busy, quotas, a reservation.

The state is random but seeded, so two runs time the same work. The mix follows the Philly traces: mostly
one-GPU jobs, some 2-, 4- and 8-GPU ones; limits of 1 h to 7 d; a few hundred users.
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass

from bench.traces import ESTIMATE_STEPS_S
from jobs.policy import ClusterState, Node, Placement, PolicyConfig, QueuedJob, Quota, RunningJob, Window, schedule


@dataclass(frozen=True)
class BenchResult:
    queued: int
    nodes: int
    gpus: int
    repeats: int
    pass_ms_median: float
    pass_ms_p95: float
    starts: int
    preemptions: int
    waiting: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def busy_lab(*, queued: int, gpus: int, gpus_per_node: int = 1, users: int = 300, seed: int = 4) -> ClusterState:
    rng = random.Random(seed)  # noqa: S311 - a seeded benchmark, not a secret
    now = 1_750_000_000.0
    node_count = max(gpus // gpus_per_node, 1)
    names = [f"gpu{i + 1:02d}" for i in range(node_count)]
    people = [f"student{i:03d}" for i in range(users)]
    weights = [1.0 / (rank + 1) for rank in range(users)]
    reservation = Window(
        starts_at=now + 2 * 3600, ends_at=now + 6 * 3600, reservation_id=1, users=frozenset(people[:5])
    )
    reserved = set(names[:4])

    running: list[RunningJob] = []
    free: dict[str, list[int]] = {name: [] for name in names}
    for n, name in enumerate(names):
        for gpu in range(gpus_per_node):
            if n < 2:  # two nodes come free, so the pass starts something
                free[name].append(gpu)
                continue
            limit = rng.choice(ESTIMATE_STEPS_S)
            running.append(
                RunningJob(
                    id=f"r{n}-{gpu}",
                    user=rng.choices(people, weights)[0],
                    gpus_per_node=1,
                    max_runtime_s=limit,
                    submitted_at=now - rng.uniform(0, 4 * 86400),
                    started_at=now - rng.uniform(0, min(limit, 3 * 86400)),
                    placements=(Placement(node=name, gpus=(gpu,)),),
                    priority_class=rng.choice(("low", "normal", "normal", "normal")),
                )
            )
    nodes = [
        Node(
            name=name,
            gpus=gpus_per_node,
            free_gpus=tuple(free[name]),
            windows=(reservation,) if name in reserved else (),
        )
        for name in names
    ]
    jobs = []
    for i in range(queued):
        width = rng.choices((1, 2, 4, 8), (85, 10, 4, 1))[0]
        per_node = min(width, gpus_per_node)
        jobs.append(
            QueuedJob(
                id=i,
                user=rng.choices(people, weights)[0],
                gpus_per_node=per_node,
                nodes=max(width // per_node, 1),
                max_runtime_s=rng.choices(ESTIMATE_STEPS_S, (60, 20, 15, 5))[0],
                submitted_at=now - rng.uniform(0, 3 * 86400),
                priority_class=rng.choices(("low", "normal", "high"), (10, 85, 5))[0],
                reservation_id=1 if i % 50 == 0 else None,
            )
        )
    usage = {user: rng.uniform(0, 200 * 3600) for user in people}
    quotas = {
        user: Quota(max_jobs=rng.choice((2, 4, None)), max_gpus_per_job=8, gpu_hours_left=rng.uniform(0, 200))
        for user in people
    }
    return ClusterState(now=now, nodes=nodes, queued=jobs, running=running, usage=usage, quotas=quotas)


def bench_pass(
    *, queued: int, gpus: int, gpus_per_node: int = 1, repeats: int = 30, config: PolicyConfig | None = None
) -> BenchResult:
    state = busy_lab(queued=queued, gpus=gpus, gpus_per_node=gpus_per_node)
    config = config or PolicyConfig()
    result = schedule(state, config)  # warm-up, and the counts to print
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        schedule(state, config)
        timings.append((time.perf_counter() - started) * 1000.0)
    timings.sort()
    p95 = timings[min(len(timings) - 1, round(0.95 * (len(timings) - 1)))]
    return BenchResult(
        queued=queued,
        nodes=len(state.nodes),
        gpus=sum(n.gpus for n in state.nodes),
        repeats=repeats,
        pass_ms_median=statistics.median(timings),
        pass_ms_p95=p95,
        starts=len(result.starts),
        preemptions=len(result.preemptions),
        waiting=len(result.waiting),
    )
