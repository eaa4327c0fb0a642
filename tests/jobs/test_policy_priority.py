"""Multifactor priority: class, fair share with decaying usage, age, short jobs first."""

import math

import pytest

from jobs.policy import (
    ClusterState,
    PolicyConfig,
    PriorityModel,
    UsageMeter,
    decayed_usage,
    fair_share_factors,
    schedule,
)
from jobs.policy.priority import decayed_gpu_seconds, short_factor
from tests.jobs.helpers import DAY, HOUR, NOW, lab, queued

WEEK = 7 * DAY


def order(state: ClusterState) -> list:
    return [w.job_id for w in schedule(state).waiting]


def test_priority_class_comes_first():
    state = ClusterState(
        now=NOW,
        nodes=lab(1, busy=("gpu01",)),
        queued=[queued("low", klass="low", age=DAY), queued("normal", age=HOUR), queued("high", klass="high")],
    )
    assert order(state) == ["high", "normal", "low"]


def test_the_user_who_used_less_goes_first_and_starts():
    state = ClusterState(
        now=NOW,
        nodes=lab(1),
        queued=[queued("a1", "alice", age=60), queued("b1", "bob")],
        usage={"alice": 100 * HOUR, "bob": 1 * HOUR},
    )
    result = schedule(state)
    assert [s.job_id for s in result.starts] == ["b1"]
    assert result.waiting[0].job_id == "a1" and result.waiting[0].position == 1


def test_fair_share_factor_is_two_to_the_minus_usage_over_shares():
    factors = fair_share_factors({"alice": 3.0, "bob": 1.0}, ["alice", "bob"], {})
    assert factors["alice"] == pytest.approx(2 ** (-0.75 / 0.5))
    assert factors["bob"] == pytest.approx(2 ** (-0.25 / 0.5))
    # Someone who used nothing gets the whole factor; a user with twice the shares is penalised half as much.
    assert fair_share_factors({"alice": 3.0}, ["alice", "carol"], {})["carol"] == 1.0
    weighted = fair_share_factors({"alice": 1.0, "bob": 1.0}, ["alice", "bob"], {"alice": 2.0})
    assert weighted["alice"] == pytest.approx(2 ** (-0.5 / (2 / 3)))
    assert weighted["bob"] == pytest.approx(2 ** (-0.5 / (1 / 3)))


def test_usage_decays_with_the_half_life():
    hour_now = decayed_gpu_seconds(1, NOW - HOUR, NOW, NOW, WEEK)
    hour_a_week_ago = decayed_gpu_seconds(1, NOW - WEEK - HOUR, NOW - WEEK, NOW, WEEK)
    assert hour_now == pytest.approx(HOUR, rel=3e-3)  # the last hour has decayed a little already
    assert hour_a_week_ago == pytest.approx(hour_now / 2, rel=1e-9)
    two_weeks = decayed_gpu_seconds(2, NOW - 2 * WEEK - HOUR, NOW - 2 * WEEK, NOW, WEEK)
    assert two_weeks == pytest.approx(2 * hour_now / 4, rel=1e-9)
    # An open ledger row (ends_at None) counts up to now; the future counts nothing.
    usage = decayed_usage(
        [("alice", NOW - HOUR, None, 1), ("alice", NOW - WEEK - HOUR, NOW - WEEK, 1), ("bob", NOW + 10, None, 4)],
        now=NOW,
        half_life_s=WEEK,
    )
    assert usage == {"alice": pytest.approx(1.5 * hour_now, rel=1e-9)}


def test_usage_meter_agrees_with_the_ledger_formula():
    rows = [("alice", NOW - 3 * DAY, NOW - 2 * DAY, 2), ("bob", NOW - DAY, NOW - HOUR, 1), ("alice", NOW - DAY, NOW, 1)]
    meter = UsageMeter(WEEK)
    for user, start, end, gpus in rows:
        meter.add(user, gpus, start, end)
    read = meter.read(NOW + DAY, [("bob", NOW, 1)])
    expected = decayed_usage(rows + [("bob", NOW, None, 1)], now=NOW + DAY, half_life_s=WEEK)
    assert read == pytest.approx(expected, rel=1e-9)


def test_age_breaks_ties_and_stops_growing_at_max_age():
    config = PolicyConfig()
    state = ClusterState(
        now=NOW,
        nodes=lab(1, busy=("gpu01",)),
        queued=[queued("new"), queued("old", age=HOUR), queued("ancient", age=30 * DAY), queued("older", age=8 * DAY)],
    )
    model = PriorityModel(state, config)
    ages = {job.id: model.breakdown(job).age for job in state.queued}
    assert ages["new"] == 0 and ages["old"] == pytest.approx(config.weight_age * HOUR / config.max_age_s)
    assert ages["ancient"] == ages["older"] == config.weight_age
    assert order(state)[:2] == ["ancient", "older"]  # capped alike: then first come, first served
    assert order(state)[2:] == ["old", "new"]


@pytest.mark.parametrize(
    "runtime,factor",
    [(60, 1.0), (300, 1.0), (HOUR, 1 - math.log(12) / math.log(2016)), (WEEK, 0.0), (30 * DAY, 0.0)],
)
def test_short_factor_falls_on_a_log_scale(runtime, factor):
    assert short_factor(runtime, PolicyConfig()) == pytest.approx(factor)


def test_short_work_goes_before_long_work_of_the_same_kind():
    state = ClusterState(
        now=NOW,
        nodes=lab(1, busy=("gpu01",)),
        queued=[queued("week", runtime=WEEK, age=60), queued("day", runtime=DAY, age=30), queued("hour")],
    )
    assert order(state) == ["hour", "day", "week"]


def test_breakdown_adds_up():
    state = ClusterState(
        now=NOW, nodes=lab(1), queued=[queued("j", klass="high", age=DAY, runtime=4 * HOUR)], usage={"alice": HOUR}
    )
    model = PriorityModel(state, PolicyConfig())
    parts = model.breakdown(state.queued[0])
    assert parts.total == pytest.approx(model.of(state.queued[0]))
    assert parts.total == pytest.approx(parts.priority_class + parts.fair_share + parts.age + parts.short)
    assert parts.priority_class == 10_000 and parts.fair_share == pytest.approx(150)
