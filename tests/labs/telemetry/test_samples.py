"""Sample checks, matching to the inventory, the simulator, minute buckets, health alerts, charts."""

import dataclasses
import datetime as dt
import logging

import pytest

from labs.models import GpuAlert, GpuMinute
from labs.telemetry.charts import gpu_charts
from labs.telemetry.health import HealthWatch, alert_acknowledge, alerts_apply
from labs.telemetry.history import MinuteBuckets, minutes_prune, minutes_save
from labs.telemetry.samples import GpuSample, GpuTarget, checked, match_targets, problem_with
from labs.telemetry.simulator import GpuSimulator
from tests.factories import NodeFactory, UserFactory

NOW = 1_760_000_000.0


def sample(**values):
    base = dict(
        node="gpu01",
        index=0,
        sampled_at=NOW,
        util_pct=50.0,
        mem_used_mb=1000.0,
        mem_total_mb=24564.0,
        temp_c=60.0,
        power_w=200.0,
    )
    return GpuSample(**{**base, **values})


def target(node="gpu01", index=0, gpu_id=1, uuid=None, status="ready", held=False):
    return GpuTarget(
        gpu_id=gpu_id,
        node=node,
        index=index,
        uuid=uuid,
        model="NVIDIA GeForce RTX 4090",
        memory_mb=24564,
        node_status=status,
        held=held,
    )


@pytest.mark.parametrize(
    "values,problem",
    [
        ({"mem_used_mb": -5.0}, "mem_used_mb -5 is outside"),
        ({"temp_c": 10_000.0}, "temp_c 10000 is outside"),
        ({"util_pct": 101.0}, "util_pct 101 is outside"),
        ({"power_w": float("nan")}, "power_w is not a number"),
        ({"power_w": float("inf")}, "power_w is not a number"),
        ({"mem_used_mb": 30_000.0}, "exceeds mem_total_mb"),
        ({"sampled_at": NOW + 3600}, "in the future"),
        ({"sampled_at": NOW - 3600}, "3600 s in the past"),
        ({"sampled_at": -1e18}, "in the past"),  # what one node key once sent, stalling every tick
        ({"sampled_at": 0.0}, "in the past"),
        ({"xid": -1}, "xid -1 is outside"),
        ({"util_pct": True}, "util_pct is not a number"),
    ],
)
def test_absurd_samples_have_a_problem(values, problem):
    assert problem in problem_with(sample(**values), now=NOW)


def test_sane_samples_pass_even_when_partial():
    assert problem_with(sample(), now=NOW) is None
    assert problem_with(GpuSample(node="gpu01", index=0, sampled_at=NOW), now=NOW) is None
    assert problem_with(sample(mem_used_mb=24564.0 * 1.005), now=NOW) is None  # rounding
    assert problem_with(sample(sampled_at=NOW - 60), now=NOW) is None  # a late push is fine


def test_dropped_samples_are_logged_once_per_gpu_and_reason(caplog):
    bad = [sample(node=f"bad{n}", temp_c=10_000.0) for n in range(2)] + [sample(node="bad0", temp_c=9_000.0)]
    with caplog.at_level(logging.WARNING, logger="labs.telemetry"):
        kept = checked([sample(), *bad], source="test", now=NOW)
    assert kept == [sample()]
    lines = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(lines) == 2 and "bad0/0" in lines[0] and "temp_c 10000" in lines[0]


def test_samples_are_matched_by_uuid_first_then_node_and_index(caplog):
    targets = [target(node="gpu01", index=0, gpu_id=1, uuid="GPU-a"), target(node="gpu02", index=0, gpu_id=2)]
    with caplog.at_level(logging.WARNING, logger="labs.telemetry"):
        matched = match_targets(
            [
                sample(node="gpu01", index=3, uuid="GPU-a", mem_total_mb=None),  # renumbered: the UUID wins
                sample(node="gpu02", index=0),
                sample(node="gpu99", index=0),
            ],
            targets,
            source="test",
        )
    assert sorted(matched) == ["gpu01/0", "gpu02/0"]
    assert matched["gpu01/0"].index == 0 and matched["gpu01/0"].mem_total_mb == 24564  # from the inventory
    assert "gpu99/0, which is not in the inventory" in caplog.text


