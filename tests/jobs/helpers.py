"""Small builders for policy states: a lab of nodes, queued and running jobs at a fixed clock."""

from __future__ import annotations

from jobs.policy import Node, Placement, QueuedJob, RunningJob, Window

NOW = 1_750_000_000.0
HOUR = 3600.0
DAY = 24 * HOUR


def lab(count: int, *, gpus: int = 1, busy: tuple[str, ...] = (), windows: dict | None = None) -> list[Node]:
    """`count` nodes gpu01.., all GPUs free except on the nodes named in `busy`."""
    nodes = []
    for number in range(1, count + 1):
        name = f"gpu{number:02d}"
        free = () if name in busy else tuple(range(gpus))
        nodes.append(Node(name=name, gpus=gpus, free_gpus=free, windows=tuple((windows or {}).get(name, ()))))
    return nodes


def queued(
    job_id,
    user: str = "alice",
    *,
    gpus: int = 1,
    nodes: int = 1,
    runtime: float = HOUR,
    age: float = 0.0,
    klass: str = "normal",
    reservation=None,
    queued_since: float | None = None,
) -> QueuedJob:
    return QueuedJob(
        id=job_id,
        user=user,
        gpus_per_node=gpus,
        nodes=nodes,
        max_runtime_s=runtime,
        submitted_at=NOW - age,
        priority_class=klass,
        reservation_id=reservation,
        queued_since=queued_since,
    )


def running(
    job_id,
    user: str,
    node: str,
    *,
    ran: float = HOUR,
    runtime: float = 4 * HOUR,
    klass: str = "normal",
    gpus: tuple[int, ...] = (0,),
    preemptible: bool = True,
    stopping_in: float | None = None,
    submitted_before: float = 0.0,
    reservation=None,
    more_nodes: tuple[str, ...] = (),
    backfill: bool = False,
) -> RunningJob:
    started = NOW - ran
    placements = (Placement(node=node, gpus=gpus),) + tuple(Placement(node=n, gpus=gpus) for n in more_nodes)
    return RunningJob(
        id=job_id,
        user=user,
        gpus_per_node=len(gpus),
        max_runtime_s=runtime,
        submitted_at=started - submitted_before,
        started_at=started,
        placements=placements,
        priority_class=klass,
        preemptible=preemptible,
        stopping_until=None if stopping_in is None else NOW + stopping_in,
        reservation_id=reservation,
        backfill=backfill,
    )


def window(start_in: float, length: float, reservation=7, users=("teacher",)) -> Window:
    return Window(
        starts_at=NOW + start_in,
        ends_at=NOW + start_in + length,
        reservation_id=reservation,
        users=frozenset(users),
    )
