"""Run-time predictions from history (jobs/policy/runtime.py), and how the policy plans with them."""

import pytest

from jobs.policy import ClusterState, Node, Placement, QueuedJob, RunningJob, schedule
from jobs.policy.runtime import expected_total, predict_runtime

HOUR = 3600.0
NOW = 1_000_000.0


def test_without_history_the_prediction_is_the_limit():
    prediction = predict_runtime([], 4 * HOUR)
    assert (prediction.expected_s, prediction.samples, prediction.confidence) == (4 * HOUR, 0, "none")


def test_a_steady_history_predicts_its_median_with_high_confidence():
    prediction = predict_runtime([600, 620, 580, 610, 590], HOUR)
    assert prediction.expected_s == 600 and prediction.confidence == "high" and prediction.samples == 5
    assert prediction.low_s <= 600 <= prediction.high_s


def test_a_noisy_history_leans_long_with_low_confidence():
    prediction = predict_runtime([60, 3000, 70, 2500, 65, 80], HOUR)
    assert prediction.confidence == "low"
    assert prediction.expected_s == prediction.high_s > 70


def test_only_the_last_runs_count_and_an_outlier_does_not_move_the_median():
    history = [3000] * 20 + [600, 610, 600, 100_000, 590, 605, 600, 600, 610, 595]
    prediction = predict_runtime(history, 7 * 24 * HOUR)
    assert prediction.expected_s == 600 and prediction.confidence == "high"


def test_a_prediction_is_never_above_the_limit():
    prediction = predict_runtime([10 * HOUR, 12 * HOUR, 11 * HOUR], HOUR)
    assert prediction.expected_s == prediction.high_s == HOUR


def test_a_job_that_outran_its_prediction_is_expected_to_run_to_its_limit():
    assert expected_total(600, 4 * HOUR, ran_s=300) == 600
    assert expected_total(600, 4 * HOUR, ran_s=601) == 4 * HOUR
    assert expected_total(None, 4 * HOUR, ran_s=10) == 4 * HOUR


def running(job_id, *, expected, limit=24 * HOUR, started=NOW - 600, node="n1", user="bob"):
    return RunningJob(
        id=job_id, user=user, gpus_per_node=1, max_runtime_s=limit, submitted_at=started, started_at=started,
        placements=(Placement(node=node, gpus=(0,)),), expected_runtime_s=expected,
    )  # fmt: skip


def test_estimated_starts_use_the_predictions_and_the_limit_still_rules_nothing_else():
    nodes = [Node(name="n1", gpus=1), Node(name="n2", gpus=1)]
    waiting = QueuedJob(id="w", user="ann", gpus_per_node=1, max_runtime_s=HOUR, submitted_at=NOW)
    state = ClusterState(
        now=NOW,
        nodes=nodes,
        queued=[waiting],
        running=[
            running("a", expected=1800, user="ann"),
            running("b", expected=None, node="n2", user="ann", limit=4 * HOUR),
        ],
    )
    result = schedule(state)
    assert not result.starts and not result.preemptions
    # Job a is expected to end 1,800 s after it started (600 s ago); job b only at its 4 h limit.
    assert result.waiting[0].estimated_start == pytest.approx(NOW + 1200)


def test_no_one_is_preempted_for_a_gpu_expected_to_come_free_within_the_grace_period():
    nodes = [Node(name="n1", gpus=1)]
    waiting = QueuedJob(
        id="w", user="ann", gpus_per_node=1, max_runtime_s=HOUR, submitted_at=NOW, expected_runtime_s=60
    )
    # A long job (24 h limit, no prediction) that has run an hour is preempted for a short job ...
    long = running("a", expected=None, started=NOW - HOUR)
    assert [
        p.job_id for p in schedule(ClusterState(now=NOW, nodes=nodes, queued=[waiting], running=[long])).preemptions
    ] == ["a"]
    # ... unless it is expected to end within the grace period (120 s) anyway.
    ending = running("a", expected=HOUR + 60, started=NOW - HOUR)
    result = schedule(ClusterState(now=NOW, nodes=nodes, queued=[waiting], running=[ending]))
    assert not result.preemptions and result.waiting[0].estimated_start == pytest.approx(NOW + 60)
