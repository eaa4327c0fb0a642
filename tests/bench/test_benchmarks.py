"""Every benchmark runs in the suite at a tiny size, as README.md runs it: `python manage.py <bench> ... --json`
in a plain environment (no test settings). It fails if the command fails or its JSON lacks a figure the README
reports, so no benchmark rots unseen. The figures' values are not judged here (machine speed), only that they are
there and make sense: percentiles in order, counts that add up, nothing lost or refused at a size this small."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import get_commands

ROOT = Path(__file__).resolve().parents[2]
SMOKED = {"replay_trace", "bench_scheduler", "bench_class_start", "bench_fanout", "bench_portal", "bench_usage"}


def manage(*args: str, var_dir: Path, timeout: int = 300) -> dict:
    """`python manage.py ARGS` as a person runs it from the checkout; its stdout is one JSON object."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "DATABASE_", "REDIS_", "TELEMETRY_", "NOTEBOOKS_", "HUB_", "CELERY_"))
        and key not in ("DEBUG", "SECRET_KEY", "PORTAL_TEST_DB")
    }
    env["PORTAL_VAR_DIR"] = str(var_dir)  # the embedded defaults' SQLite and keys, away from the checkout's var/
    done = subprocess.run(  # noqa: S603 - this interpreter, our own manage.py
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)} failed:\n{done.stderr[-4000:]}"
    return json.loads(done.stdout)


def test_every_benchmark_command_has_a_smoke_run_here():
    benchmarks = {name for name in get_commands() if name.startswith("bench_") or name == "replay_trace"}
    assert benchmarks <= SMOKED, f"give {sorted(benchmarks - SMOKED)} a smoke run in tests/bench/test_benchmarks.py"


@pytest.mark.parametrize("policy", ["fifo", "portal"])
def test_replay_trace(tmp_path, policy):
    # The README replays ../shared/traces/philly_*.csv (not in the checkout): the same columns, 60 jobs of 3 users.
    trace = tmp_path / "trace.csv"
    rows = [f"j{n},user{n % 3},{n * 300},{600 + 900 * (n % 7)},{1 + n % 3}" for n in range(60)]
    trace.write_text("job_id,user,submit_s,duration_s,gpus\n" + "\n".join(rows) + "\n")
    figures = manage("replay_trace", str(trace), "--gpus", "40", "--policy", policy, "--json", var_dir=tmp_path)
    assert figures["jobs"] == 60 and figures["gpus"] == 40 and figures["policy"] == policy
    assert 0 <= figures["mean_wait_s"] <= figures["p95_wait_s"] or figures["p95_wait_s"] == 0
    assert figures["mean_jct_s"] >= 600
    assert 0 < figures["utilisation"] <= 1
    assert figures["idle_gpu_hours_while_waiting"] >= 0
    assert 0 < figures["jain_index"] <= 1
    assert set(figures["per_user"]) == {"user0", "user1", "user2"}
    assert sum(user["jobs"] for user in figures["per_user"].values()) == 60
    # The ETAs shown at submission against the actual starts, for the jobs that waited.
    eta = figures["eta"]
    assert 0 <= eta["unknown"] <= eta["waited"] <= 60 and 0 <= eta["within_25"] <= 1
    assert 0 <= eta["median_abs_error_s"] <= eta["p90_abs_error_s"] or eta["waited"] == 0
    # Every replay prints the SRTF oracle's figures on the same trace beside its own, and the ratios.
    oracle = figures["oracle"]
    assert oracle["jobs"] == 60 and 0 <= oracle["mean_wait_s"] <= figures["mean_wait_s"] + 1e-6
    assert figures["vs_oracle"]["mean_jct"] >= 1 - 1e-9


def test_replay_trace_srtf_oracle(tmp_path):
    trace = tmp_path / "trace.csv"
    rows = [f"j{n},user{n % 3},{n * 30},{600 + 900 * (n % 7)},{1 + n % 3}" for n in range(60)]
    trace.write_text("job_id,user,submit_s,duration_s,gpus\n" + "\n".join(rows) + "\n")
    figures = manage("replay_trace", str(trace), "--gpus", "4", "--policy", "srtf-oracle", "--json", var_dir=tmp_path)
    assert figures["jobs"] == 60 and figures["gpus"] == 4 and figures["policy"] == "srtf-oracle"
    assert figures["mean_wait_s"] > 0 and figures["mean_jct_s"] == pytest.approx(
        figures["mean_wait_s"] + sum(600 + 900 * (n % 7) for n in range(60)) / 60
    )
    assert figures["idle_gpu_hours_while_waiting"] == 0 and 0 < figures["jain_index"] <= 1


