"""The trace replay: the estimate model, hand-made traces with known answers, the two commands."""

import io
import json

import pytest
from django.core.management import CommandError, call_command

from bench.simulate import (
    SimConfig,
    TraceError,
    TraceJob,
    estimate_max_runtime,
    jain_index,
    load_trace,
    percentile,
    simulate,
)

HOUR = 3600.0
DAY = 24 * HOUR


def trace(*rows) -> list[TraceJob]:
    return [
        TraceJob(job_id=str(n), user=user, submit_s=t, duration_s=d, gpus=g) for n, (user, t, d, g) in enumerate(rows)
    ]


@pytest.mark.parametrize(
    "duration,estimate",
    [(1, HOUR), (HOUR, HOUR), (HOUR + 1, 4 * HOUR), (5 * HOUR, DAY), (DAY + 1, 7 * DAY), (8 * DAY, 14 * DAY)],
)
def test_the_estimate_is_the_duration_rounded_up_to_a_round_limit(duration, estimate):
    assert estimate_max_runtime(duration) == estimate


def test_strict_fifo_known_answer():
    # 2 GPUs. Job 0 takes both for 100 s; jobs 1 and 2 wait for it and then run side by side.
    result = simulate(trace(("u", 0, 100, 2), ("u", 10, 50, 1), ("u", 20, 50, 1)), SimConfig(gpus=2, policy="fifo"))
    assert result.mean_wait_s == pytest.approx((0 + 90 + 80) / 3)
    assert result.mean_jct_s == pytest.approx((100 + 140 + 130) / 3)
    assert result.p95_wait_s == pytest.approx(89.0)  # 80 + 0.9 * (90 - 80)
    assert result.utilisation == pytest.approx(1.0)  # both GPUs busy over the submission window [0, 20]
    assert result.idle_gpu_hours_while_waiting == 0
    assert result.preemptions == 0


def test_fifo_idles_a_gpu_behind_a_wide_job_and_the_portal_does_not():
    jobs = trace(("u", 0, 100, 1), ("u", 1, 10, 2), ("u", 2, 10, 1))
    fifo = simulate(jobs, SimConfig(gpus=2, policy="fifo"))
    # From t=2 to t=100 one GPU idles while job 2 (one GPU) waits behind job 1 (two GPUs).
    assert fifo.idle_gpu_hours_while_waiting == pytest.approx(98 / 3600)
    assert fifo.mean_wait_s == pytest.approx((0 + 99 + 108) / 3)  # job 2 runs after job 1, at 110
    portal = simulate(jobs, SimConfig(gpus=2, policy="portal"))
    assert portal.idle_gpu_hours_while_waiting == 0
    assert portal.mean_wait_s == pytest.approx((0 + 99 + 0) / 3)  # job 2 backfills at once


def test_a_long_job_is_preempted_for_a_short_one_and_resumes_from_its_checkpoint():
    jobs = trace(("long", 0, 2 * DAY, 1), ("short", 1000, 60, 1))
    result = simulate(jobs, SimConfig(gpus=1, policy="portal", restart_overhead_s=60))
    assert result.preemptions == 1
    # Preempted at 1000 (it ran past the 600 s exempt time), holds the GPU for the 120 s grace period;
    # the short job runs 1120..1180; the long one resumes at 1180 and pays a 60 s restart.
    assert result.per_user["short"]["mean_wait_s"] == pytest.approx(120)
    assert result.per_user["long"]["mean_wait_s"] == pytest.approx(60)
    assert result.per_user["long"]["mean_jct_s"] == pytest.approx(1180 + 60 + (2 * DAY - 1000))
    no_checkpoint = simulate(jobs, SimConfig(gpus=1, policy="portal", checkpoint=False))
    assert no_checkpoint.per_user["long"]["mean_jct_s"] == pytest.approx(1180 + 2 * DAY)


def test_per_user_slowdown_and_jains_index():
    result = simulate(trace(("a", 0, 100, 1), ("b", 0, 100, 1)), SimConfig(gpus=1, policy="fifo"))
    assert result.per_user["a"]["mean_slowdown"] == pytest.approx(1.0)
    assert result.per_user["b"]["mean_slowdown"] == pytest.approx(2.0)
    assert result.jain_index == pytest.approx(9 / 10)  # (1 + 2)^2 / (2 * (1 + 4))


def test_slowdown_is_bounded_for_very_short_jobs():
    result = simulate(trace(("a", 0, 100, 1), ("b", 0, 1, 1)), SimConfig(gpus=1, policy="fifo", slowdown_floor_s=10))
    assert result.per_user["b"]["mean_slowdown"] == pytest.approx(101 / 10)


