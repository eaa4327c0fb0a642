"""Forty RTX 4090s at work, for the run command, the demo and the tests.

A GPU the ledger says is held is at work; a GPU nobody holds idles, as it would in the lab.
Work comes in phases of a few minutes (a training run at full tilt, a lighter job, a notebook
that computes in bursts); busy GPUs draw power with their load and heat up with a lag, idle ones
cool down and sip a few watts that wander. Every GPU has its own seeded random stream, so two
simulators started alike tell the same story. Down nodes send nothing (and turn stale).
Faults can be injected for demos and tests: `gpu07:temp` overheats, `gpu13:xid` reports Xid 79.
"""

from __future__ import annotations

import dataclasses
import random
import zlib
from collections.abc import Iterable

from labs.telemetry.samples import GpuSample, GpuTarget

IDLE_POWER_W = 18.0
MAX_POWER_W = 450.0
ROOM_C = 30.0
# How fast the die follows its load: about a minute to get most of the way.
THERMAL_TAU_S = 45.0
# Workloads: (name, lowest and highest mean utilisation, chance per second of a stall or burst).
WORKLOADS = (("training", 90.0, 100.0, 0.03), ("light", 35.0, 70.0, 0.05), ("notebook", 0.0, 60.0, 0.25))


@dataclasses.dataclass
class _Gpu:
    rng: random.Random
    workload: tuple = WORKLOADS[0]
    phase_left_s: float = 0.0
    load: float = 0.0  # the workload's mean utilisation
    mem_target: float = 0.0
    util: float = 0.0
    mem_used: float = 0.0
    temp: float = ROOM_C + 2
    power: float = IDLE_POWER_W
    energy_j: float = 0.0
    last: float | None = None


def _power_for(util: float) -> float:
    return 30.0 + (MAX_POWER_W - 30.0) * (util / 100.0) ** 1.2


def _settled_temp(power: float) -> float:
    return ROOM_C + 2 + power * 0.115


class GpuSimulator:
    def __init__(self, *, seed: int = 4090, faults: Iterable[str] = ()) -> None:
        self.seed = seed
        self.faults = self._faults(faults)
        self._gpus: dict[str, _Gpu] = {}

    @staticmethod
    def _faults(specs: Iterable[str]) -> dict[str, set[str]]:
        faults: dict[str, set[str]] = {}
        for spec in specs:
            node, _, kind = spec.strip().partition(":")
            if node and kind in ("temp", "xid"):
                faults.setdefault(node, set()).add(kind)
        return faults

    def _gpu(self, target: GpuTarget) -> _Gpu:
        gpu = self._gpus.get(target.key)
        if gpu is None:
            # Simulated readings, not secrets: a seeded, repeatable generator is the point.
            rng = random.Random(self.seed * 1_000_003 + zlib.crc32(target.key.encode()))  # noqa: S311
            gpu = self._gpus[target.key] = _Gpu(rng=rng)
            if target.held:
                # Start warm, as if the simulator had been running all along.
                self._new_phase(gpu, target)
                gpu.util, gpu.mem_used = gpu.load, gpu.mem_target
                gpu.power = _power_for(gpu.util)
            gpu.temp = _settled_temp(gpu.power) + rng.uniform(-1, 1)
        return gpu

    def _new_phase(self, gpu: _Gpu, target: GpuTarget) -> None:
        rng = gpu.rng
        gpu.workload = rng.choice(WORKLOADS)
        _, low, high, _ = gpu.workload
        gpu.load = rng.uniform(low, high)
        gpu.mem_target = rng.uniform(0.15, 0.93) * target.memory_mb
        gpu.phase_left_s = rng.uniform(120, 1200)

    def sample(self, targets: Iterable[GpuTarget], now: float) -> list[GpuSample]:
        return [self._step(target, now) for target in targets if target.node_status != "down"]

    def _step(self, target: GpuTarget, now: float) -> GpuSample:
        gpu = self._gpu(target)
        rng = gpu.rng
        dt = 1.0 if gpu.last is None else max(0.0, min(now - gpu.last, 60.0))
        gpu.last = now
        if target.held:
            gpu.phase_left_s -= dt
            if gpu.phase_left_s <= 0 or gpu.mem_target == 0.0:
                self._new_phase(gpu, target)
            name, _, _, jumpy = gpu.workload
            util = gpu.load + rng.gauss(0, 3)
            if rng.random() < jumpy:
                # Training stalls on data now and then; a notebook computes in bursts.
                util = rng.uniform(85, 100) if name == "notebook" else util - rng.uniform(20, 60)
            gpu.util = min(100.0, max(0.0, util))
            gpu.mem_used += (gpu.mem_target - gpu.mem_used) * 0.5 + rng.gauss(0, 40)
            gpu.power = _power_for(gpu.util) + rng.gauss(0, 6)
        else:
            gpu.util = 0.0
            gpu.mem_target = 0.0
            gpu.mem_used = max(0.0, gpu.mem_used * 0.3 - 50)
            if rng.random() < 0.3:  # idle power wanders a watt or two, not on every reading
                gpu.power = IDLE_POWER_W + rng.uniform(-4, 6)
        gpu.mem_used = min(max(gpu.mem_used, 0.0), float(target.memory_mb))
        gpu.power = min(max(gpu.power, 8.0), MAX_POWER_W)
        gpu.temp += (_settled_temp(gpu.power) - gpu.temp) * min(1.0, dt / THERMAL_TAU_S)
        gpu.energy_j += gpu.power * dt

        faults = self.faults.get(target.node, set())
        temp = max(gpu.temp, 91.0 + rng.uniform(0, 3)) if "temp" in faults else gpu.temp
        return GpuSample(
            node=target.node,
            index=target.index,
            sampled_at=now,
            uuid=target.uuid,
            model=target.model,
            util_pct=float(round(gpu.util)),
            mem_used_mb=float(round(gpu.mem_used)),
            mem_total_mb=float(target.memory_mb),
            temp_c=float(round(temp)),
            power_w=round(gpu.power, 1),
            energy_j=round(gpu.energy_j, 1),
            xid=79 if "xid" in faults else 0,
        )