def test_bench_scheduler(tmp_path):
    figures = manage("bench_scheduler", "--queued", "200", "--gpus", "40", "--repeats", "3", "--json", var_dir=tmp_path)
    assert figures["queued"] == 200 and figures["gpus"] == 40 and figures["repeats"] == 3
    assert 0 < figures["pass_ms_median"] <= figures["pass_ms_p95"]
    assert figures["starts"] >= 0 and figures["preemptions"] >= 0 and figures["waiting"] >= 0
    assert figures["starts"] + figures["waiting"] <= 200 + figures["preemptions"]


def test_bench_class_start(tmp_path):
    # Two nodes take 8 quarter-GPU notebooks: of 10 students, 8 get one and 2 wait, in press order.
    figures = manage(
        "bench_class_start", "--students", "10", "--window-s", "2", "--gpus", "2", "--json", var_dir=tmp_path
    )
    assert figures["students"] == 10 and figures["presses"] >= 10
    assert 0 < figures["p50_answer_ms"] <= figures["p95_answer_ms"] <= figures["p99_answer_ms"]
    assert figures["errors_5xx"] == 0 and figures["errors_429"] == 0 and figures["quota_violations"] == 0
    assert (figures["ready"], figures["queued"]) == (8, 2)
    assert figures["positions_true"] is True and figures["ready_unreachable"] == 0


def test_bench_class_start_prewarm(tmp_path):
    # README's tiny run: 8 students without and 8 with a warmed lab (2 of 4 nodes reserved, 8 placeholders).
    figures = manage(
        "bench_class_start", "--students", "8", "--window-s", "2", "--gpus", "4", "--prewarm", "--json",
        var_dir=tmp_path,
    )  # fmt: skip
    warm = figures["prewarm"]
    assert figures["pull_s"] == 3.0 and figures["ready"] == 8 and warm["ready"] == 8
    assert warm["placeholders"] == 8 and warm["handed_over"] == 8
    assert warm["errors_5xx"] == 0 and warm["quota_violations"] == 0
    for side in (figures, warm):
        assert 0 < side["p50_press_to_ready_s"] <= side["p95_press_to_ready_s"]


def test_bench_fanout(tmp_path):
    figures = manage(
        "bench_fanout", "--clients", "20", "--duration-s", "3", "--warmup-s", "1",
        "--redis-url", settings.REDIS_URL, "--json", var_dir=tmp_path,
    )  # fmt: skip
    assert figures["clients"] == 20 and figures["failed_connections"] == 0
    assert 0 < figures["p50_latency_ms"] <= figures["p90_latency_ms"] <= figures["p99_latency_ms"]
    assert figures["p99_latency_ms"] <= figures["max_latency_ms"]
    assert figures["lost"] == 0 and figures["latencies_measured"] > 0
    assert figures["rss_mb_start"] > 0 and figures["rss_mb_end"] > 0


def test_bench_portal_without_watchers(tmp_path):
    # `--watchers 0` measures the HTTP load alone (it crashed: the watchers' process waited on an empty set).
    server = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/portal").rsplit("/", 1)[0]
    figures = manage(
        "bench_portal", "--students", "2", "--watchers", "0", "--submitters", "1", "--teachers", "1",
        "--duration-s", "5", "--database-url", f"{server}/postgres", "--redis-url", settings.REDIS_URL, "--json",
        var_dir=tmp_path, timeout=600,
    )  # fmt: skip
    assert figures["watchers"] == 0 and figures["ws_connected"] == 0 and figures["ws_failed"] == 0
    assert figures["ws_messages"] == 0 and figures["ws_lost_updates"] == 0
    assert figures["errors_5xx"] == 0 and figures["http"]["notebooks"]["accepted"] == 2


@pytest.mark.postgresql_only
def test_bench_portal_with_sandboxed_jobs(tmp_path):
    # `--job-processes sandbox`: the jobs run as real sandboxed processes of the local backend, as before sim.
    server = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/portal").rsplit("/", 1)[0]
    figures = manage(
        "bench_portal", "--students", "1", "--watchers", "0", "--submitters", "1", "--teachers", "1",
        "--duration-s", "8", "--job-processes", "sandbox", "--database-url", f"{server}/postgres",
        "--redis-url", settings.REDIS_URL, "--json", var_dir=tmp_path, timeout=600,
    )  # fmt: skip
    assert figures["job_processes"] == "sandbox" and figures["errors_5xx"] == 0
    assert figures["http"]["jobs"]["submitted"] >= 1


