"""python manage.py bench_usage --allocations 2000000 --database-url postgresql://127.0.0.1:5432/postgres [--json]

Makes a throwaway PostgreSQL database on the server --database-url names (created and dropped), migrates it, and
fills it fast (generate_series in one INSERT each) with a year of ledger entries (notebooks and jobs, shares of 1,
1/2 and 1/4, 10 min to 6 h each, a few still open) on 40 nodes for 2,000 people in 60 courses, and one efficiency row
per entry. Then, in a `manage.py shell` on that database, as the portal reads it (labs.usage.selectors):

- the admin's lab report for one term (February to July) grouped by course, by user and by day (from the day sums
  beside the ledger, filled as the migration fills them), and each from the ledger alone as it was before those
  sums (and whether they agree to the second): p50/p95 of --runs;
- the CSV export of every entry of the term as the API serves it on PostgreSQL (the header, then the chunks of
  `COPY (...) TO STDOUT`, labs.usage.accounting.entries_copy): first data byte, rows/s, and the process's RSS before
  and at its peak (constant memory: the peak does not grow with the rows);
- the fair-share read of every scheduling pass and job submission's dry run (jobs.selectors.decayed_usage_by_person:
  each person's decayed GPU-seconds over the entries of eight half-lives, summed by PostgreSQL) at the term's end,
  p50/p95 of --runs, beside the same sum in Python over every entry as it was before (jobs.policy.decayed_usage), and
  whether the two agree;
- with --plans, EXPLAIN (ANALYZE, BUFFERS) of each query, printed.

Goals (issue 13): each report p95 < 300 ms; CSV first byte < 500 ms, >= 100,000 rows/s, constant memory.
The plans that got there and the figures measured are in bench/USAGE_PLANS.md.
"""

from __future__ import annotations

import json
import os
import time

from django.core.management.base import BaseCommand, CommandError

from bench.kit import ROOT, setup_database, shell_json, throwaway_postgres, throwaway_secrets

