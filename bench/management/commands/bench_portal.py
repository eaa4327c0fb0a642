"""The whole-portal benchmark: the real portal under a class's mixed load, all on loopback.

    python manage.py bench_portal --students 300 --watchers 1000 --submitters 50 --teachers 10 --duration-s 600
        --database-url postgresql://127.0.0.1:5432/postgres --redis-url redis://127.0.0.1:6379/9 [--json]

It makes a throwaway PostgreSQL database on the server --database-url names (created and dropped): 40 RTX 4090
nodes, one course of students with a tenth-GPU notebook profile, people who submit jobs, teachers with a reservation
each, and an admin. Then it starts on 127.0.0.1, as production runs it (DEBUG off, made-up secrets, the database
pool on): uvicorn with portal.asgi, a Celery worker and beat on --redis-url, the telemetry collector with the
simulator, and JupyterHub with the echo spawner. Jobs are simulated (--job-processes sim: JOBS_BACKEND=simulated,
no process, so that the measured cores serve the portal, as the echo spawner does for notebooks) or run on the
local backend (--job-processes sandbox: SINGLE_MACHINE_LAB, in the bubblewrap sandbox). For --duration-s it
drives, from two client processes of their own:
- students pressing Start within the first minute and following their notebook (bench/load.py),
- people submitting small jobs, following them and reading their logs (bench/load.py),
- teachers browsing the reservation pages and API (bench/load.py),
- watchers of the live GPU WebSocket (bench/ws_client.py).
It prints p50/p95/p99 of page and of API answers, 5xx and other non-2xx answers by status, the WebSocket p99
latency (sample to receive) and lost updates, the ledger's invariant, the load average and the server's RSS at the
start and the end, and the web CPU per answer of pages, API reads and API writes against a bare-stack baseline
endpoint the same servers answer meanwhile (bench.web_settings, bench.web_cpu). Everything it starts stops by
itself, also on Ctrl-C or an error.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.core.management import get_commands
from django.core.management.base import BaseCommand, CommandError

from bench.kit import (
    ROOT,
    client_event,
    cpu_s,
    free_port,
    rss_mb,
    setup_database,
    stop_all,
    throwaway_postgres,
    throwaway_secrets,
    wait_up,
)
from bench.ledger import ledger_check
from bench.web_cpu import describe, per_class, read_sums

SETUP = """
import datetime as dt, json, os
from decimal import Decimal
from importlib import import_module
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.utils import timezone
from labs.images import ImageRule
from labs.inventory import demo_specs
from labs.models import NotebookProfile
from labs.reservations.services import NodeRequest, reservation_create
from labs.services import inventory_sync
from accounts.models import Course, Enrollment, Role, User
from accounts.services import token_issue

count = json.loads(os.environ["BENCH_COUNTS"])
inventory_sync(specs=demo_specs(count["gpus"]), source="bench")
course = Course.objects.create(code="BENCH-101", name="Whole portal",
                               term_start=dt.date(2000, 1, 1), term_end=dt.date(2999, 1, 1))
ImageRule.objects.create(pattern="bench/echo:1", description="The echo spawner's stand-in image")
profile = NotebookProfile.objects.create(slug="bench-tenth", name="Tenth of a GPU", image="bench/echo:1",
                                         gpu_share=Decimal("0.1"), cpu=Decimal("1"), memory_gb=Decimal("2"),
                                         max_session_h=Decimal("4"), roles=[])
profile.courses.add(course)
def people(prefix, role, n):
    made = [User.objects.create(username=f"bench-{prefix}{i:04d}", role=role) for i in range(n)]
    for user in made:
        if role == Role.STUDENT:
            Enrollment.objects.create(user=user, course=course)
    return made
students, submitters = people("s", Role.STUDENT, count["students"]), people("j", Role.STUDENT, count["submitters"])
teachers, admin = people("t", Role.TEACHER, count["teachers"]), people("a", Role.ADMIN, 1)[0]
course.teachers.add(*teachers)
store = import_module(settings.SESSION_ENGINE).SessionStore
day = timezone.localdate() + dt.timedelta(days=8)
browsing = []
for n, teacher in enumerate(teachers):
    session = store()
    session[SESSION_KEY], session[BACKEND_SESSION_KEY] = str(teacher.pk), settings.AUTHENTICATION_BACKENDS[0]
    session[HASH_SESSION_KEY] = teacher.get_session_auth_hash()
    session.create()
    starts = timezone.make_aware(dt.datetime.combine(day, dt.time(10)))
    made = reservation_create(by=teacher, title=f"Lab session {n}", starts_at=starts,
                              ends_at=starts + dt.timedelta(hours=2), course=course,
                              nodes=NodeRequest(names=(f"gpu{count['gpus'] - n % count['gpus']:02d}",)))
    browsing.append({"token": token_issue(user=teacher), "session": session.session_key, "reservation": made[0].pk})
