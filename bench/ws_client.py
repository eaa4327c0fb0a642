"""The WebSocket clients of the fan-out benchmark (manage.py bench_fanout), run as their own process.

No Django here: asyncio and the `websockets` package, as light as can be so that the clients
take as little of the machine from the server as possible. The configuration comes as one JSON
line on stdin; progress lines and finally one JSON result line go to stdout. A later "stop" line
on stdin ends the run.

Per message: the receive time minus the newest `sampled_at` in it (the latency from sample to
client), and the sequence number: each client expects every update after its snapshot, so a gap,
a resync snapshot or a missing tail counts as lost messages.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import sys
import time

import websockets
from websockets.asyncio.client import connect

SEQ = re.compile(rb'"seq":(\d+)')
SAMPLED_AT = re.compile(rb'"sampled_at":"([^"]+)"')
TYPE = re.compile(rb'^\{"type":"(\w+)"')


class Stats:
    def __init__(self, clients: int) -> None:
        self.latencies_ms: list[float] = []
        self.first_seq = [None] * clients
        self.last_seq = [None] * clients
        self.received = [0] * clients
        self.gaps = 0
        self.resyncs = 0
        self.connected = 0
        self.failed = 0
        self.closed = 0
        self.measuring = False
        self._times: dict[bytes, float] = {}

    def sample_time(self, raw: bytes) -> float | None:
        newest = None
        for value in set(SAMPLED_AT.findall(raw)):
            epoch = self._times.get(value)
            if epoch is None:
                if len(self._times) > 10_000:
                    self._times.clear()
                epoch = self._times[value] = dt.datetime.fromisoformat(value.decode()).timestamp()
            newest = epoch if newest is None or epoch > newest else newest
        return newest

    def on_message(self, client: int, raw: bytes, received_at: float) -> None:
        kind = TYPE.match(raw)
        seq_match = SEQ.search(raw, 0, 64)
        if kind is None or seq_match is None:
            return
        seq = int(seq_match.group(1))
        if kind.group(1) == b"snapshot":
            if self.first_seq[client] is None:
                self.first_seq[client] = seq
            else:
                self.resyncs += 1  # the server skipped this client ahead: what it skipped counts as lost
            self.last_seq[client] = seq
            return
        if kind.group(1) != b"update":
            return
        last = self.last_seq[client]
        if last is not None and seq != last + 1:
            self.gaps += max(0, seq - last - 1)
        self.last_seq[client] = seq
        self.received[client] += 1
        if self.measuring:
            sampled = self.sample_time(raw)
            if sampled is not None:
                self.latencies_ms.append((received_at - sampled) * 1000.0)

    def result(self) -> dict:
        final = max((seq for seq in self.last_seq if seq is not None), default=0)
        lost = 0
        for first, received in zip(self.first_seq, self.received, strict=True):
            if first is not None:
                lost += max(0, final - first - received)
        latencies = sorted(self.latencies_ms)

        def pct(p: float) -> float | None:
            if not latencies:
                return None
            return round(latencies[min(len(latencies) - 1, int(p / 100.0 * len(latencies)))], 1)

        return {
            "connected": self.connected,
            "failed": self.failed,
            "closed_early": self.closed,
            "messages": sum(self.received),
            "measured_messages": len(latencies),
            "p50_latency_ms": pct(50),
            "p90_latency_ms": pct(90),
            "p99_latency_ms": pct(99),
            "max_latency_ms": round(latencies[-1], 1) if latencies else None,
            "lost": lost,
            "gaps": self.gaps,
            "resyncs": self.resyncs,
            "final_seq": final,
        }


async def _client(index: int, config: dict, stats: Stats, done: asyncio.Event) -> None:
    headers = {"Authorization": f"Token {config['tokens'][index % len(config['tokens'])]}"}
    try:
        async with connect(
            config["url"],
            additional_headers=headers,
            origin=config.get("origin"),
            compression="deflate" if config.get("compression", "deflate") == "deflate" else None,
            open_timeout=60,
            ping_interval=None,
            max_size=2**22,
            max_queue=None,
        ) as socket:
            stats.connected += 1
            receiver = asyncio.ensure_future(_receive(index, socket, stats))
            stopper = asyncio.ensure_future(done.wait())
            await asyncio.wait({receiver, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if receiver.done() and not done.is_set():
                stats.closed += 1
            receiver.cancel()
            stopper.cancel()
    except (OSError, TimeoutError, websockets.WebSocketException):
        stats.failed += 1


async def _receive(index: int, socket, stats: Stats) -> None:
    # decode=False: bytes in, no UTF-8 decoding of ten kilobytes we only skim.
    while True:
        raw = await socket.recv(decode=False)
        stats.on_message(index, raw, time.time())


async def _stdin_line() -> str:
    return await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


async def main() -> None:
    config = json.loads(await _stdin_line())
    clients, rate = config["clients"], max(1, config.get("connect_per_s", 200))
    stats = Stats(clients)
    done = asyncio.Event()
    tasks = []
    for index in range(clients):
        tasks.append(asyncio.ensure_future(_client(index, stats=stats, config=config, done=done)))
        if (index + 1) % rate == 0:
            await asyncio.sleep(1.0)
    deadline = time.monotonic() + 120
    while stats.connected + stats.failed < clients and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    print(json.dumps({"event": "connected", "connected": stats.connected, "failed": stats.failed}), flush=True)
    # The warm-up starts once every client has had its first update (the collector's first tick may take a while
    # on a busy machine): a condition, not a guess of time.
    deadline = time.monotonic() + 120
    while sum(1 for n in stats.received if n) < stats.connected and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    await asyncio.sleep(config.get("warmup_s", 5))
    stats.measuring = True
    print(json.dumps({"event": "measuring"}), flush=True)
    # "count" asks how many latencies are measured so far (the runner measures until there are enough); "stop" ends.
    while (line := (await _stdin_line()).strip()) not in ("stop", ""):
        if line == "count":
            print(json.dumps({"event": "count", "measured": len(stats.latencies_ms)}), flush=True)
    stats.measuring = False
    done.set()
    if tasks:  # none with --watchers 0, and asyncio.wait refuses an empty set
        await asyncio.wait(tasks, timeout=30)
    print(json.dumps({"event": "result", **stats.result()}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