PORTAL_FIGURES = {
    "p50_page_ms", "p95_page_ms", "p99_page_ms", "p50_api_ms", "p95_api_ms", "p99_api_ms", "errors_5xx", "non_2xx",
    "transport_errors", "ws_p99_latency_ms", "ws_lost_updates", "ws_connected", "rss_mb_start", "rss_mb_end",
    "load_avg_start", "load_avg_end", "ledger",
}  # fmt: skip


@pytest.mark.postgresql_only
def test_bench_portal(tmp_path):
    # As the README runs it, at a size of a few seconds, on the test PostgreSQL server and Redis.
    server = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/portal").rsplit("/", 1)[0]
    figures = manage(
        "bench_portal", "--students", "5", "--watchers", "10", "--submitters", "2", "--teachers", "1",
        "--duration-s", "10", "--database-url", f"{server}/postgres", "--redis-url", settings.REDIS_URL, "--json",
        var_dir=tmp_path, timeout=600,
    )  # fmt: skip
    assert set(figures) >= PORTAL_FIGURES, f"missing figures: {sorted(PORTAL_FIGURES - set(figures))}"
    for kind in ("page", "api"):
        assert 0 < figures[f"p50_{kind}_ms"] <= figures[f"p95_{kind}_ms"] <= figures[f"p99_{kind}_ms"]
    assert figures["errors_5xx"] == 0 and figures["transport_errors"] == 0
    assert figures["ws_connected"] == 10 and figures["ws_lost_updates"] == 0 and figures["ws_p99_latency_ms"] > 0
    assert figures["http"]["notebooks"]["accepted"] == 5 and figures["http"]["jobs"]["submitted"] >= 1
    assert figures["job_processes"] == "sim"  # the default: jobs pretend to run, no process on the measured cores
    assert figures["ledger"]["ledger_over_100pct"] == 0 and figures["ledger"]["allocation_rows"] >= 1
    assert figures["rss_mb_start"] > 0 and figures["rss_mb_end"] > 0
    # The bare-stack baseline answered all through, and each class's CPU is set against it.
    by_class = figures["web_cpu_by_class"]["classes"]
    assert figures["http"]["baseline_answers"] > 0 and by_class["baseline"]["answers"] > 0
    assert by_class["page"]["x_baseline"] > 0 and by_class["api_read"]["x_baseline"] > 0


@pytest.mark.postgresql_only
def test_bench_usage(tmp_path):
    # As the README runs it, at a size of seconds, on the test PostgreSQL server.
    server = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/portal").rsplit("/", 1)[0]
    figures = manage(
        "bench_usage", "--allocations", "3000", "--runs", "2", "--database-url", f"{server}/postgres", "--json",
        var_dir=tmp_path, timeout=600,
    )  # fmt: skip
    assert figures["allocations"] == 3000
    for group in ("course", "user", "day"):
        report = figures["reports"][group]
        assert report["rows"] > 0 and 0 < report["p50_ms"] <= report["p95_ms"]
    assert figures["reports"]["day"]["rows"] == 181  # 1 February to 31 July
    # The reports from the day sums beside the ledger say what the ledger alone says, to the second.
    assert figures["reports"]["day (ledger only, before)"]["rows"] == 181 and figures["day_sums_agree"] is True
    assert figures["sums_agree"] == {"course": True, "user": True, "day": True}
    for group in ("course", "user"):
        assert figures["reports"][f"{group} (ledger only, before)"]["rows"] == figures["reports"][group]["rows"]
    assert figures["day_sums"]["per_person"] > 0 and figures["day_sums"]["per_course"] > 0
    # The fair-share read of every pass: PostgreSQL's sum per person is the policy's rule summed in Python.
    fair = figures["fair_share"]
    assert fair["entries"] > 0 and fair["people"] > 0 and fair["agree"] is True
    assert 0 < fair["p50_ms"] <= fair["p95_ms"] and fair["before"]["p50_ms"] > 0
    csv_figures = figures["csv"]
    assert 0 < csv_figures["rows"] < 3000 and csv_figures["rows_per_s"] > 0 and csv_figures["first_byte_ms"] > 0
    assert 0 < csv_figures["rss_mb_start"] <= csv_figures["rss_mb_peak"]


def test_the_watchers_process_with_no_watchers_reports_nothing_watched():
    config = {"url": "ws://127.0.0.1:9/ws/gpus/", "origin": "http://127.0.0.1:9", "tokens": ["t"], "clients": 0}
    done = subprocess.run(  # noqa: S603 - this interpreter, our own module
        [sys.executable, "-m", "bench.ws_client"],
        cwd=ROOT,
        input=json.dumps({**config, "warmup_s": 0}) + "\nstop\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [event["event"] for event in events] == ["connected", "measuring", "result"]
    assert events[-1]["connected"] == 0 and events[-1]["messages"] == 0 and events[-1]["lost"] == 0
