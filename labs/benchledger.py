"""The ledger's invariant after a benchmark run (manage.py bench_portal), on the run's own database.

`ledger_over_100pct`: how many GPUs were held above their whole (shares summing past 1) at some instant, from every
Allocation row (a sweep over each GPU's starts and ends; an end and a start at the same instant do not overlap).
When the project has `manage.py check_ledger`, it runs too and its verdict is reported beside this count.
"""

from __future__ import annotations

import subprocess
import sys

from labs.benchkit import ROOT, shell_json

OVER_100PCT = """
import json
from collections import defaultdict
from decimal import Decimal
from labs.models import Allocation

points = defaultdict(list)
rows = 0
for gpu, share, starts_at, ends_at in Allocation.objects.values_list("gpu_id", "share", "starts_at", "ends_at"):
    rows += 1
    points[gpu].append((starts_at, 1, share))
    if ends_at is not None:
        points[gpu].append((ends_at, 0, -share))
over, worst = 0, Decimal(0)
for changes in points.values():
    held, above = Decimal(0), False
    for _at, _order, delta in sorted(changes, key=lambda p: (p[0], p[1])):
        held += delta
        if held > 1:
            above, worst = True, max(worst, held)
    over += above
print(json.dumps({"ledger_over_100pct": over, "worst_share": float(worst), "allocation_rows": rows}))
"""


def ledger_check(env: dict[str, str], *, have_check_ledger: bool) -> dict:
    found = shell_json(env, OVER_100PCT, extra_env={}, timeout=300, what="Checking the ledger")
    found["by"] = "own sweep"
    if have_check_ledger:
        done = subprocess.run(  # noqa: S603 - this interpreter, our own manage.py, fixed argv
            [sys.executable, "manage.py", "check_ledger"], cwd=ROOT, env=env, capture_output=True, text=True,
            timeout=300, check=False,
        )  # fmt: skip
        found.update(by="own sweep and check_ledger", check_ledger_ok=done.returncode == 0)
        found["check_ledger_output"] = (done.stdout + done.stderr)[-2000:]
    return found
