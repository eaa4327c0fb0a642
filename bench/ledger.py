"""The ledger's invariant after a benchmark run (manage.py bench_portal), on the run's own database.

`ledger_over_100pct`: how many GPUs were held above their whole (shares summing past 1) at some instant, from every
Allocation row (a sweep over each GPU's starts and ends; an end and a start at the same instant do not overlap).
When the project has `manage.py check_ledger`, it runs too and its verdict is reported beside this count.
"""

from __future__ import annotations

import subprocess
import sys

from bench.kit import ROOT, shell_json

OVER_100PCT = """
import json
from collections import defaultdict
from decimal import Decimal
from labs.models import Allocation

rows = defaultdict(list)
for gpu, share, starts_at, ends_at, ref in Allocation.objects.values_list(
    "gpu__node__name", "share", "starts_at", "ends_at", "ref"
):
    rows[gpu].append((starts_at, ends_at, share, ref))
over, worst, examples = 0, Decimal(0), []
for gpu, held_by in sorted(rows.items()):
    changes = [(start, 1, share) for start, _end, share, _ref in held_by]
    changes += [(end, 0, -share) for _start, end, share, _ref in held_by if end is not None]
    held, above = Decimal(0), False
    for at, _order, delta in sorted(changes):  # at one instant, ends before starts
        held += delta
        if held > 1:
            worst = max(worst, held)
            if not above and len(examples) < 5:
                holders = [{"ref": ref, "share": str(share), "from": start.isoformat(),
                            "until": end.isoformat() if end else None}
                           for start, end, share, ref in held_by if start <= at and (end is None or end > at)]
                examples.append({"gpu": gpu, "at": at.isoformat(), "held": str(held), "holders": holders})
            above = True
    over += above
print(json.dumps({"ledger_over_100pct": over, "worst_share": float(worst),
                  "allocation_rows": sum(len(r) for r in rows.values()), "examples": examples}))
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