SETUP = r"""
import json, os
from django.db import connection
from labs.inventory import demo_specs
from labs.services import inventory_sync
from accounts.models import Course, User

n = int(os.environ["BENCH_ALLOCATIONS"])
inventory_sync(specs=demo_specs(40), source="demo")
User.objects.create_user("bench-admin", password="bench-admin-pw", role="admin")
User.objects.bulk_create([User(username=f"p{i:04d}", role="student") for i in range(2000)], batch_size=1000)
Course.objects.bulk_create([
    Course(code=f"C-{i:02d}", name=f"Course {i}", term_start="2025-08-01", term_end="2026-07-31") for i in range(60)
])
with connection.cursor() as c:
    c.execute("SET synchronous_commit = off")
    c.execute('''
        INSERT INTO accounts_enrollment (user_id, course_id, enrolled_at, role, source)
        SELECT u.id, (SELECT array_agg(id ORDER BY id) FROM accounts_course)[1 + (u.id % 60)], now(), 'student',
               'manual'
        FROM accounts_user u WHERE u.username LIKE 'p%'
    ''')
    c.execute('''
        WITH g AS (SELECT array_agg(id ORDER BY id) AS ids FROM labs_gpu),
             u AS (SELECT array_agg(id ORDER BY id) AS ids FROM accounts_user WHERE username LIKE 'p%%'),
             k AS (SELECT array_agg(id ORDER BY id) AS ids FROM accounts_course)
        INSERT INTO labs_allocation (user_id, course_id, kind, ref, gpu_id, share, starts_at, ends_at, reason)
        SELECT u.ids[(1 + (i * 7919) %% 2000)::int],
               CASE WHEN i %% 10 < 3 THEN NULL ELSE k.ids[(1 + ((i * 7919) %% 2000) %% 60)::int] END,
               CASE WHEN i %% 3 = 0 THEN 'job' ELSE 'notebook' END,
               CASE WHEN i %% 3 = 0 THEN 'job:' || i || '#1' ELSE 'notebook:' || i END,
               g.ids[(1 + i %% 40)::int],
               CASE i %% 4 WHEN 0 THEN 0.25 WHEN 1 THEN 0.5 ELSE 1 END,
               s.at,
               CASE WHEN i > %s - 20 THEN NULL ELSE s.at + ((10 + (i * 104729) %% 350) * interval '1 minute') END,
               ''
        FROM generate_series(1::bigint, %s) AS i, g, u, k,
             LATERAL (SELECT timestamptz '2025-08-01 00:00+00' + (i::float8 / %s) * interval '365 days' AS at) s
    ''', [n, n, n])
    c.execute('''
        INSERT INTO labs_holderefficiency (holder_kind, holder_ref, holder_id, attempt, user_id, course_id, node_id,
            started_at, ended_at, gpu_hours, mean_util_pct, p95_util_pct, peak_mem_mb, energy_wh, idle_gpu_hours,
            telemetry_minutes, computed_at)
        SELECT a.kind, a.ref, a.id, NULL, a.user_id, a.course_id, g.node_id, a.starts_at, a.ends_at,
               a.share * EXTRACT(EPOCH FROM (coalesce(a.ends_at, now()) - a.starts_at)) / 3600,
               (a.id::bigint * 37) % 100, LEAST(100, (a.id::bigint * 37) % 100 + 10), 1000 + (a.id % 20000), a.id % 900,
               CASE WHEN (a.id::bigint * 37) % 100 < 5 THEN a.share * EXTRACT(EPOCH FROM (coalesce(a.ends_at, now())
                    - a.starts_at)) / 3600 ELSE 0 END,
               60, now()
        FROM labs_allocation a JOIN labs_gpu g ON g.id = a.gpu_id
    ''')
    c.execute("ANALYZE")
    c.execute("SELECT count(*) FROM labs_allocation")
    allocations = c.fetchone()[0]
# The day sums beside the ledger, as the migration fills them (tests/labs/usage/test_daysums.py checks this bulk fill
# against the sums kept close by close).
import time
from labs.usage import daysums
begun = time.monotonic()
daysums.rebuild(*daysums.ledger_span())
with connection.cursor() as c:
    c.execute("ANALYZE labs_usageday")
    c.execute("ANALYZE labs_usagedaycourse")
    c.execute("SELECT (SELECT count(*) FROM labs_usageday), (SELECT count(*) FROM labs_usagedaycourse)")
    per_person, per_course = c.fetchone()
print(json.dumps({"allocations": allocations, "day_sums": {"per_person": per_person, "per_course": per_course,
                                                           "fill_s": round(time.monotonic() - begun, 1)}}))
"""