def test_the_simulator_tells_the_same_story_twice_and_keeps_within_the_limits():
    targets = [target(node=f"gpu{n:02d}", gpu_id=n, held=n % 2 == 0) for n in range(1, 41)]
    one, two = GpuSimulator(seed=7), GpuSimulator(seed=7)
    for second in range(120):
        a, b = one.sample(targets, NOW + second), two.sample(targets, NOW + second)
        assert a == b
        assert all(problem_with(s, now=NOW + second) is None for s in a)
    busy = [s for s in a if int(s.node[3:]) % 2 == 0]
    idle = [s for s in a if int(s.node[3:]) % 2 == 1]
    assert all(s.mem_used_mb > 1000 for s in busy), "a held GPU is at work"
    assert all(s.util_pct == 0 and s.mem_used_mb == 0 and s.power_w < 30 for s in idle), "nobody holds it: it idles"
    assert max(s.temp_c for s in busy) > max(s.temp_c for s in idle)
    assert all(s.power_w > 100 for s in busy if s.util_pct > 50)


def test_the_simulator_puts_held_gpus_to_work_and_silences_down_nodes():
    sim = GpuSimulator(seed=1)
    targets = [target(node=f"gpu{n:02d}", gpu_id=n, held=True) for n in range(1, 11)]
    targets.append(target(node="gpu11", gpu_id=11, status="down"))
    for second in range(5):
        samples = sim.sample(targets, NOW + second)
    assert len(samples) == 10 and all(s.mem_used_mb > 1000 and s.power_w > 30 for s in samples)


def test_simulator_faults_for_demos():
    sim = GpuSimulator(seed=1, faults=["gpu01:temp", "gpu02:xid", "gpu03:bogus"])
    samples = {s.node: s for s in sim.sample([target("gpu01", gpu_id=1), target("gpu02", gpu_id=2)], NOW)}
    assert samples["gpu01"].temp_c >= 91 and samples["gpu02"].xid == 79


def test_minute_buckets_average_and_peak_each_sample_once():
    buckets = MinuteBuckets()
    minute = NOW - NOW % 60
    for second, util in enumerate([10.0, 30.0, 50.0]):
        buckets.add(1, sample(sampled_at=minute + second, util_pct=util, temp_c=60.0 + second))
    buckets.add(1, sample(sampled_at=minute + 2, util_pct=99.0))  # read twice: counted once
    buckets.add(1, sample(sampled_at=minute + 61, util_pct=70.0))  # the next minute
    assert buckets.due(minute + 60) == []  # not over long enough for late pushes
    (row,) = buckets.due(minute + 66)
    assert row.samples == 3 and row.util_avg == 30.0 and row.util_max == 50.0
    assert row.temp_max_c == 62.0 and row.minute == dt.datetime.fromtimestamp(minute, tz=dt.UTC)
    assert buckets.pending() == 1
    assert len(buckets.due(minute + 66, everything=True)) == 1


def test_a_minute_no_date_can_hold_is_dropped_and_the_others_written(caplog):
    buckets = MinuteBuckets()
    buckets.add(1, sample(sampled_at=NOW))
    buckets.add(2, sample(sampled_at=-1e18))  # let in by a check that knew no lower bound
    with caplog.at_level(logging.WARNING, logger="labs.telemetry"):
        rows = buckets.due(NOW + 120)
    assert [row.gpu_id for row in rows] == [1] and buckets.pending() == 0
    assert "dropped the minute of GPU 2" in caplog.text


@pytest.mark.django_db
def test_minutes_are_saved_replaced_and_pruned():
    node = NodeFactory(name="gpu01")
    gpu = node.gpus.get()
    minute = dt.datetime(2026, 1, 5, 10, 0, tzinfo=dt.UTC)
    assert minutes_save(rows=[GpuMinute(gpu_id=gpu.pk, minute=minute, samples=10, util_avg=5.0)]) == 1
    minutes_save(rows=[GpuMinute(gpu_id=gpu.pk, minute=minute, samples=60, util_avg=50.0)])
    minutes_save(rows=[GpuMinute(gpu_id=999_999, minute=minute, samples=1)])  # a GPU that is gone: skipped
    (row,) = GpuMinute.objects.all()
    assert (row.samples, row.util_avg) == (60, 50.0)
    assert minutes_prune(before=minute + dt.timedelta(minutes=1)) == 1
    assert not GpuMinute.objects.exists()