def test_helpers():
    assert percentile([], 95) == 0
    assert percentile([1, 2, 3, 4, 5], 50) == 3
    assert percentile([0, 10], 95) == pytest.approx(9.5)
    assert jain_index([1, 1, 1]) == 1
    assert jain_index([1, 0, 0]) == pytest.approx(1 / 3)


def test_a_job_wider_than_the_lab_is_refused():
    with pytest.raises(TraceError):
        simulate(trace(("a", 0, 10, 8)), SimConfig(gpus=4))


def write(tmp_path, text: str):
    path = tmp_path / "trace.csv"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text,problem",
    [
        ("job_id,user,submit_s,duration_s\n1,a,0,5\n", "missing gpus"),
        ("job_id,user,submit_s,duration_s,gpus\n1,a,zero,5,1\n", "line 2"),
        ("job_id,user,submit_s,duration_s,gpus\n1,a,0,5,0\n", "line 2"),
        ("job_id,user,submit_s,duration_s,gpus\n1,a,0,-5,1\n", "line 2"),
    ],
)
def test_bad_traces_are_named(tmp_path, text, problem):
    with pytest.raises(TraceError, match=problem):
        load_trace(write(tmp_path, text))


def test_replay_trace_prints_the_figures_as_json(tmp_path):
    path = write(tmp_path, "job_id,user,submit_s,duration_s,gpus\n1,u,0,100,2\n2,u,10,50,1\n3,v,20,50,1\n")
    out = io.StringIO()
    call_command("replay_trace", str(path), "--gpus", "2", "--policy", "fifo", "--json", stdout=out)
    figures = json.loads(out.getvalue())
    for key in ("mean_wait_s", "p95_wait_s", "mean_jct_s", "utilisation", "idle_gpu_hours_while_waiting", "jain_index"):
        assert isinstance(figures[key], float)
    assert figures["mean_wait_s"] == pytest.approx(170 / 3)
    assert set(figures["per_user"]) == {"u", "v"} and figures["per_user"]["v"]["jobs"] == 1
    text = io.StringIO()
    call_command("replay_trace", str(path), "--gpus", "2", stdout=text)
    assert "mean wait" in text.getvalue() and "Jain's index" in text.getvalue()


def test_replay_trace_refuses_bad_arguments(tmp_path):
    with pytest.raises(CommandError, match="Cannot read"):
        call_command("replay_trace", str(tmp_path / "nope.csv"))
    path = write(tmp_path, "job_id,user,submit_s,duration_s,gpus\n1,u,0,100,1\n")
    with pytest.raises(CommandError, match="multiple"):
        call_command("replay_trace", str(path), "--gpus", "3", "--gpus-per-node", "2")


def test_bench_scheduler_prints_pass_times():
    out = io.StringIO()
    call_command("bench_scheduler", "--queued", "300", "--gpus", "8", "--repeats", "2", "--json", stdout=out)
    figures = json.loads(out.getvalue())
    assert figures["queued"] == 300 and figures["nodes"] == 8
    assert {"pass_ms_median", "pass_ms_p95"} <= set(figures)
    assert figures["starts"] + figures["waiting"] == 300


def test_predictions_learn_only_from_jobs_that_finished_before_the_submission():
    from bench.simulate import Simulation

    # j0 runs 0-100; j1 (50-350) comes before j0 ends: no history yet. j2 comes at 200: only j0 has finished.
    # j3 has another GPU count: not the same work.
    jobs = trace(("u", 0, 100, 1), ("u", 50, 300, 1), ("u", 200, 40, 1), ("u", 300, 50, 2))
    sim = Simulation(jobs, SimConfig(gpus=4))
    sim.run()
    assert [job.expected for job in sim.jobs] == [HOUR, HOUR, 100, HOUR]
    unpredicted = Simulation(jobs, SimConfig(gpus=4, predict=False))
    unpredicted.run()
    assert [job.expected for job in unpredicted.jobs] == [None] * 4


def test_the_replay_measures_the_estimated_starts_of_the_jobs_that_waited():
    # One GPU: j0 runs 0-1000 (the limit, 1 h, is all the policy knows); j1 (at 10) waits: its estimate at
    # submission is j0's limit, 3,600, and it starts at 1,000: off by 2,600 s, not within 25 % of its wait.
    result = simulate(trace(("u", 0, 1000, 1), ("u", 10, 50, 1)), SimConfig(gpus=1))
    assert result.eta.waited == 1 and result.eta.unknown == 0
    assert result.eta.median_abs_error_s == pytest.approx(2600) and result.eta.within_25 == 0