monday = timezone.localdate() - dt.timedelta(days=timezone.localdate().weekday())
print(json.dumps({
    "students": [token_issue(user=u) for u in students],
    "submitters": [token_issue(user=u) for u in submitters],
    "teachers": browsing,
    "admin": token_issue(user=admin),
    "weeks": [(monday + dt.timedelta(weeks=w)).isoformat() for w in range(3)],
}))
"""

TARGETS = {"p95_page_ms": 300, "p95_api_ms": 300, "errors_5xx": 0, "ws_p99_latency_ms": 250}


class Command(BaseCommand):
    help = "Whole-portal load benchmark: notebooks, jobs, reservations and live GPU watchers at once (loopback only)."

    def add_arguments(self, parser):
        parser.add_argument("--students", type=int, default=300, help="Each presses Start in the first minute.")
        parser.add_argument("--watchers", type=int, default=1000, help="Live GPU WebSocket clients.")
        parser.add_argument("--submitters", type=int, default=50, help="People submitting and following jobs.")
        parser.add_argument("--teachers", type=int, default=10, help="People browsing the reservations.")
        parser.add_argument("--duration-s", type=int, default=600)
        parser.add_argument("--database-url", required=True, help="postgresql://... (a database is made, dropped).")
        parser.add_argument("--redis-url", required=True, help="Celery, cache and channel layer: a spare database.")
        parser.add_argument("--json", action="store_true", help="Print one JSON object instead of the figures.")
        parser.add_argument("--gpus", type=int, default=40, help="Nodes of one RTX 4090 each.")
        parser.add_argument("--web-workers", type=int, default=2, help="uvicorn worker processes.")
        parser.add_argument("--worker-threads", type=int, default=4, help="Celery worker threads.")
        parser.add_argument("--db-pool", action=argparse.BooleanOptionalAction, default=True,
                            help="DATABASE_POOL (--no-db-pool: a new connection per request).")  # fmt: skip
        parser.add_argument("--db-pool-max", type=int, default=15, help="DATABASE_POOL_MAX_SIZE per process.")
        parser.add_argument("--ramp-s", type=float, default=60.0, help="Students press Start within this window.")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--baseline-per-s", type=float, default=5.0, help="The bare-stack baseline's rate.")
        parser.add_argument(
            "--job-processes", choices=("sim", "sandbox"), default="sim",
            help="sim: jobs only pretend to run (JOBS_BACKEND=simulated, no process on the measured cores);"
            " sandbox: real sandboxed processes of the local backend.",
        )  # fmt: skip
        parser.add_argument("--job-run-s", type=int, default=2, help="How long a simulated job runs.")

    def handle(self, *args, **options):
        limits = {"students": 5000, "watchers": 20_000, "submitters": 1000, "teachers": 500}
        for name, most in limits.items():
            if not 0 <= options[name] <= most:
                raise CommandError(f"--{name} must be 0..{most}.")
        if options["duration_s"] < 1 or not 1 <= options["gpus"] <= 99 or not 1 <= options["web_workers"] <= 16:
            raise CommandError("--duration-s must be at least 1, --gpus 1..99, --web-workers 1..16.")
        if not options["database_url"].startswith(("postgres://", "postgresql://")):
            raise CommandError("--database-url must be a PostgreSQL URL: the portal runs here as in production.")
        self.quiet = options["json"]
        # A `kill` stops it as Ctrl-C does: through the finally blocks that stop everything it started.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        with (
            tempfile.TemporaryDirectory(prefix="bench-portal-") as workdir,
            throwaway_postgres(options["database_url"], "bench_portal") as url,
        ):
            result = self._run(options, Path(workdir), url)
        if options["json"]:
            self.stdout.write(json.dumps(result))
        else:
            self._print(result)

    def _say(self, text: str) -> None:
        if not self.quiet:
            self.stderr.write(text)

    def _env(self, options, workdir: Path, database_url: str) -> dict[str, str]:
        drop = ("NOTEBOOKS_", "DATABASE_", "DJANGO_", "CELERY_", "HUB_", "JOBS_", "TELEMETRY_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(drop) and k not in ("DEBUG", "REDIS_URL")}
        env.update(
            DJANGO_SETTINGS_MODULE="portal.settings",
            DATABASE_URL=database_url,
            PORTAL_VAR_DIR=str(workdir),
            REDIS_URL=options["redis_url"],
            DEBUG="false",
            ALLOWED_HOSTS="127.0.0.1",
            SECURE_SSL_REDIRECT="false",
            SESSION_COOKIE_SECURE="false",
            SINGLE_MACHINE_LAB="true",
            JOBS_BACKEND="simulated" if options["job_processes"] == "sim" else "local",
            JOBS_SIMULATED_RUN_S=str(options["job_run_s"]),
            JOBS_SCHEDULE_INTERVAL_S="5",
            JOBS_FOLLOW_INTERVAL_S="1",
            NOTEBOOKS_TICK_S="1",
            TELEMETRY_SOURCE="simulator",
            TELEMETRY_COLLECTOR="process",
            LOG_LEVEL="WARNING",
            PYTHONUNBUFFERED="1",
        )
        if options["db_pool"]:
            env.update(DATABASE_POOL="true", DATABASE_POOL_MAX_SIZE=str(options["db_pool_max"]))
        env.update(throwaway_secrets())
        return env

    def _run(self, options, workdir: Path, database_url: str) -> dict:
        from labs.notebooks.localhub import LocalHub

        python = sys.executable
        port = free_port()
        env = self._env(options, workdir, database_url)
        counts = {k: options[k] for k in ("students", "submitters", "teachers", "gpus")}
        self._say("==> a throwaway database: the lab, a course, people with tokens, teachers' reservations")
        people = setup_database(env, SETUP, extra_env={"BENCH_COUNTS": json.dumps(counts)})
        # Pages name their CSS and scripts through the manifest, as in production.
        subprocess.run(  # noqa: S603 - this interpreter, our own manage.py, fixed argv
            [python, "manage.py", "collectstatic", "--no-input", "-v0"], cwd=ROOT, env=env, check=True, timeout=300
        )
        portal_url = f"http://127.0.0.1:{port}"
        self._say("==> JupyterHub (echo spawner), the portal, Celery worker and beat, the collector on loopback")
        hub = LocalHub(
            spawner="echo",
            portal_url=portal_url,
            token=env["NOTEBOOKS_HUB_TOKEN"],
            oauth_client_secret=env["HUB_OAUTH_CLIENT_SECRET"],
            concurrent_spawn_limit=50,
            log_level="error",
        )
        names = ("web", "worker", "beat", "collector")
        logs = {name: open(workdir / f"{name}.log", "w") for name in names}  # noqa: SIM115
        processes: dict[str, subprocess.Popen] = {}
        try:
            hub.start(timeout=300)
            env.update(NOTEBOOKS_HUB_API_URL=hub.api_url, NOTEBOOKS_HUB_PUBLIC_URL=hub.public_url)
            commands = {
                "web": [python, "-m", "uvicorn", "portal.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
                + ["--log-level", "warning", "--no-access-log", "--backlog", "4096"]
                # As scripts/serve.sh serves it (permessage-deflate declined unless WS_PER_MESSAGE_DEFLATE=true).
                + ["--workers", str(options["web_workers"]), "--ws-per-message-deflate", "false"],
                "worker": [python, "-m", "celery", "-A", "portal", "worker", "--pool", "threads"]
                + ["--concurrency", str(options["worker_threads"]), "--loglevel", "WARNING"],
                "beat": [python, "-m", "celery", "-A", "portal", "beat", "--loglevel", "WARNING"]
                + ["--schedule", str(workdir / "celerybeat-schedule")],
                "collector": [python, "manage.py", "telemetry_collect"],
            }
            # The web processes carry the baseline endpoint and the CPU per class (bench.web_settings).
            (workdir / "cpu").mkdir()
            web_env = {**env, "DJANGO_SETTINGS_MODULE": "bench.web_settings", "BENCH_CPU_DIR": str(workdir / "cpu")}
            for name in names:
                processes[name] = subprocess.Popen(  # noqa: S603 - this interpreter, fixed argv
                    commands[name], cwd=ROOT, env=web_env if name == "web" else env, stdout=logs[name],
                    stderr=subprocess.STDOUT,
                )  # fmt: skip
            wait_up(f"{portal_url}/healthz", processes["web"])
            result = self._measure(options, people, port, processes, workdir / "cpu")
        finally:
            stop_all(processes, logs, workdir, self._say)
            hub.close()
        result["ledger"] = ledger_check(env, have_check_ledger="check_ledger" in get_commands())
        return result

    def _measure(self, options, people: dict, port: int, processes: dict[str, subprocess.Popen], cpu_dir) -> dict:
        web = processes["web"]
        watchers = processes["watchers"] = self._client("bench.ws_client")
        tokens = people["students"][:85] + [t["token"] for t in people["teachers"]] + [people["admin"]]
        self._send(watchers, {
            "url": f"ws://127.0.0.1:{port}/ws/gpus/", "origin": f"http://127.0.0.1:{port}", "tokens": tokens,
            "clients": options["watchers"], "compression": "deflate", "connect_per_s": 200, "warmup_s": 5,
        })  # fmt: skip
        self._say(f"==> connecting {options['watchers']} GPU-status watchers")
        connected = client_event(watchers, "connected")
        client_event(watchers, "measuring")
        self._say(f"    {connected['connected']} connected, {connected['failed']} failed")
        load_start, rss_start, started = os.getloadavg()[0], rss_mb(web.pid), time.monotonic()
        cpu_start, sums_start = {name: cpu_s(processes[name].pid) for name in ("web", "worker")}, read_sums(cpu_dir)
        rss_series = [rss_start]
        load = processes["load"] = self._client("bench.load")
        self._send(load, {
            "base": f"http://127.0.0.1:{port}", "duration_s": options["duration_s"],
            "ramp_s": min(options["ramp_s"], float(options["duration_s"])), "profile": "bench-tenth",
            "students": people["students"], "submitters": people["submitters"], "teachers": people["teachers"],
            "weeks": people["weeks"], "seed": options["seed"],
            "baseline_token": people["admin"], "baseline_per_s": options["baseline_per_s"],
        })  # fmt: skip
        client_event(load, "started")
        cpu_start["clients"] = cpu_s(load.pid) + cpu_s(watchers.pid)
        self._say(f"==> {options['students']} students, {options['submitters']} submitters, {options['teachers']}"
                  f" teachers for {options['duration_s']} s (server RSS {rss_start} MB)")  # fmt: skip
        while (elapsed := time.monotonic() - started) < options["duration_s"]:
            time.sleep(min(10.0, options["duration_s"] - elapsed))
            if any(processes[name].poll() is not None for name in ("web", "worker", "beat", "collector", "watchers")):
                raise CommandError("A server or the watchers stopped during the run; see the logs above.")
            rss_series.append(rss_mb(web.pid))
            self._say(f"    {time.monotonic() - started:5.0f} s  server RSS {rss_series[-1]} MB")
        rss_end, load_end, measured_s = rss_mb(web.pid), os.getloadavg()[0], time.monotonic() - started
        cpu = {name: cpu_s(processes[name].pid) - cpu_start[name] for name in ("web", "worker")}
        by_class = per_class(sums_start, read_sums(cpu_dir), cpu["web"])
        cpu["clients"] = cpu_s(load.pid) + cpu_s(watchers.pid) - cpu_start["clients"]
        http = client_event(load, "result", timeout_s=120)
        # The collector stops first, so every watcher can take the last update before counting what it lost.
        processes["collector"].terminate()
        processes["collector"].wait(timeout=20)
        time.sleep(3)
        watchers.stdin.write("stop\n")
        watchers.stdin.flush()
        ws = client_event(watchers, "result", timeout_s=120)
        http.pop("event")
        return {
            **{k: options[k] for k in ("students", "watchers", "submitters", "teachers", "duration_s", "gpus")},
            "p50_page_ms": http["p50_page_ms"],
            "p95_page_ms": http["p95_page_ms"],
            "p99_page_ms": http["p99_page_ms"],
            "p50_api_ms": http["p50_api_ms"],
            "p95_api_ms": http["p95_api_ms"],
            "p99_api_ms": http["p99_api_ms"],
            "errors_5xx": http["page_5xx"] + http["api_5xx"],
            "non_2xx": _merge(http["page_non_2xx"], http["api_non_2xx"]),
            "transport_errors": http["transport_errors"],
            "ws_p99_latency_ms": ws["p99_latency_ms"],
            "ws_lost_updates": ws["lost"],
            "ws_connected": ws["connected"],
            "ws_failed": ws["failed"],
            "ws_closed_early": ws["closed_early"],
            "ws_p50_latency_ms": ws["p50_latency_ms"],
            "ws_messages": ws["messages"],
            "rss_mb_start": rss_start,
            "rss_mb_end": rss_end,
            "rss_mb_max": max(rss_series + [rss_end]),
            "web_cpu_pct": round(100.0 * cpu["web"] / measured_s, 1),
            "worker_cpu_pct": round(100.0 * cpu["worker"] / measured_s, 1),
            "clients_cpu_pct": round(100.0 * cpu["clients"] / measured_s, 1),
            "web_cpu_ms_per_answer": round(
                1000.0 * cpu["web"] / max(1, http["page_answers"] + http["api_answers"] + http["baseline_answers"]), 1
            ),
            "web_cpu_by_class": by_class,
            "load_avg_start": round(load_start, 2),
            "load_avg_end": round(load_end, 2),
            "cpus": os.cpu_count(),
            "web_workers": options["web_workers"],
            "db_pool": options["db_pool"],
            "job_processes": options["job_processes"],
            "http": http,
        }

    def _client(self, module: str) -> subprocess.Popen:
        return subprocess.Popen(  # noqa: S603 - this interpreter, our own client module
            [sys.executable, "-m", module], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def _send(self, client: subprocess.Popen, config: dict) -> None:
        client.stdin.write(json.dumps(config) + "\n")
        client.stdin.flush()

    def _print(self, r: dict) -> None:
        met = {
            "p95 page < 300 ms": r["p95_page_ms"] is not None and r["p95_page_ms"] < TARGETS["p95_page_ms"],
            "p95 API < 300 ms": r["p95_api_ms"] is not None and r["p95_api_ms"] < TARGETS["p95_api_ms"],
            "no 5xx": r["errors_5xx"] == 0,
            "WebSocket p99 < 250 ms": r["ws_p99_latency_ms"] is not None and r["ws_p99_latency_ms"] < 250,
        }
        h, ledger = r["http"], r["ledger"]
        lines = [
            f"whole portal: {r['students']} students, {r['watchers']} watchers, {r['submitters']} submitters,"
            f" {r['teachers']} teachers for {r['duration_s']} s; {r['gpus']} GPUs, {r['web_workers']} uvicorn"
            f" workers, database pool {'on' if r['db_pool'] else 'off'}, jobs {r['job_processes']}",
            f"  pages ({h['page_answers']}): p50 {r['p50_page_ms']} ms, p95 {r['p95_page_ms']} ms,"
            f" p99 {r['p99_page_ms']} ms",
            f"  API ({h['api_answers']}): p50 {r['p50_api_ms']} ms, p95 {r['p95_api_ms']} ms, p99 {r['p99_api_ms']} ms",
            f"  5xx: {r['errors_5xx']}   other non-2xx: {r['non_2xx']}   no answer: {r['transport_errors']}",
            f"  WebSocket: p50 {r['ws_p50_latency_ms']} ms, p99 {r['ws_p99_latency_ms']} ms,"
            f" lost {r['ws_lost_updates']}"
            f" ({r['ws_connected']} connected, {r['ws_failed']} failed, {r['ws_closed_early']} closed early)",
            f"  notebooks: {h['notebooks']} (p50 press to ready {h['p50_notebook_ready_s']} s);  jobs: {h['jobs']}",
            f"  ledger ({ledger['by']}): GPUs above a whole GPU at some instant: {ledger['ledger_over_100pct']}"
            + "".join(f"\n    {_overlap(example)}" for example in ledger["examples"][:3]),
            f"  server RSS: {r['rss_mb_start']} MB at the start, {r['rss_mb_end']} MB at the end"
            f" (max {r['rss_mb_max']});  load average {r['load_avg_start']} -> {r['load_avg_end']} on {r['cpus']} CPUs",
            f"  CPU (of one core): web {r['web_cpu_pct']} % ({r['web_cpu_ms_per_answer']} ms per answer, WebSocket"
            f" included), Celery worker {r['worker_cpu_pct']} %, the two client processes {r['clients_cpu_pct']} %",
            describe(r["web_cpu_by_class"]),
            "  slowest endpoints (p95): "
            + ", ".join(
                f"{name} {v['p95_ms']} ms"
                for name, v in sorted(h["endpoints"].items(), key=lambda kv: -(kv[1]["p95_ms"] or 0))[:4]
            ),
            "  targets: " + ", ".join(f"{name}: {'met' if ok else 'MISSED'}" for name, ok in met.items()),
        ]
        self.stdout.write("\n".join(lines))


def _overlap(example: dict) -> str:
    holders = ", ".join(
        f"{h['ref']} {h['share']} from {h['from'][11:23]} until {h['until'][11:23] if h['until'] else 'now'}"
        for h in example["holders"]
    )
    return f"{example['gpu']} at {example['at'][11:23]} held {example['held']}: {holders}"


def _merge(*counts: dict[str, int]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for count in counts:
        for status, n in count.items():
            merged[status] = merged.get(status, 0) + n
    return dict(sorted(merged.items()))
