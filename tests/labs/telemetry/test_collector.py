"""The collector on PostgreSQL and the Redis channel layer: what it publishes, stores, drops and remembers."""

import dataclasses
import datetime as dt
import logging
import time

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.core.cache import cache

from labs.inventory import demo_specs
from labs.models import GpuAlert, GpuMinute, Node
from labs.services import inventory_sync
from labs.telemetry import store
from labs.telemetry.collector import GROUP, Collector
from labs.telemetry.health import HealthWatch
from labs.telemetry.samples import GpuSample
from labs.telemetry.simulator import GpuSimulator
from labs.telemetry.sources import AgentSource, SimulatorSource
from tests.factories import AllocationFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


class ScriptedSource:
    """A source that says what the test tells it to."""

    name = "scripted"
    blocking = False

    def __init__(self):
        self.samples: list[GpuSample] = []

    def collect(self, targets, now):
        return list(self.samples)


def reading(node, *, at, util=50.0, temp=60.0, mem=1000.0, index=0, **values):
    return GpuSample(
        node=node,
        index=index,
        sampled_at=at,
        util_pct=util,
        temp_c=temp,
        mem_used_mb=mem,
        mem_total_mb=24564.0,
        power_w=200.0,
        **values,
    )


@pytest.fixture
def clean_store():
    """Forget the telemetry keys in Redis (only ours: the cache is shared with other suites' keys)."""

    def wipe():
        nodes = list(Node.objects.values_list("name", flat=True)) + [f"gpu{n:02d}" for n in range(1, 41)]
        cache.delete_many(
            [store.LATEST_KEY, store.LEASE_KEY, store.DROPPED_KEY] + [store.INBOX_PREFIX + n for n in nodes]
        )

    wipe()
    yield
    wipe()


@pytest.fixture
def lab(clean_store):
    inventory_sync(specs=demo_specs(4), source="demo")
    return {node.name: node for node in Node.objects.prefetch_related("gpus")}


def make_collector(source, **kwargs):
    watch = HealthWatch(temp_threshold_c=87, hold_s=0, xid_ignored=set())
    return Collector(source=source, interval_s=1, stale_after_s=30, health=watch, **kwargs)


def listen(coroutine_factory):
    """Run a scenario with a channel in the "gpus" group; returns (scenario result, messages received)."""

    async def scenario():
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(GROUP, channel)
        try:
            result = await coroutine_factory()
            messages = []
            while True:
                try:
                    messages.append(await _receive(layer, channel, 0.3))
                except TimeoutError:
                    break
            return result, messages
        finally:
            await layer.group_discard(GROUP, channel)

    return async_to_sync(scenario)()


async def _receive(layer, channel, timeout):
    import asyncio

    return await asyncio.wait_for(layer.receive(channel), timeout)


def test_the_first_tick_sends_every_gpu_then_only_what_changed(lab):
    source = ScriptedSource()
    collector = make_collector(source)
    t0 = time.time()

    async def ticks():
        source.samples = [reading(name, at=t0) for name in lab]
        first = await collector.tick(now=t0)
        source.samples = [reading(name, at=t0 + 1, util=90.0 if name == "gpu02" else 50.0) for name in lab]
        second = await collector.tick(now=t0 + 1)
        third = await collector.tick(now=t0 + 2)  # nothing new: nothing sent
        return first, second, third

    (first, second, third), messages = listen(ticks)
    assert [m["seq"] for m in messages] == [first.seq, second.seq] and second.seq == first.seq + 1
    assert third.published is False and third.seq == second.seq
    assert len(messages[0]["gpus"]) == 4
    (changed,) = messages[1]["gpus"]
    assert changed["node"] == "gpu02" and changed["util_pct"] == 90
    assert messages[1]["changed"] == {"gpu02/0": ["util_pct"]}
    assert set(messages[0]["changed"]["gpu01/0"]) >= {"util_pct", "holders", "stale", "sampled_at"}
    assert changed["holders"] == [] and changed["stale"] is False and changed["node_status"] == "ready"
    latest = store.read_latest()
    assert latest["seq"] == second.seq and sorted(latest["gpus"]) == ["gpu01/0", "gpu02/0", "gpu03/0", "gpu04/0"]
    assert latest["gpus"]["gpu02/0"]["util_pct"] == 90