@pytest.mark.django_db
def test_a_hot_gpu_raises_one_alert_that_clears_when_it_cools(caplog):
    node = NodeFactory(name="gpu07")
    gpu = node.gpus.get()
    t = target(node="gpu07", gpu_id=gpu.pk)
    watch = HealthWatch(temp_threshold_c=87, hold_s=10, xid_ignored={43})
    assert watch.check([(t, sample(node="gpu07", temp_c=95.0))], NOW) == []  # a spike is not yet an alert
    with caplog.at_level(logging.WARNING, logger="labs.telemetry"):
        for second in range(1, 15):
            alerts_apply(changes=watch.check([(t, sample(node="gpu07", temp_c=95.0))], NOW + second), now=NOW + second)
    alert = GpuAlert.objects.get()
    assert alert.kind == "temperature" and alert.value == 95.0 and alert.is_open
    assert "Consider cordoning gpu07" in alert.message and "telemetry alert" in caplog.text
    assert watch.alerts_of(gpu.pk) == [{"kind": "temperature", "message": alert.message}]
    alerts_apply(changes=watch.check([(t, sample(node="gpu07", temp_c=86.0))], NOW + 20), now=NOW + 20)
    assert GpuAlert.objects.get().is_open  # within the hysteresis
    alerts_apply(changes=watch.check([(t, sample(node="gpu07", temp_c=70.0))], NOW + 21), now=NOW + 21)
    assert not GpuAlert.objects.get().is_open and watch.alerts_of(gpu.pk) == []


@pytest.mark.django_db
def test_an_xid_raises_once_per_new_code_and_ignored_codes_do_not():
    gpu = NodeFactory(name="gpu13").gpus.get()
    t = target(node="gpu13", gpu_id=gpu.pk)
    watch = HealthWatch(temp_threshold_c=87, hold_s=0, xid_ignored={43})
    for second, code in enumerate([0, 43, 79, 79, 79, 48]):
        alerts_apply(changes=watch.check([(t, sample(node="gpu13", xid=code))], NOW + second), now=NOW + second)
    alert = GpuAlert.objects.get()  # one open Xid alert, now about the latest code
    assert alert.kind == "xid" and alert.value == 48 and "double-bit ECC" in alert.message
    admin = UserFactory(role="admin")
    alert_acknowledge(alert=alert, by=admin)
    assert not alert.is_open and alert.acknowledged_by == admin
    # A new watch (the collector restarted) remembers which code was already alerted on.
    watch = HealthWatch(temp_threshold_c=87, hold_s=0, xid_ignored=set())
    watch.load()
    assert watch.check([(t, sample(node="gpu13", xid=48))], NOW + 10) == []


def test_charts_break_lines_at_gaps_and_scale_to_the_top():
    end = dt.datetime(2026, 1, 5, 11, 0, tzinfo=dt.UTC)
    rows = [
        GpuMinute(minute=end - dt.timedelta(minutes=m), samples=60, util_avg=50.0, util_max=100.0)
        for m in (60, 59, 58, 30, 29)
    ]
    util = gpu_charts(rows, memory_mb=24564, end=end)[0]
    assert util.title == "Utilisation" and util.latest == 50.0
    assert len(util.lines) == 2  # the half hour without samples breaks the line
    assert util.lines[0].split()[0] == "0.0,60.0"
    assert util.peak_lines[0].split()[0] == "0.0,0.0"
    memory = gpu_charts(rows, memory_mb=24564, end=end)[1]
    assert memory.lines == [] and memory.latest is None


def test_sample_is_a_plain_record():
    # Samples cross the cache as dicts; every field must survive the trip.
    assert GpuSample(**dataclasses.asdict(sample(xid=3, energy_j=1.0))) == sample(xid=3, energy_j=1.0)