MEASURE = r"""
import datetime as dt, json, os, statistics, time
from django.db import connection
from django.db.models import Sum
from labs.models import Allocation
from labs.usage import accounting, csvstream
from labs.usage.accounting import Period
from labs.usage.api import ENTRY_HEADER
from labs.usage.selectors import Scope, allocations_in_scope, usage_entries_csv, usage_report
from accounts.models import User

runs, plans = int(os.environ["BENCH_RUNS"]), os.environ["BENCH_PLANS"] == "1"
UTC = dt.timezone.utc
window = Period(start=dt.datetime(2026, 1, 31, 23, tzinfo=UTC), end=dt.datetime(2026, 7, 31, 22, tzinfo=UTC),
                now=dt.datetime(2026, 8, 1, tzinfo=UTC))
admin = User.objects.get(username="bench-admin")
scope = Scope(viewer=admin)

def rss_mb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) / 1024

def ledger_only(group):
    # The report as it was before the day sums: every entry of the term read (and, by day, cut at midnight).
    return accounting.usage(allocations_in_scope(scope), window, group)

out = {"reports": {}}
for name, report in (("course", usage_report), ("user", usage_report), ("day", usage_report),
                     ("course (ledger only, before)", ledger_only), ("user (ledger only, before)", ledger_only),
                     ("day (ledger only, before)", ledger_only)):
    group = name.split()[0]
    rows = report(scope, window, group) if report is usage_report else report(group)  # warm
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        rows = usage_report(scope, window, group) if report is usage_report else report(group)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    out["reports"][name] = {"rows": len(rows), "p50_ms": round(statistics.median(times), 1),
                            "p95_ms": round(times[max(0, int(0.95 * len(times) + 0.999) - 1)], 1)}
out["sums_agree"] = {}
for group in ("course", "user", "day"):
    summed_rows = {r.key: r.gpu_seconds for r in usage_report(scope, window, group)}
    before_rows = {r.key: r.gpu_seconds for r in ledger_only(group)}
    out["sums_agree"][group] = summed_rows.keys() == before_rows.keys() and all(
        abs(summed_rows[k] - before_rows[k]) < 1e-3 for k in summed_rows)
out["day_sums_agree"] = all(out["sums_agree"].values())

from jobs.conf import policy_config
from jobs.policy import decayed_usage
from jobs.selectors import decayed_usage_by_person, fair_share_entries

def timed(read, n):
    read()  # warm
    times = []
    for _ in range(n):
        start = time.perf_counter()
        value = read()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return value, {"p50_ms": round(statistics.median(times), 1),
                   "p95_ms": round(times[max(0, int(0.95 * len(times) + 0.999) - 1)], 1)}

half_life = policy_config().half_life_s
entries = fair_share_entries(window.now, half_life)
def in_python():  # what every pass and dry run did before: every entry into Python
    rows = entries.values_list("user_id", "starts_at", "ends_at", "share")
    return decayed_usage(((u, s.timestamp(), e.timestamp() if e else None, float(share)) for u, s, e, share in rows),
                         now=window.now.timestamp(), half_life_s=half_life)
summed, now_figures = timed(lambda: decayed_usage_by_person(window.now, half_life), runs)
before, before_figures = timed(in_python, min(runs, 3))
out["fair_share"] = {"entries": entries.count(), "people": len(summed), **now_figures,
                     "before": before_figures, "agree": summed.keys() == before.keys() and all(
                         abs(summed[k] - before[k]) <= 1e-9 * max(abs(before[k]), 1.0) for k in before)}

rss_start = rss_peak = rss_mb()
start = time.perf_counter()
first = None
count = size = 0
# As GET /api/v1/usage/?group_by=entry&format=csv serves it on PostgreSQL: the header, then COPY's chunks.
for chunk in csvstream.csv_chunks(ENTRY_HEADER, None, usage_entries_csv(scope, window)):
    if first is None and size:
        first = (time.perf_counter() - start) * 1000
    count += chunk.count(b"\n")
    size += len(chunk)
    if count % 50000 < 200:
        rss_peak = max(rss_peak, rss_mb())
elapsed = time.perf_counter() - start
rss_peak = max(rss_peak, rss_mb())
count -= 1  # the header
out["csv"] = {"rows": count, "mb": round(size / 2**20, 1), "first_byte_ms": round(first or 0, 1),
              "rows_per_s": round(count / elapsed) if elapsed else 0, "seconds": round(elapsed, 2),
              "rss_mb_start": round(rss_start, 1), "rss_mb_peak": round(rss_peak, 1)}

if plans:
    use = allocations_in_scope(scope)
    texts = {}
    def explain(name, sql, params):
        with connection.cursor() as cursor:
            cursor.execute("SET jit = off")  # as the reports run (labs.ledger.without_jit)
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            texts[name] = "\n".join(row[0] for row in cursor.fetchall())
    for group in ("course", "user"):
        field = accounting.KEY_GROUPS[group]
        query = accounting.in_window(use, window).order_by().values(field).annotate(held=accounting._weighted(window))
        explain(f"{group} (ledger only, before)", *query.query.sql_with_params())
    explain("day (ledger only, before)", *accounting.buckets_sql(use, window, accounting.bucket_edges(window, "day")))
    from labs.models import UsageDayCourse
    sums = (UsageDayCourse.objects.filter(day__gte="2026-02-01", day__lte="2026-07-31", kind__in=["notebook", "job"])
            .order_by().values("day").annotate(held=Sum("share_us")).values_list("day", "held"))
    explain("day sums", *sums.query.sql_with_params())
    from labs.usage import daysums
    for group in ("course", "user"):
        column = daysums.KEY_COLUMNS[group]
        rows = daysums._summed(dt.date(2026, 2, 1), dt.date(2026, 7, 31), per_person=group == "user",
                               kinds=["notebook", "job"], user_id=None, course_id=None)
        explain(f"{group} sums", *rows.values(column).annotate(held=Sum("share_us")).query.sql_with_params())
    explain("day: open entries", *accounting.in_window(use.filter(ends_at__isnull=True), window).order_by()
            .values_list("starts_at", "ends_at", "share").query.sql_with_params())
    inside = use.filter(starts_at__gte=window.start, starts_at__lt=window.until)
    page = inside.order_by("starts_at", "id").values_list(*accounting.ENTRY_COLUMNS)
    explain("csv_page", *page[:10000].query.sql_with_params())
    out["plans"] = texts
print(json.dumps(out))
"""