def test_absurd_samples_are_dropped_with_a_log_line_and_never_stored(lab, caplog):
    source = ScriptedSource()
    collector = make_collector(source)
    t0 = time.time()

    async def ticks():
        source.samples = [reading("gpu01", at=t0, temp=60.0)]
        await collector.tick(now=t0)
        source.samples = [
            reading("gpu01", at=t0 + 1, temp=10_000.0),
            reading("gpu02", at=t0 + 1, mem=-5.0),
            reading("gpu03", at=t0 + 1, util=float("nan")),
            reading("nowhere", at=t0 + 1),
        ]
        return await collector.tick(now=t0 + 1)

    with caplog.at_level(logging.WARNING, logger="labs.telemetry"):
        report, _ = listen(ticks)
    assert report.samples == 0 and report.dropped == 4
    latest = store.read_latest()["gpus"]
    assert latest["gpu01/0"]["temp_c"] == 60  # the last good reading stands
    assert latest["gpu02/0"]["mem_used_mb"] is None and latest["gpu03/0"]["util_pct"] is None
    text = caplog.text
    assert "temp_c 10000 is outside" in text and "mem_used_mb -5 is outside" in text
    assert "util_pct is not a number" in text and "nowhere/0, which is not in the inventory" in text
    assert store.dropped_total() == 4


def test_a_node_without_samples_for_30_s_turns_stale_and_that_is_sent(lab):
    source = ScriptedSource()
    collector = make_collector(source)
    t0 = time.time() - 40

    async def ticks():
        source.samples = [reading(name, at=t0) for name in lab]
        await collector.tick(now=t0)
        source.samples = [reading(name, at=t0 + 31) for name in lab if name != "gpu03"]
        return await collector.tick(now=t0 + 31)

    _, messages = listen(ticks)
    # The others sent the same values again: only gpu03 changed, by going stale.
    (changed,) = messages[-1]["gpus"]
    assert changed["node"] == "gpu03" and changed["stale"] is True and changed["util_pct"] == 50


def test_holders_come_from_the_ledger_and_a_new_holder_is_a_change(lab):
    source = ScriptedSource()
    collector = make_collector(source)
    t0 = time.time()
    student = UserFactory(username="maria", role="student")

    async def first():
        source.samples = [reading(name, at=t0) for name in lab]
        return await collector.tick(now=t0)

    listen(first)
    gpu = lab["gpu04"].gpus.get()
    AllocationFactory(user=student, gpu=gpu, kind="notebook", ref="notebook:17")

    async def second():
        return await collector.tick(now=t0 + 1)

    _, messages = listen(second)
    (changed,) = messages[0]["gpus"]
    (holder,) = changed["holders"]
    assert changed["node"] == "gpu04"
    assert holder["user"] == "maria" and holder["kind"] == "notebook" and holder["ref"] == "notebook:17"
    assert holder["share"] == 1.0 and isinstance(holder["since"], str)


