"""Multifactor priority, after Slurm's priority/multifactor plugin.

priority = w_class * class + w_fairshare * fair share + w_age * age + w_short * short, every factor in [0, 1]:
- class: the job's priority class rank over the highest rank (low 0, normal 0.5, high 1);
- fair share: 2 ** (-U / S), U the user's share of all decayed usage, S the user's share of the shares of
  the users who have work queued or running (Slurm's classic formula); a user who used nothing gets 1;
- age: time since submission over max_age_s, capped at 1;
- short: 1 for a run time up to short_s, falling on a log scale to 0 at long_s (short work first, as a
  "short" partition or QOS would do on Slurm). The run time is the job's expected one (runtime.py: its
  prediction from history, else its max runtime); for a running job, the expected rest of it.

Usage is GPU-seconds that decay with a half-life: a GPU-hour used one half-life ago counts half.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence

from jobs.policy.model import ClusterState, PolicyConfig, QueuedJob, RunningJob
from jobs.policy.runtime import expected_total

LN2 = math.log(2.0)


def decay_factor(elapsed_s: float, half_life_s: float) -> float:
    return 2.0 ** (-max(elapsed_s, 0.0) / half_life_s)


def decayed_gpu_seconds(gpus: float, start: float, end: float, now: float, half_life_s: float) -> float:
    """The integral of gpus * 2^-((now - t) / half_life) over [start, min(end, now)]: usage that decays continuously."""
    end = min(end, now)
    if end <= start:
        return 0.0
    scale = half_life_s / LN2
    return gpus * scale * (decay_factor(now - end, half_life_s) - decay_factor(now - start, half_life_s))


def decayed_usage(
    intervals: Iterable[tuple[str, float, float | None, float]], *, now: float, half_life_s: float
) -> dict[str, float]:
    """Decayed GPU-seconds per user from ledger rows (user, starts_at, ends_at or None while held, gpus)."""
    usage: dict[str, float] = {}
    for user, start, end, gpus in intervals:
        value = decayed_gpu_seconds(gpus, start, now if end is None else end, now, half_life_s)
        if value:
            usage[user] = usage.get(user, 0.0) + value
    return usage


class UsageMeter:
    """Decayed usage kept up to date incrementally (for the simulation or a long-lived worker).

    Closed intervals are folded into one number per user at a reference time; reading decays it to now.
    """

    def __init__(self, half_life_s: float) -> None:
        self.half_life_s = half_life_s
        self._value: dict[str, float] = {}
        self._at: dict[str, float] = {}

    def add(self, user: str, gpus: float, start: float, end: float) -> None:
        at = self._at.get(user, end)
        reference = max(at, end)
        current = self._value.get(user, 0.0) * decay_factor(reference - at, self.half_life_s)
        self._value[user] = current + decayed_gpu_seconds(gpus, start, end, reference, self.half_life_s)
        self._at[user] = reference

    def read(self, now: float, open_intervals: Iterable[tuple[str, float, float]] = ()) -> dict[str, float]:
        """Usage at `now`, plus the intervals still open: (user, start, gpus)."""
        usage = {
            user: value * decay_factor(now - self._at[user], self.half_life_s) for user, value in self._value.items()
        }
        for user, start, gpus in open_intervals:
            usage[user] = usage.get(user, 0.0) + decayed_gpu_seconds(gpus, start, now, now, self.half_life_s)
        return usage


def fair_share_factors(
    usage: Mapping[str, float], active_users: Iterable[str], shares: Mapping[str, float]
) -> dict[str, float]:
    """Slurm's classic fair-share factor 2^(-U/S) for each active user."""
    active = set(active_users)
    if not active:
        return {}
    total_shares = sum(max(shares.get(user, 1.0), 0.0) for user in active)
    total_usage = sum(value for value in usage.values() if value > 0)
    factors = {}
    for user in active:
        share = max(shares.get(user, 1.0), 0.0) / total_shares if total_shares > 0 else 0.0
        used = max(usage.get(user, 0.0), 0.0) / total_usage if total_usage > 0 else 0.0
        if used == 0.0:
            factors[user] = 1.0
        elif share == 0.0:
            factors[user] = 0.0
        else:
            factors[user] = 2.0 ** (-used / share)
    return factors


