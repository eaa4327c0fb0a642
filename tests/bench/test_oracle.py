"""The SRTF oracle on hand-made traces with known answers."""

import pytest

from bench.oracle import srtf_oracle
from bench.traces import TraceError, TraceJob


def trace(*rows) -> list[TraceJob]:
    return [
        TraceJob(job_id=str(n), user=user, submit_s=t, duration_s=d, gpus=g) for n, (user, t, d, g) in enumerate(rows)
    ]


def test_a_shorter_arrival_preempts_and_the_long_job_resumes_where_it_was():
    # One GPU: the 100 s job runs 10 s, the 20 s job preempts it, then it resumes with 90 s left.
    result = srtf_oracle(trace(("a", 0, 100, 1), ("b", 10, 20, 1)), gpus=1)
    assert result.mean_jct_s == pytest.approx((120 + 20) / 2)
    assert result.mean_wait_s == pytest.approx((20 + 0) / 2)
    assert result.preemptions == 1


def test_a_job_is_ranked_by_remaining_time_not_by_its_length():
    # At 60 the 100 s job has 40 s left, less than the 50 s newcomer: it keeps its GPU.
    result = srtf_oracle(trace(("a", 0, 100, 1), ("b", 60, 50, 1)), gpus=1)
    assert result.mean_wait_s == pytest.approx((0 + 40) / 2)
    assert result.preemptions == 0


def test_a_wide_job_that_does_not_fit_lets_narrower_work_run():
    # Two GPUs. At 1 the 2-GPU job ranks after job a (29 s left) and does not fit beside it; at 2 the long
    # 1-GPU job takes the free GPU. At 30 a ends, the 2-GPU job (40 s) outranks c (72 s left) and preempts it.
    result = srtf_oracle(trace(("a", 0, 30, 1), ("b", 1, 40, 2), ("c", 2, 100, 1)), gpus=2)
    assert result.mean_jct_s == pytest.approx((30 + 69 + 140) / 3)
    assert result.preemptions == 1
    assert result.idle_gpu_hours_while_waiting == 0


def test_a_job_wider_than_the_lab_is_refused():
    with pytest.raises(TraceError):
        srtf_oracle(trace(("a", 0, 10, 3)), gpus=2)
