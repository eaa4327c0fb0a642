"""Strict FIFO, the baseline the simulation compares against: first come, first served, no backfill.

The head of the queue starts as soon as it fits; nobody behind it starts before it does. Reservation
windows are respected as in the portal policy; there are no priorities, quotas or preemption.
"""

from __future__ import annotations

from jobs.policy.model import ClusterState, PassResult, Start
from jobs.policy.placement import Lab
from jobs.policy.reasons import Waiting


def schedule_fifo(state: ClusterState) -> PassResult:
    lab = Lab(state, overrun_slack_s=0.0)
    queued = state.queued
    order = sorted(range(len(queued)), key=lambda i: (queued[i].submitted_at, i))
    starts: list[Start] = []
    waiting: list[Waiting] = []
    blocked = False
    for position, i in enumerate(order, start=1):
        job = queued[i]
        if not blocked:
            picks = lab.fit_now(job)
            if picks is not None:
                starts.append(Start(job_id=job.id, placements=lab.take_now(job, picks)))
                continue
            blocked = True
        waiting.append(
            Waiting(
                job_id=job.id,
                position=position,
                code="waiting",
                total_gpus=job.total_gpus,
                nodes=job.nodes,
                priority=0.0,
            )
        )
    return PassResult(starts=starts, preemptions=[], waiting=waiting)
