"""The replay's figures: percentiles, Jain's index, the result of a replay, and how good its ETAs were."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def jain_index(values: Iterable[float]) -> float:
    xs = list(values)
    if not xs or not any(xs):
        return 1.0
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


@dataclasses.dataclass
class EtaFigures:
    """The estimated start each job got when it was submitted, against when it started (jobs that waited only).

    `within_25` is the share whose estimate was within 25 % of the actual wait of the actual start; `in_range`
    the share that started inside the range the page shows; a job with no estimate ("unknown") counts in
    neither and in `unknown`.
    """

    waited: int
    unknown: int
    median_abs_error_s: float
    p90_abs_error_s: float
    within_25: float
    in_range: float


def eta_figures(records: Iterable[tuple[float, float | None, float]], spread: float) -> EtaFigures:
    """From (submitted, estimated start or None, actual first start) of every job."""
    errors: list[float] = []
    waited = unknown = within = in_range = 0
    for submitted, estimate, started in records:
        wait = started - submitted
        if wait <= 0:
            continue
        waited += 1
        if estimate is None:
            unknown += 1
            continue
        error = abs(estimate - started)
        errors.append(error)
        within += error <= 0.25 * wait
        shown = max(estimate - submitted, 0.0)
        in_range += shown * (1 - spread) <= wait <= shown * (1 + spread)
    return EtaFigures(
        waited=waited,
        unknown=unknown,
        median_abs_error_s=percentile(errors, 50),
        p90_abs_error_s=percentile(errors, 90),
        within_25=within / waited if waited else 0.0,
        in_range=in_range / waited if waited else 0.0,
    )


@dataclasses.dataclass
class SimResult:
    policy: str
    gpus: int
    jobs: int
    mean_wait_s: float
    p95_wait_s: float
    mean_jct_s: float
    utilisation: float
    idle_gpu_hours_while_waiting: float
    jain_index: float
    per_user: dict[str, dict[str, float]]
    preemptions: int
    passes: int
    pass_ms_mean: float
    wall_s: float
    predictions: bool = False
    eta: EtaFigures | None = None
    # The same, for the jobs that waited in the queue's plan only (not for a claim: GPUs being freed for them).
    eta_planned: EtaFigures | None = None

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)