def test_finished_minutes_land_in_the_database(lab):
    collector = make_collector(SimulatorSource(GpuSimulator(seed=3)))
    minute = (time.time() // 60 - 3) * 60

    async def ticks():
        for second in range(0, 60, 5):
            await collector.tick(now=minute + second)
        await collector.tick(now=minute + 70)  # the first minute is over (and past the grace)
        await collector.close()

    listen(ticks)
    rows = GpuMinute.objects.filter(minute=dt.datetime.fromtimestamp(minute, tz=dt.UTC))
    assert rows.count() == 4 and {row.samples for row in rows} == {12}
    assert GpuMinute.objects.count() == 8  # close() writes the unfinished minute too


def test_a_fault_raises_an_alert_that_admins_see_in_the_state(lab):
    collector = make_collector(SimulatorSource(GpuSimulator(seed=3, faults=["gpu02:temp", "gpu03:xid"])))

    async def ticks():
        return await collector.tick()

    listen(ticks)
    alerts = {(a.gpu.node.name, a.kind) for a in GpuAlert.objects.select_related("gpu__node")}
    assert alerts == {("gpu02", "temperature"), ("gpu03", "xid")}
    latest = store.read_latest()["gpus"]
    assert latest["gpu02/0"]["alerts"][0]["kind"] == "temperature"
    assert latest["gpu01/0"]["alerts"] == []


def test_a_second_collector_stands_by_while_the_first_holds_the_lease(lab):
    one = make_collector(SimulatorSource(GpuSimulator(seed=1)))
    two = make_collector(SimulatorSource(GpuSimulator(seed=2)))

    async def ticks():
        first = await one.tick()
        standby = await two.tick()
        await one.close()  # releases the lease
        taken = await two.tick()
        return first, standby, taken

    (first, standby, taken), messages = listen(ticks)
    assert first.published and not standby.active and not standby.published
    assert taken.active and taken.seq == first.seq + 1  # continues the sequence
    assert [m["seq"] for m in messages] == [first.seq, taken.seq]


def test_the_agent_source_reads_what_nodes_pushed(lab):
    t0 = time.time()
    store.push_to_inbox("gpu01", [reading("gpu01", at=t0, util=77.0)])
    collector = make_collector(AgentSource())

    async def ticks():
        return await collector.tick(now=t0 + 0.5)

    report, messages = listen(ticks)
    by_node = {gpu["node"]: gpu for gpu in messages[0]["gpus"]}
    assert report.samples == 1 and by_node["gpu01"]["util_pct"] == 77 and by_node["gpu02"]["stale"] is True


def test_a_poisoned_push_from_before_the_fix_does_not_stall_the_lab(clean_store, caplog):
    """One node key once pushed sampled_at -1e18, which the API kept: every tick then failed and all 40 GPUs went
    stale. The push still sits in gpu17's inbox; the other 39 nodes are published fresh, gpu17 shows stale."""
    inventory_sync(specs=demo_specs(40), source="demo")
    t0 = time.time()
    for n in range(1, 41):
        store.push_to_inbox(f"gpu{n:02d}", [reading(f"gpu{n:02d}", at=t0, util=float(n))])
    poisoned = dataclasses.asdict(reading("gpu17", at=-1e18))
    cache.set(store.INBOX_PREFIX + "gpu17", [poisoned], timeout=60)
    collector = make_collector(AgentSource())

    async def ticks():
        return await collector.tick(now=t0 + 0.5)

    with caplog.at_level(logging.WARNING, logger="labs.telemetry"):
        report, messages = listen(ticks)
    assert report.published and report.samples == 39 and report.dropped == 1
    by_node = {gpu["node"]: gpu for gpu in messages[0]["gpus"]}
    assert len(by_node) == 40
    fresh = [node for node, gpu in by_node.items() if not gpu["stale"] and gpu["util_pct"] is not None]
    assert len(fresh) == 39 and "gpu17" not in fresh
    assert by_node["gpu17"]["stale"] is True and by_node["gpu17"]["sampled_at"] is None
    assert by_node["gpu16"]["util_pct"] == 16 and store.read_latest()["gpus"]["gpu40/0"]["util_pct"] == 40
    assert "dropped a agent sample of gpu17/0: sample time" in caplog.text and "in the past" in caplog.text


def test_one_gpu_whose_state_cannot_be_built_is_skipped_and_the_tick_goes_on(lab, caplog):
    """Whatever slipped past the checks (a bound an older version lacked), one GPU never stops the tick."""
    source = ScriptedSource()
    collector = make_collector(source)
    t0 = time.time()

    async def ticks():
        source.samples = [reading(name, at=t0) for name in lab]
        await collector.tick(now=t0)
        collector.latest["gpu02/0"] = reading("gpu02", at=-1e18)  # what the collector kept before the fix
        source.samples = [reading(name, at=t0 + 1, util=70.0) for name in lab if name != "gpu02"]
        second = await collector.tick(now=t0 + 1)
        third = await collector.tick(now=t0 + 2)
        return second, third

    with caplog.at_level(logging.WARNING, logger="labs.telemetry"):
        (second, third), messages = listen(ticks)
    assert second.published and third.seq == second.seq  # the next tick runs too, with nothing new to send
    changed = {gpu["node"]: gpu for gpu in messages[-1]["gpus"]}
    assert sorted(changed) == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert changed["gpu02"]["stale"] is True and changed["gpu02"]["util_pct"] is None
    assert all(changed[node]["util_pct"] == 70 and not changed[node]["stale"] for node in ("gpu01", "gpu03", "gpu04"))
    assert caplog.text.count("skipped the sample of gpu02/0") == 1


def test_a_gpu_that_leaves_the_inventory_is_sent_as_removed(lab):
    collector = make_collector(SimulatorSource(GpuSimulator(seed=1)))

    async def first():
        return await collector.tick()

    listen(first)
    lab["gpu04"].gpus.all().delete()

    async def second():
        return await collector.tick()

    _, messages = listen(second)
    assert messages[-1]["removed"] == ["gpu04/0"]
    assert "gpu04/0" not in store.read_latest()["gpus"]


def test_a_quiet_lab_still_sends_a_heartbeat_so_clients_know_the_stream_is_alive(lab):
    source = ScriptedSource()
    collector = make_collector(source)
    t0 = time.time()
    source.samples = [reading(name, at=t0) for name in lab]

    async def ticks():
        first = await collector.tick(now=t0)
        quiet = [await collector.tick(now=t0 + second) for second in range(1, 10)]
        beat = await collector.tick(now=t0 + 10)
        return first, quiet, beat

    (first, quiet, beat), messages = listen(ticks)
    assert not any(report.published for report in quiet)
    assert beat.published and beat.seq == first.seq + 1
    assert messages[-1]["gpus"] == [] and messages[-1]["seq"] == beat.seq
