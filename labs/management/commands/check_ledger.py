"""Check the ledger's invariants (labs/ledger_check.py), and that the day sums kept beside it agree with it; exit 1,
naming each violation, when one does not hold."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError
from django.utils.dateparse import parse_datetime

from labs.ledger_check import INVARIANTS, day_sum_violations, ledger_violations


class Command(BaseCommand):
    help = "Check the GPU ledger's invariants; exit status 1 and one sentence per violation when one fails."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print the result as JSON.")
        parser.add_argument(
            "--since", help="Check GPU shares and day sums only from this ISO time on (default: the whole ledger)."
        )

    def handle(self, *args, as_json: bool = False, since: str | None = None, **options):
        start = None
        if since:
            start = parse_datetime(since)
            if start is None or start.tzinfo is None:
                raise CommandError("--since takes an ISO date and time with its zone, e.g. 2025-03-01T00:00:00+01:00.")
        violations = ledger_violations(since=start) + day_sum_violations(since=start)
        if as_json:
            self.stdout.write(_dumps({"ok": not violations, "invariants": INVARIANTS, "violations": violations}))
        else:
            for code, sentence in INVARIANTS.items():
                broken = sum(1 for v in violations if v.code == code)
                self.stdout.write(f"{'FAIL' if broken else 'ok  '} {code}: {sentence}")
            for violation in violations:
                self.stdout.write(f"  - {violation.sentence}")
            self.stdout.write(f"{len(violations)} violation{'s' if len(violations) != 1 else ''}.")
        if violations:
            raise SystemExit(1)


def _dumps(result: dict) -> str:
    result = {**result, "violations": [v.as_dict() for v in result["violations"]]}
    return json.dumps(result, indent=2, ensure_ascii=False)
