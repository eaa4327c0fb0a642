"""The fan-out benchmark: the real ASGI server, the real collector, N WebSocket clients, all on loopback.

    python manage.py bench_fanout --clients 1000 --duration-s 600 [--json]

It makes a throwaway SQLite database (40 RTX 4090 nodes, people of each role with API tokens,
most GPUs held so that most of them change every tick: the heavy case), then starts on
127.0.0.1: uvicorn with portal.asgi (the Redis channel layer), `telemetry_collect` with the
simulator at 1 Hz, and a client process (bench/ws_client.py). It measures the p99
latency from sample time to client receive, lost updates (sequence numbers), and the server's
RSS once the clients are connected and at the end. Everything it starts stops by itself.

It publishes on the channel group "gpus" of the Redis it is given: use a Redis database no
portal is listening on (--redis-url redis://127.0.0.1:6379/13).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from bench.kit import (
    ROOT,
    client_event,
    cpu_s,
    free_port,
    rss_mb,
    setup_database,
    stop_all,
    throwaway_secrets,
    wait_up,
)

# How long past --duration-s the run waits for one measured update per client before it gives up.
MORE_S = 120

SETUP = """
import datetime as dt, json, os
from django.utils import timezone
from labs.inventory import demo_specs
from labs.models import Allocation, Gpu
from labs.services import inventory_sync
from accounts.models import Course, Enrollment, User
from accounts.services import token_issue

gpus, held = int(os.environ["BENCH_GPUS"]), int(os.environ["BENCH_HELD"])
inventory_sync(specs=demo_specs(gpus), source="bench")
course = Course.objects.create(code="BENCH-1", name="Bench",
                               term_start=dt.date(2000, 1, 1), term_end=dt.date(2999, 1, 1))
users = {role: [User.objects.create(username=f"bench-{role}-{n}", role=role) for n in range(count)]
         for role, count in {"student": 50, "teacher": 5, "admin": 2}.items()}
for student in users["student"][:25]:
    Enrollment.objects.create(user=student, course=course)
course.teachers.add(users["teacher"][0])
for number, gpu in enumerate(Gpu.objects.order_by("node__name")[:held]):
    Allocation.objects.create(user=users["student"][number % 50], course=course if number % 2 else None,
                              kind="notebook", ref=f"notebook:bench{number}", gpu=gpu, starts_at=timezone.now())
# Clients by role as a lab has them, per hundred: 85 students, 10 teachers, 5 admins.
tokens = {role: [token_issue(user=user) for user in people] for role, people in users.items()}
mix = []
for n in range(100):
    role = "admin" if n % 20 == 0 else "teacher" if n % 10 == 1 else "student"
    mix.append(tokens[role][n % len(tokens[role])])
