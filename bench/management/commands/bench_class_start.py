"""The class-start benchmark: N students of one course press Start within a window, against a real JupyterHub.

    python manage.py bench_class_start --students 300 --window-s 60 [--json]

It makes a throwaway database (SQLite by default, or --database-url for PostgreSQL: a database of that name is
created and dropped), with 40 RTX 4090 nodes, one course of N students with API tokens and a quarter-GPU profile.
Then it starts, on 127.0.0.1: a JupyterHub with the echo spawner (each single-user server is a minimal HTTP
responder inside the hub, so one machine holds hundreds), the portal under uvicorn, and the worker (Celery on
--redis-url, or without Redis the in-process periodic runner). Each student presses Start once at a random
moment of the window; some press twice, as people do. It measures how fast the portal answers each press, counts
5xx and 429 answers, then waits for the lab to settle and checks: nobody over their concurrent-notebook quota,
every request ready (and answering through the hub's proxy) or queued with its true position (1..Q, first come
first served, as each student sees it). Everything it starts stops by itself.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests
from django.core.management.base import BaseCommand, CommandError

from bench import class_prewarm as prewarm
from bench.kit import (
    ROOT,
    free_port,
    setup_database,
    shell_json,
    stop_all,
    throwaway_postgres,
    throwaway_secrets,
    wait_up,
)

SETUP = """
import datetime as dt, json, os
from decimal import Decimal
from labs.images import ImageRule
from labs.inventory import demo_specs
from labs.models import NotebookProfile
from labs.services import inventory_sync
from accounts.models import Course, Enrollment, Role, User
from accounts.services import token_issue

students, gpus = int(os.environ["BENCH_STUDENTS"]), int(os.environ["BENCH_GPUS"])
inventory_sync(specs=demo_specs(gpus), source="bench")
course = Course.objects.create(code="BENCH-101", name="Class start",
                               term_start=dt.date(2000, 1, 1), term_end=dt.date(2999, 1, 1))
ImageRule.objects.create(pattern="bench/echo:1", description="The echo spawner's stand-in image")
profile = NotebookProfile.objects.create(slug="bench-quarter", name="Quarter GPU", image="bench/echo:1",
                                         gpu_share=Decimal("0.25"), cpu=Decimal("1"), memory_gb=Decimal("2"),
                                         max_session_h=Decimal("4"), roles=[])
profile.courses.add(course)
people = []
for n in range(students):
    user = User.objects.create(username=f"bench-s{n:04d}", role=Role.STUDENT)
    Enrollment.objects.create(user=user, course=course)
    people.append(user)
