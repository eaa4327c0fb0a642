"""How long a job will probably run, from how long the same work ran before; never longer than its limit.

The prediction orders the queue, plans backfill and gives estimated starts. It never stops a job: the job's
max runtime (its limit) still rules, and a job that runs past its prediction is simply assumed to run on:
`expected_total` doubles its guess to twice the time it has run so far (a job that has run long is likely to
run longer, as run times are heavy-tailed), up to the limit.

`predict_runtime` is robust to the odd outlier: the median of the last `window` run times, with the quartiles
as its spread. Its confidence is "none" without history (the prediction is then the limit), "high" with at
least `min_samples` run times whose interquartile range is within `max_spread` of the median, else "low"; a
low-confidence prediction leans long (the upper quartile), since predicting short is the costly mistake.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

Confidence = Literal["none", "low", "high"]
WINDOW = 10  # how many of the latest run times of the same work a prediction reads


@dataclasses.dataclass(frozen=True, slots=True)
class RuntimePrediction:
    expected_s: float
    low_s: float
    high_s: float
    samples: int
    confidence: Confidence


def _quantile(ordered: Sequence[float], q: float) -> float:
    rank = (len(ordered) - 1) * q
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def predict_runtime(
    history: Sequence[float], limit_s: float, *, window: int = WINDOW, min_samples: int = 3, max_spread: float = 0.5
) -> RuntimePrediction:
    """Predict from past run times (oldest first) of the same work; never above `limit_s`."""
    recent = sorted(min(max(float(x), 0.0), limit_s) for x in history[-window:] if x is not None)
    if not recent:
        return RuntimePrediction(limit_s, limit_s, limit_s, 0, "none")
    median = _quantile(recent, 0.5)
    low, high = _quantile(recent, 0.25), _quantile(recent, 0.75)
    steady = len(recent) >= min_samples and high - low <= max_spread * max(median, 1.0)
    expected = median if steady else high
    return RuntimePrediction(
        expected_s=max(min(expected, limit_s), 1.0),
        low_s=max(min(low, limit_s), 1.0),
        high_s=max(min(high, limit_s), 1.0),
        samples=len(recent),
        confidence="high" if steady else "low",
    )


def expected_total(expected_s: float | None, max_runtime_s: float, ran_s: float) -> float:
    """The run time to plan with for a job that has run `ran_s`: its prediction, or twice what it has run once it
    has outrun it; never above the limit."""
    expected = max_runtime_s if expected_s is None else min(expected_s, max_runtime_s)
    if ran_s >= expected:
        expected = max_runtime_s
    return expected
