"""The queue policy's inputs and outputs: small frozen dataclasses, no ORM rows.

Times are POSIX seconds (floats, UTC) so that the policy, the simulation and the services
share one clock model; durations are seconds. The caller turns rows into these and back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Literal

from jobs.policy.ids import JobId, ReservationId
from jobs.policy.reasons import Waiting

DAY_S = 24 * 3600.0
WEEK_S = 7 * DAY_S


@dataclasses.dataclass(frozen=True, slots=True)
class Window:
    """A reservation's hold on a node from `starts_at` until `ends_at`.

    Only jobs that name the reservation (and whose user it admits) run on the node during the window; other jobs
    must end, by their max runtime, before it starts. `users` are the people who may use the reservation (the
    portal fills it from `labs.reservations.selectors.reservation_people`); an empty `users` admits anyone who
    names the reservation.
    """

    starts_at: float
    ends_at: float
    reservation_id: ReservationId
    users: frozenset[str] = frozenset()

    def admits(self, user: str) -> bool:
        return not self.users or user in self.users


@dataclasses.dataclass(frozen=True, slots=True)
class Node:
    """A node as the policy sees it. `free_gpus` are the indices nothing holds now (no job, no notebook)."""

    name: str
    gpus: int
    free_gpus: tuple[int, ...] = ()
    schedulable: bool = True
    windows: tuple[Window, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class Placement:
    node: str
    gpus: tuple[int, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class QueuedJob:
    id: JobId
    user: str
    gpus_per_node: int
    max_runtime_s: float
    submitted_at: float
    nodes: int = 1
    priority_class: str = "normal"
    reservation_id: ReservationId | None = None
    attempt: int = 1
    # When this attempt entered the queue (a preempted job is requeued later than it was submitted).
    queued_since: float | None = None
    # How long this attempt will probably run (runtime.predict_runtime); None: as long as its limit.
    expected_runtime_s: float | None = None

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def expected_s(self) -> float:
        """The run time the plan and the ordering assume: the prediction, never above the limit."""
        if self.expected_runtime_s is None:
            return self.max_runtime_s
        return min(self.expected_runtime_s, self.max_runtime_s)

    @property
    def in_queue_since(self) -> float:
        return self.submitted_at if self.queued_since is None else self.queued_since


@dataclasses.dataclass(frozen=True, slots=True)
class RunningJob:
    id: JobId
    user: str
    gpus_per_node: int
    max_runtime_s: float
    submitted_at: float
    started_at: float
    placements: tuple[Placement, ...]
    priority_class: str = "normal"
    reservation_id: ReservationId | None = None
    attempt: int = 1
    preemptible: bool = True
    # Set once the job was told to stop (preempted or cancelled): its GPUs come free by then.
    stopping_until: float | None = None
    # Started as a backfill (`Start.backfill`: ahead of a higher-priority job that could not start then). Only
    # such a job may be preempted by the "backfill" rule; a job that started in its turn never is.
    backfill: bool = False
    # How long this attempt will probably run from `started_at` (None: as long as its limit).
    expected_runtime_s: float | None = None

    @property
    def nodes(self) -> int:
        return len(self.placements)

    @property
    def total_gpus(self) -> int:
        return sum(len(p.gpus) for p in self.placements)


@dataclasses.dataclass(frozen=True, slots=True)
class Quota:
    """A user's limits in force; None means no limit. `gpu_hours_left` is this week's allowance minus use so far."""

    max_jobs: int | None = None
    max_gpus_per_job: int | None = None
    gpu_hours_left: float | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class PolicyConfig:
    """Weights and limits of the portal policy. Priority = sum of weight x factor, each factor in [0, 1]."""

    classes: Mapping[str, int] = dataclasses.field(default_factory=lambda: {"low": 0, "normal": 1, "high": 2})
    weight_class: float = 10_000.0
    # Fair share weighs less than the short factor: with predicted run times, short-first is what cuts the
    # wait (3-VC replay: 1,000 -> 300 takes the mean wait from 592 to 527 s, Jain 0.98 -> 0.99).
    weight_fairshare: float = 300.0
    weight_age: float = 1_000.0
    weight_short: float = 1_000.0
    # Usage decays with this half-life (Slurm's PriorityDecayHalfLife default: 7 days).
    half_life_s: float = WEEK_S
    # Age stops adding priority after this long in the queue (Slurm's PriorityMaxAge default: 7 days).
    max_age_s: float = WEEK_S
    # The short-job factor is 1 for an expected run time up to short_s and falls (log scale) to 0 at long_s.
    short_s: float = 300.0
    long_s: float = WEEK_S
    # A preempted job gets SIGTERM and this long to write a checkpoint before SIGKILL.
    preempt_grace_s: float = 120.0
    # Work that has run less than this is not preempted for fair share or backfill reasons (Slurm: PreemptExemptTime).
    preempt_exempt_s: float = 600.0
    # Same-class work is preempted for a job whose priority is this much higher (after the exempt time). 300
    # rather than 500: a job of a few hours preempts work with days left (replays: primary trace wait 1.77x ->
    # 1.66x the oracle's, 3-VC 527 -> 524 s, ETAs within 25 % 61 % -> 67 %).
    preempt_margin: float = 300.0
    # Preemption is considered for this many waiting jobs per pass, highest priority first.
    preemption_depth: int = 64
    # A job still running past its max runtime is assumed to end this much later (the backend kills it).
    overrun_slack_s: float = 60.0
    # An estimated start is shown as a range: from (1 - eta_spread) to (1 + eta_spread) times the estimated wait.
    eta_spread: float = 0.25

    def class_rank(self, name: str) -> int:
        return self.classes.get(name, self.classes.get("normal", 0))


@dataclasses.dataclass(frozen=True, slots=True)
class ClusterState:
    """Everything one scheduling pass looks at.

    `usage` is each user's decayed GPU-seconds (see priority.decayed_usage); `shares` weighs users for fair
    share (default 1 each); `quotas` the limits per user (missing: no limits).
    """

    now: float
    nodes: Sequence[Node]
    queued: Sequence[QueuedJob]
    running: Sequence[RunningJob] = ()
    usage: Mapping[str, float] = dataclasses.field(default_factory=dict)
    quotas: Mapping[str, Quota] = dataclasses.field(default_factory=dict)
    shares: Mapping[str, float] = dataclasses.field(default_factory=dict)


# --- Output ---------------------------------------------------------------------------

PreemptRule = Literal["priority", "fair_share", "backfill", "reservation"]


@dataclasses.dataclass(slots=True)
class Start:
    job_id: JobId
    placements: tuple[Placement, ...]
    # Started ahead of a higher-priority job that is still waiting (it may be preempted for that job).
    backfill: bool = False

    @property
    def node_names(self) -> tuple[str, ...]:
        return tuple(p.node for p in self.placements)


@dataclasses.dataclass(slots=True)
class Preemption:
    job_id: JobId
    for_job_id: JobId
    rule: PreemptRule
    grace_s: float
    reason: str


@dataclasses.dataclass(slots=True)
class PassResult:
    starts: list[Start]
    preemptions: list[Preemption]
    # Every job still queued, in queue order (position 1 first).
    waiting: list[Waiting]

    def waiting_by_id(self) -> dict[JobId, Waiting]:
        return {w.job_id: w for w in self.waiting}