def short_factor(max_runtime_s: float, config: PolicyConfig) -> float:
    if max_runtime_s <= config.short_s:
        return 1.0
    if max_runtime_s >= config.long_s:
        return 0.0
    return 1.0 - math.log(max_runtime_s / config.short_s) / math.log(config.long_s / config.short_s)


@dataclasses.dataclass(frozen=True, slots=True)
class PriorityBreakdown:
    total: float
    priority_class: float
    fair_share: float
    age: float
    short: float


class PriorityModel:
    """The priority of every job in one pass; per-user and per-runtime factors are computed once."""

    def __init__(self, state: ClusterState, config: PolicyConfig) -> None:
        self.config = config
        self.now = state.now
        active = {job.user for job in state.queued} | {job.user for job in state.running}
        self.fair_share = fair_share_factors(state.usage, active, state.shares)
        top = max(config.classes.values(), default=0)
        self._class_points = {
            name: (config.weight_class * rank / top if top > 0 else 0.0) for name, rank in config.classes.items()
        }
        self._default_class = self._class_points.get("normal", 0.0)
        self._short_points: dict[float, float] = {}
        self._age_rate = config.weight_age / config.max_age_s if config.max_age_s > 0 else 0.0

    def class_points(self, name: str) -> float:
        return self._class_points.get(name, self._default_class)

    def short_points(self, max_runtime_s: float) -> float:
        points = self._short_points.get(max_runtime_s)
        if points is None:
            points = self.config.weight_short * short_factor(max_runtime_s, self.config)
            self._short_points[max_runtime_s] = points
        return points

    def runtime(self, job: QueuedJob | RunningJob) -> float:
        """The time the short factor looks at: a queued job's expected run time, a running job's expected rest."""
        if isinstance(job, QueuedJob):
            return job.expected_s
        ran = max(self.now - job.started_at, 0.0)
        return max(expected_total(job.expected_runtime_s, job.max_runtime_s, ran) - ran, 1.0)

    def of(self, job: QueuedJob | RunningJob) -> float:
        age = min((self.now - job.submitted_at) * self._age_rate, self.config.weight_age)
        return (
            self.class_points(job.priority_class)
            + self.config.weight_fairshare * self.fair_share.get(job.user, 1.0)
            + max(age, 0.0)
            + self.short_points(self.runtime(job))
        )

    def of_many(self, jobs: Sequence[QueuedJob]) -> list[float]:
        """`of` for a whole queue, with the lookups hoisted out of the loop (10,000 jobs per pass)."""
        now, rate, cap = self.now, self._age_rate, self.config.weight_age
        fair, weight_fair = self.fair_share, self.config.weight_fairshare
        classes, default_class = self._class_points, self._default_class
        shorts, short_points = self._short_points, self.short_points
        out = []
        for job in jobs:
            age = (now - job.submitted_at) * rate
            if age > cap:
                age = cap
            elif age < 0.0:
                age = 0.0
            runtime = job.max_runtime_s if job.expected_runtime_s is None else job.expected_s
            short = shorts.get(runtime)
            if short is None:
                short = short_points(runtime)
            out.append(
                classes.get(job.priority_class, default_class) + weight_fair * fair.get(job.user, 1.0) + age + short
            )
        return out

    def breakdown(self, job: QueuedJob | RunningJob) -> PriorityBreakdown:
        age = max(min((self.now - job.submitted_at) * self._age_rate, self.config.weight_age), 0.0)
        fair = self.config.weight_fairshare * self.fair_share.get(job.user, 1.0)
        klass = self.class_points(job.priority_class)
        short = self.short_points(self.runtime(job))
        return PriorityBreakdown(
            total=klass + fair + age + short, priority_class=klass, fair_share=fair, age=age, short=short
        )