print(json.dumps(mix))
"""


class Command(BaseCommand):
    help = "Fan-out benchmark of the live GPU WebSocket: p99 latency, lost updates, server memory (loopback only)."

    def add_arguments(self, parser):
        parser.add_argument("--clients", type=int, default=1000)
        parser.add_argument("--duration-s", type=int, default=600, help="Measured time once all clients are on.")
        parser.add_argument("--json", action="store_true", help="Print one JSON object instead of the figures.")
        parser.add_argument("--gpus", type=int, default=40)
        parser.add_argument("--held", type=int, default=32, help="GPUs held in the ledger (busy: they change).")
        parser.add_argument("--interval-ms", type=int, default=1000)
        parser.add_argument("--redis-url", default=settings.REDIS_URL or "", help="Default: REDIS_URL.")
        parser.add_argument("--compression", choices=["deflate", "none"], default="deflate",
                            help="What the clients offer (browsers offer deflate).")  # fmt: skip
        parser.add_argument(
            "--workers", type=int, default=1, help="uvicorn worker processes (each relays every tick to its clients)."
        )
        parser.add_argument(
            "--server-deflate",
            action=argparse.BooleanOptionalAction,
            default=False,
            help="Let uvicorn accept permessage-deflate (browsers ask for it; scripts/serve.sh declines it unless"
            " WS_PER_MESSAGE_DEFLATE=true, and so does this benchmark unless told).",
        )
        parser.add_argument("--connect-per-s", type=int, default=200)
        parser.add_argument("--warmup-s", type=int, default=10)

    def handle(self, *args, **options):
        if not options["redis_url"]:
            raise CommandError("The benchmark runs the Redis channel layer: give --redis-url or set REDIS_URL.")
        if not 1 <= options["clients"] <= 20_000 or options["duration_s"] < 1:
            raise CommandError("--clients must be 1..20000 and --duration-s at least 1.")
        if not 1 <= options["workers"] <= 16:
            raise CommandError("--workers must be 1..16.")
        if not 1 <= options["gpus"] <= 99 or not 0 <= options["held"] <= options["gpus"]:
            raise CommandError("--gpus must be 1..99 and --held 0..--gpus.")
        self.quiet = options["json"]
        with tempfile.TemporaryDirectory(prefix="bench-fanout-") as workdir:
            result = self._run(options, Path(workdir))
        if options["json"]:
            self.stdout.write(json.dumps(result))
        else:
            self._print(result)

    def _say(self, text: str) -> None:
        if not self.quiet:
            self.stderr.write(text)

    def _env(self, options, workdir: Path) -> dict[str, str]:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("TELEMETRY_", "DATABASE_", "DJANGO_")) and key not in ("DEBUG", "REDIS_URL")
        }
        env.update(
            DJANGO_SETTINGS_MODULE="portal.settings",
            DATABASE_URL=f"sqlite:///{workdir / 'bench.sqlite3'}",
            PORTAL_VAR_DIR=str(workdir),
            REDIS_URL=options["redis_url"],
            DEBUG="false",
            ALLOWED_HOSTS="127.0.0.1",
            SECURE_SSL_REDIRECT="false",
            TELEMETRY_SOURCE="simulator",
            TELEMETRY_COLLECTOR="process",
            TELEMETRY_INTERVAL_MS=str(options["interval_ms"]),
            LOG_LEVEL="WARNING",
            PYTHONUNBUFFERED="1",
        )
        env.update(throwaway_secrets())
        return env

    def _run(self, options, workdir: Path) -> dict:
        env = self._env(options, workdir)
        python = sys.executable
        self._say("==> a throwaway database with the lab, people and tokens")
        tokens = setup_database(
            env, SETUP, extra_env={"BENCH_GPUS": str(options["gpus"]), "BENCH_HELD": str(options["held"])}, timeout=300
        )

        port = free_port()
        logs = {name: open(workdir / f"{name}.log", "w") for name in ("server", "collector")}  # noqa: SIM115
        processes: dict[str, subprocess.Popen] = {}
        try:
            processes["server"] = subprocess.Popen(  # noqa: S603 - this interpreter running uvicorn
                [python, "-m", "uvicorn", "portal.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
                + ["--lifespan", "on", "--log-level", "warning", "--no-access-log", "--backlog", "4096"]
                + ["--workers", str(options["workers"])]
                + ([] if options["server_deflate"] else ["--ws-per-message-deflate", "false"]),
                cwd=ROOT,
                env=env,
                stdout=logs["server"],
                stderr=subprocess.STDOUT,
            )
            wait_up(f"http://127.0.0.1:{port}/healthz", processes["server"])
            rss_idle = rss_mb(processes["server"].pid)
            processes["collector"] = subprocess.Popen(  # noqa: S603 - this interpreter, our own manage.py
                [python, "manage.py", "telemetry_collect"],
                cwd=ROOT,
                env=env,
                stdout=logs["collector"],
                stderr=subprocess.STDOUT,
            )
            time.sleep(2)
            return self._measure(options, tokens, port, processes, rss_idle)
        finally:
            stop_all(processes, logs, workdir, self._say)

    @staticmethod
    def _enough(client: subprocess.Popen, options: dict) -> bool:
        """At least one measured update per client: on a busy machine the duration alone may measure none."""
        client.stdin.write("count\n")
        client.stdin.flush()
        return client_event(client, "count")["measured"] >= options["clients"]

    def _measure(self, options, tokens, port, processes, rss_idle) -> dict:
        server = processes["server"]
        client = subprocess.Popen(  # noqa: S603 - this interpreter, our own client module
            [sys.executable, "-m", "bench.ws_client"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        processes["clients"] = client
        config = {
            "url": f"ws://127.0.0.1:{port}/ws/gpus/",
            "origin": f"http://127.0.0.1:{port}",
            "tokens": tokens,
            "clients": options["clients"],
            "compression": options["compression"],
            "connect_per_s": options["connect_per_s"],
            "warmup_s": options["warmup_s"],
        }
        client.stdin.write(json.dumps(config) + "\n")
        client.stdin.flush()
        self._say(f"==> connecting {options['clients']} WebSocket clients to ws://127.0.0.1:{port}/ws/gpus/")
        connected = client_event(client, "connected")
        self._say(f"    {connected['connected']} connected, {connected['failed']} failed; warming up")
        client_event(client, "measuring")
        load_start = os.getloadavg()[0]  # the figures mean little on a machine busy with other work: say how busy
        rss_start, cpu_start, started = rss_mb(server.pid), cpu_s(server.pid), time.monotonic()
        client_cpu_start = cpu_s(client.pid)
        rss_series = [rss_start]
        self._say(f"==> measuring for {options['duration_s']} s (server RSS {rss_start} MB)")
        while (elapsed := time.monotonic() - started) < options["duration_s"] or not self._enough(client, options):
            time.sleep(min(10.0, max(0.5, options["duration_s"] - elapsed)))
            if server.poll() is not None or client.poll() is not None:
                raise CommandError("The server or the clients stopped during the run.")
            rss_series.append(rss_mb(server.pid))
            self._say(f"    {time.monotonic() - started:5.0f} s  server RSS {rss_series[-1]} MB")
            if elapsed > options["duration_s"] + MORE_S:
                raise CommandError(f"Fewer than one update per client arrived in {MORE_S} s past the duration.")
        rss_end, cpu, load_end = rss_mb(server.pid), cpu_s(server.pid) - cpu_start, os.getloadavg()[0]
        client_cpu = cpu_s(client.pid) - client_cpu_start
        measured_s = time.monotonic() - started
        # Stop the collector first, so every client can receive the last update before counting.
        processes["collector"].terminate()
        processes["collector"].wait(timeout=20)
        time.sleep(3)
        client.stdin.write("stop\n")
        client.stdin.flush()
        result = client_event(client, "result", timeout_s=120)
        client.wait(timeout=60)
        return {
            "clients": result["connected"],
            "p99_latency_ms": result["p99_latency_ms"],
            "lost": result["lost"],
            "rss_mb_start": rss_start,
            "rss_mb_end": rss_end,
            "p50_latency_ms": result["p50_latency_ms"],
            "p90_latency_ms": result["p90_latency_ms"],
            "max_latency_ms": result["max_latency_ms"],
            "failed_connections": result["failed"],
            "closed_early": result["closed_early"],
            "updates_received": result["messages"],
            "latencies_measured": result["measured_messages"],
            "resyncs": result["resyncs"],
            "duration_s": round(measured_s, 1),
            "gpus": options["gpus"],
            "held": options["held"],
            "interval_ms": options["interval_ms"],
            "compression": options["compression"] if options["server_deflate"] else "none",
            "workers": options["workers"],
            "rss_mb_idle": rss_idle,
            "rss_mb_max": max(rss_series),
            "server_cpu_pct": round(100.0 * cpu / measured_s, 1),
            "clients_cpu_pct": round(100.0 * client_cpu / measured_s, 1),
            "load_avg_start": round(load_start, 2),
            "load_avg_end": round(load_end, 2),
            "cpus": os.cpu_count(),
        }

    def _print(self, r: dict) -> None:
        self.stdout.write(
            f"fan-out: {r['clients']} clients ({r['failed_connections']} failed) on {r['workers']} uvicorn worker(s),"
            f" {r['gpus']} GPUs"
            f" ({r['held']} held) every {r['interval_ms']} ms, {r['duration_s']} s measured, compression"
            f" {r['compression']}\n"
            f"  latency sample -> client: p50 {r['p50_latency_ms']} ms, p90 {r['p90_latency_ms']} ms,"
            f" p99 {r['p99_latency_ms']} ms, max {r['max_latency_ms']} ms ({r['latencies_measured']} messages)\n"
            f"  lost updates: {r['lost']} (resyncs {r['resyncs']}, closed early {r['closed_early']})\n"
            f"  server RSS (all its processes): idle {r['rss_mb_idle']} MB, start {r['rss_mb_start']} MB,"
            f" end {r['rss_mb_end']} MB,"
            f" max {r['rss_mb_max']} MB\n"
            f"  CPU (of one core): server {r['server_cpu_pct']} %, clients {r['clients_cpu_pct']} %\n"
            f"  machine: {r['cpus']} CPUs, load average (1 min) {r['load_avg_start']} at the start,"
            f" {r['load_avg_end']} at the end"
        )
