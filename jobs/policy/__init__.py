"""The training-job queue policy: pure functions over small dataclasses, no ORM, no I/O.

`schedule(state)` runs one pass of the portal policy; `schedule_fifo(state)` is the strict-FIFO baseline.
The services turn database rows into a ClusterState and act on the PassResult; the simulation replays
traces through the very same functions.
"""

from jobs.policy.fifo import schedule_fifo
from jobs.policy.ids import JobId
from jobs.policy.model import (
    ClusterState,
    Node,
    PassResult,
    Placement,
    PolicyConfig,
    Preemption,
    QueuedJob,
    Quota,
    RunningJob,
    Start,
    Window,
)
from jobs.policy.priority import PriorityModel, UsageMeter, decayed_usage, fair_share_factors
from jobs.policy.reasons import Waiting, clock_formatter
from jobs.policy.scheduler import schedule

__all__ = [
    "ClusterState",
    "JobId",
    "Node",
    "PassResult",
    "Placement",
    "PolicyConfig",
    "Preemption",
    "PriorityModel",
    "QueuedJob",
    "Quota",
    "RunningJob",
    "Start",
    "UsageMeter",
    "Waiting",
    "Window",
    "clock_formatter",
    "decayed_usage",
    "fair_share_factors",
    "schedule",
    "schedule_fifo",
]