admin = User.objects.create(username="bench-admin", role=Role.ADMIN)
print(json.dumps({"students": [token_issue(user=u) for u in people], "admin": token_issue(user=admin)}))
"""


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))
    return round(ordered[index], 1)


class Command(BaseCommand):
    help = "Class-start benchmark: N students press Start within a window against a real JupyterHub (loopback)."

    def add_arguments(self, parser):
        parser.add_argument("--students", type=int, default=300)
        parser.add_argument("--window-s", type=float, default=60.0, help="Presses are spread over this window.")
        parser.add_argument("--json", action="store_true", help="Print one JSON object instead of the figures.")
        parser.add_argument("--gpus", type=int, default=40, help="Nodes of one RTX 4090 each.")
        parser.add_argument("--double-press", type=float, default=0.1, help="Share of students who press twice.")
        parser.add_argument("--settle-s", type=float, default=180.0, help="How long to wait for the lab to settle.")
        parser.add_argument("--web-workers", type=int, default=2, help="uvicorn worker processes.")
        parser.add_argument("--worker-threads", type=int, default=4, help="Celery worker threads (with Redis).")
        parser.add_argument("--database-url", default="", help="postgres://... (created and dropped); default SQLite.")
        parser.add_argument("--redis-url", default="", help="Celery broker and cache; default: none (in-process).")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument(
            "--prewarm",
            action="store_true",
            help="Also measure a second class whose reservation pre-pulls and holds placeholders (same run).",
        )
        parser.add_argument(
            "--pull-s",
            type=float,
            default=None,
            help="A node's first pull of an image (echo); default 3 with --prewarm.",
        )

    def handle(self, *args, **options):
        if not 1 <= options["students"] <= 2000 or options["window_s"] <= 0:
            raise CommandError("--students must be 1..2000 and --window-s positive.")
        if not 1 <= options["gpus"] <= 99:
            raise CommandError("--gpus must be 1..99.")
        if not 0 <= options["double_press"] <= 1:
            raise CommandError("--double-press is a share, 0..1.")
        self.quiet = options["json"]
        with tempfile.TemporaryDirectory(prefix="bench-class-start-") as workdir, self._database(options) as url:
            result = self._run(options, Path(workdir), url)
        if options["json"]:
            self.stdout.write(json.dumps(result))
        else:
            self._print(result)

    def _say(self, text: str) -> None:
        if not self.quiet:
            self.stderr.write(text)

    @contextlib.contextmanager
    def _database(self, options):
        """A throwaway PostgreSQL database when one is asked for, dropped at the end; else None (SQLite)."""
        if not options["database_url"]:
            yield None
            return
        with throwaway_postgres(options["database_url"], "bench_class_start") as url:
            yield url

    def _env(self, options, workdir: Path, database_url: str | None, port: int) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("NOTEBOOKS_", "DATABASE_", "DJANGO_", "CELERY_", "HUB_"))
            and k not in ("DEBUG", "REDIS_URL")
        }
        env.update(
            DJANGO_SETTINGS_MODULE="portal.settings",
            DATABASE_URL=database_url or f"sqlite:///{workdir / 'bench.sqlite3'}",
            PORTAL_VAR_DIR=str(workdir),
            DEBUG="false",
            ALLOWED_HOSTS="127.0.0.1",
            SECURE_SSL_REDIRECT="false",
            NOTEBOOKS_TICK_S="1",
            HUB_SPAWNER="echo",  # the portal's side of the hub's spawner (no cluster to pre-pull on)
            TOKEN_THROTTLE_RATE="100/min",
            TELEMETRY_COLLECTOR="off",
            LOG_LEVEL="WARNING",
            PYTHONUNBUFFERED="1",
        )
        env.update(throwaway_secrets())
        if options["redis_url"]:
            env["REDIS_URL"] = options["redis_url"]
        return env

    def _run(self, options, workdir: Path, database_url: str | None) -> dict:
        from labs.notebooks.localhub import LocalHub

        python = sys.executable
        port = free_port()
        env = self._env(options, workdir, database_url, port)
        self._say("==> a throwaway database: the lab, one course of students with tokens, a quarter-GPU profile")
        counts = {"BENCH_STUDENTS": str(options["students"]), "BENCH_GPUS": str(options["gpus"])}
        tokens = setup_database(env, SETUP, extra_env=counts)
        warm = (
            shell_json(env, prewarm.SETUP, extra_env=counts, timeout=600, what="The warmed class")
            if options["prewarm"]
            else None
        )
        pull_s = options["pull_s"] if options["pull_s"] is not None else (3.0 if options["prewarm"] else 0.0)

        self._say("==> JupyterHub (echo spawner) on loopback")
        portal_url = f"http://127.0.0.1:{port}"
        hub = LocalHub(
            spawner="echo",
            portal_url=portal_url,
            token=env["NOTEBOOKS_HUB_TOKEN"],
            oauth_client_secret=env["HUB_OAUTH_CLIENT_SECRET"],
            concurrent_spawn_limit=50,
            env={"HUB_ECHO_COLD_START_S": str(pull_s)},
        )
        hub.start(timeout=300)  # generous: a loaded machine starts slowly; a hub that dies fails at once
        env.update(NOTEBOOKS_HUB_API_URL=hub.api_url, NOTEBOOKS_HUB_PUBLIC_URL=hub.public_url)
        logs = {name: open(workdir / f"{name}.log", "w") for name in ("web", "worker")}  # noqa: SIM115
        processes: dict[str, subprocess.Popen] = {}
        try:
            processes["web"] = subprocess.Popen(  # noqa: S603 - this interpreter running uvicorn
                [python, "-m", "uvicorn", "portal.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
                + ["--log-level", "warning", "--no-access-log", "--backlog", "2048"]
                + ["--workers", str(options["web_workers"])],
                cwd=ROOT,
                env=env,
                stdout=logs["web"],
                stderr=subprocess.STDOUT,
            )
            if options["redis_url"]:
                worker = [python, "-m", "celery", "-A", "portal", "worker", "--pool", "threads"]
                worker += ["--concurrency", str(options["worker_threads"]), "--loglevel", "WARNING"]
            else:
                worker = [python, "manage.py", "run_periodic"]
            processes["worker"] = subprocess.Popen(  # noqa: S603 - this interpreter, fixed argv
                worker, cwd=ROOT, env=env, stdout=logs["worker"], stderr=subprocess.STDOUT
            )
            wait_up(f"{portal_url}/healthz", processes["web"])
            reserved = warm["reserved_nodes"] if warm else 0
            result = self._measure(options, tokens["students"], tokens["admin"], portal_url, "bench-quarter",
                                   "bench-s", (options["gpus"] - reserved) * 4)  # fmt: skip
            result["pull_s"] = pull_s
            if warm:
                self._say(f"==> the warmed class: {warm['placeholders']} placeholders on {reserved} reserved nodes")
                held_s = prewarm.wait_for_placeholders(
                    portal_url, tokens["admin"], warm["placeholders"], options["settle_s"]
                )
                figures = self._measure(options, warm["students"], tokens["admin"], portal_url, "bench-warm",
                                        "bench-w", reserved * 4)  # fmt: skip
                result["prewarm"] = {
                    **figures,
                    "placeholders": warm["placeholders"],
                    "placeholders_wait_s": held_s,
                    "handed_over": prewarm.handed_over(portal_url, tokens["admin"]),
                }
            return result
        finally:
            stop_all(processes, logs, workdir, self._say)
            hub.close()

    # --- the class starts

    def _measure(
        self, options, students: list[str], admin_token: str, portal_url: str, profile: str, prefix: str, capacity: int
    ) -> dict:
        rng = random.Random(options["seed"])  # noqa: S311 - arrival times, not secrets
        window = options["window_s"]
        presses = []  # (at, student index)
        for n, _token in enumerate(students):
            at = rng.uniform(0, window)
            presses.append((at, n))
            if rng.random() < options["double_press"]:
                presses.append((min(window, at + rng.uniform(0.2, 3.0)), n))
        presses.sort()
        local = threading.local()

        def session() -> requests.Session:
            if not hasattr(local, "session"):
                local.session = requests.Session()
            return local.session

        answers: list[dict] = []
        lock = threading.Lock()
        start = time.monotonic() + 1.0

        def press(at: float, n: int) -> None:
            delay = start + at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            began = time.perf_counter()
            try:
                response = session().post(
                    f"{portal_url}/api/v1/notebooks/",
                    json={"profile": profile},
                    headers={"Authorization": f"Token {students[n]}"},
                    timeout=30,
                )
                status, body = response.status_code, (response.json() if response.content else {})
            except requests.RequestException as exc:
                status, body = 599, {"detail": str(exc)}
            elapsed = (time.perf_counter() - began) * 1000
            with lock:
                answers.append({"student": n, "status": status, "ms": elapsed, "body": body})

        self._say(f"==> {len(presses)} presses of Start ({profile}) by {len(students)} students over {window:g} s")
        with concurrent.futures.ThreadPoolExecutor(max_workers=96) as pool:
            list(pool.map(lambda p: press(*p), presses))
        latencies = [a["ms"] for a in answers]
        statuses: dict[int, int] = {}
        for answer in answers:
            statuses[answer["status"]] = statuses.get(answer["status"], 0) + 1
        accepted = {a["body"]["id"]: a["student"] for a in answers if a["status"] == 202}
        refused_quota = sum(1 for a in answers if a["status"] == 403 and a["body"].get("code") == "quota_exceeded")

        self._say("==> waiting for the lab to settle (nothing starting or stopping, and a queue only if it is full)")
        admin = {"Authorization": f"Token {admin_token}"}
        deadline = time.monotonic() + options["settle_s"]
        rows: list[dict] = []
        while time.monotonic() < deadline:
            rows = session().get(f"{portal_url}/api/v1/notebooks/?limit=500", headers=admin, timeout=30).json()
            rows = [row for row in rows if row["owner"].startswith(prefix)]  # this class's students only
            moving = any(row["status"] in ("starting", "stopping") for row in rows)
            ready_now = sum(1 for row in rows if row["status"] == "ready")
            waiting = any(row["status"] == "queued" for row in rows)
            # Settled: nothing on its way, and whoever waits does so because the lab is full.
            if not moving and (not waiting or ready_now >= capacity):
                break
            time.sleep(1.0)
        settled_s = round(time.monotonic() - start - window, 1)
        by_status: dict[str, int] = {}
        for row in rows:
            by_status[row["status"]] = by_status.get(row["status"], 0) + 1

        # Nobody over their quota (students: one notebook at a time).
        active_per_owner: dict[str, int] = {}
        for row in rows:
            if row["status"] in ("queued", "starting", "ready"):
                active_per_owner[row["owner"]] = active_per_owner.get(row["owner"], 0) + 1
        quota_violations = sum(1 for count in active_per_owner.values() if count > 1)

        # True positions: 1..Q without gaps, in the order the presses were taken, and as each student sees them.
        queued = sorted((r for r in rows if r["status"] == "queued"), key=lambda r: r["position"] or 0)
        positions_ok = [r["position"] for r in queued] == list(range(1, len(queued) + 1)) and all(
            a["requested_at"] <= b["requested_at"] for a, b in zip(queued, queued[1:], strict=False)
        )
        seen_wrong = 0
        for row in queued:
            token = students[accepted[row["id"]]]
            own = session().get(
                f"{portal_url}/api/v1/notebooks/{row['id']}/", headers={"Authorization": f"Token {token}"}, timeout=30
            )
            seen_wrong += int(own.json().get("position") != row["position"])

        # Ready means it answers through the hub's proxy.
        ready = [r for r in rows if r["status"] == "ready"]
        unreachable = 0
        for row in ready:
            try:
                unreachable += int(session().get(row["url"], timeout=10, allow_redirects=False).status_code >= 400)
            except requests.RequestException:
                unreachable += 1
        to_ready = []
        for row in ready:
            from django.utils.dateparse import parse_datetime

            to_ready.append((parse_datetime(row["ready_at"]) - parse_datetime(row["requested_at"])).total_seconds())

        return {
            "students": len(students),
            "presses": len(presses),
            "window_s": window,
            "p50_answer_ms": _pct(latencies, 50),
            "p95_answer_ms": _pct(latencies, 95),
            "p99_answer_ms": _pct(latencies, 99),
            "max_answer_ms": round(max(latencies), 1) if latencies else 0.0,
            "statuses": {str(k): v for k, v in sorted(statuses.items())},
            "errors_5xx": sum(v for k, v in statuses.items() if k >= 500),
            "errors_429": statuses.get(429, 0),
            "refused_over_quota": refused_quota,
            "quota_violations": quota_violations,
            "ready": by_status.get("ready", 0),
            "queued": by_status.get("queued", 0),
            "failed": by_status.get("failed", 0),
            "other": {k: v for k, v in by_status.items() if k not in ("ready", "queued")},
            "positions_true": positions_ok and seen_wrong == 0,
            "ready_unreachable": unreachable,
            "p50_press_to_ready_s": _pct(to_ready, 50),
            "p95_press_to_ready_s": _pct(to_ready, 95),
            "settled_after_window_s": settled_s,
            "capacity_notebooks": capacity,
            "worker": "celery" if options["redis_url"] else "in-process",
            "database": "postgresql" if options["database_url"] else "sqlite",
        }

    def _print(self, r: dict) -> None:
        ok = (
            r["p95_answer_ms"] < 300
            and r["errors_5xx"] == 0
            and r["errors_429"] == 0
            and r["quota_violations"] == 0
            and r["positions_true"]
            and r["ready_unreachable"] == 0
            and r["ready"] + r["queued"] == r["students"]
        )
        lines = [
            f"class start: {r['students']} students, {r['presses']} presses of Start in {r['window_s']:g} s"
            f" ({r['database']}, {r['worker']} worker), capacity {r['capacity_notebooks']} quarter-GPU notebooks",
            f"  portal answers: p50 {r['p50_answer_ms']} ms, p95 {r['p95_answer_ms']} ms, p99 {r['p99_answer_ms']} ms,"
            f" max {r['max_answer_ms']} ms; statuses {r['statuses']}",
            f"  5xx: {r['errors_5xx']}   429: {r['errors_429']}   second presses refused (quota):"
            f" {r['refused_over_quota']}   students over quota: {r['quota_violations']}",
            f"  at the end: ready {r['ready']} (unreachable through the proxy: {r['ready_unreachable']}),"
            f" queued {r['queued']} (positions true: {r['positions_true']}), other {r['other']}",
            f"  press to ready: p50 {r['p50_press_to_ready_s']} s, p95 {r['p95_press_to_ready_s']} s;"
            f" settled {r['settled_after_window_s']} s after the window",
            "  goal (p95 < 300 ms, no 5xx/429, no one over quota, all ready or truly queued): "
            + ("met" if ok else "MISSED"),
        ]
        if "prewarm" in r:
            lines.append(prewarm.summary(r))
        self.stdout.write("\n".join(lines))