class Command(BaseCommand):
    help = "Time the usage reports and the CSV export on a year of ledger entries in a throwaway PostgreSQL database."

    def add_arguments(self, parser):
        parser.add_argument("--allocations", type=int, default=2_000_000, help="Ledger entries over one year.")
        parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432/postgres",
                            help="A PostgreSQL server (a database is made there and dropped).")  # fmt: skip
        parser.add_argument("--runs", type=int, default=7, help="Timed runs of each report.")
        parser.add_argument("--plans", action="store_true", help="Print EXPLAIN ANALYZE of each query.")
        parser.add_argument("--json", action="store_true", help="Print one JSON object instead of the figures.")

    def handle(self, *args, **options):
        if options["allocations"] < 100 or options["runs"] < 1:
            raise CommandError("--allocations must be at least 100 and --runs at least 1.")
        if not options["database_url"].startswith(("postgres://", "postgresql://")):
            raise CommandError("--database-url must be a PostgreSQL URL.")
        with throwaway_postgres(options["database_url"], "bench_usage") as url:
            env = {**os.environ, **throwaway_secrets(), "DATABASE_URL": url, "DEBUG": "0", "PYTHONPATH": str(ROOT)}
            for key in ("DJANGO_SETTINGS_MODULE", "PORTAL_TEST_DB"):
                env.pop(key, None)
            begun = time.monotonic()
            filled = setup_database(env, SETUP, extra_env={"BENCH_ALLOCATIONS": str(options["allocations"])},
                                    timeout=3600)  # fmt: skip
            fill_s = round(time.monotonic() - begun, 1)
            figures = shell_json(
                env, MEASURE, timeout=3600, what="Measuring the usage reports",
                extra_env={"BENCH_RUNS": str(options["runs"]), "BENCH_PLANS": "1" if options["plans"] else "0"},
            )  # fmt: skip
        figures.update(allocations=filled["allocations"], day_sums=filled["day_sums"], fill_s=fill_s)
        if options["json"]:
            self.stdout.write(json.dumps(figures))
            return
        plans = figures.pop("plans", {})
        self.stdout.write(f"{figures['allocations']} ledger entries filled in {fill_s} s")
        sums = figures["day_sums"]
        self.stdout.write(f"day sums: {sums['per_person']} rows per person, {sums['per_course']} per course, filled "
                          f"in {sums['fill_s']} s; the reports by course, user and day agree with the ledger-only ones "
                          f"to the second: {'yes' if figures['day_sums_agree'] else 'NO'}")  # fmt: skip
        for group, report in figures["reports"].items():
            self.stdout.write(f"lab report by {group}: {report['rows']} rows, p50 {report['p50_ms']} ms, "
                              f"p95 {report['p95_ms']} ms")  # fmt: skip
        fair = figures["fair_share"]
        self.stdout.write(
            f"fair-share read (every scheduling pass and job submission): {fair['entries']} entries of eight"
            f" half-lives, {fair['people']} people, p50 {fair['p50_ms']} ms, p95 {fair['p95_ms']} ms; in Python as"
            f" before: p50 {fair['before']['p50_ms']} ms; they agree: {'yes' if fair['agree'] else 'NO'}"
        )
        csv_figures = figures["csv"]
        self.stdout.write(
            f"CSV export: {csv_figures['rows']} rows ({csv_figures['mb']} MB) in {csv_figures['seconds']} s, first "
            f"byte {csv_figures['first_byte_ms']} ms, {csv_figures['rows_per_s']} rows/s, RSS "
            f"{csv_figures['rss_mb_start']} -> {csv_figures['rss_mb_peak']} MB"
        )
        for name, text in plans.items():
            self.stdout.write(f"\n-- plan: {name}\n{text}")
