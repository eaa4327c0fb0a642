"""One reconcile pass (labs/reconcile.py): heal drift between the ledger, jobs, notebooks and the backends."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from labs.reconcile import reconcile


class Command(BaseCommand):
    help = "Compare the ledger, jobs and notebooks with what the backends run and heal each drift (--dry-run: say)."

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Print what it would do; change nothing.")
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print the actions as JSON.")

    def handle(self, *args, dry_run: bool = False, as_json: bool = False, **options):
        report = reconcile(dry_run=dry_run)
        if as_json:
            payload = {
                "dry_run": dry_run,
                "skipped": report.skipped,
                "actions": [a.as_dict() for a in report.actions],
                "errors": report.errors,
            }
            self.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False))
            return
        for action in report.actions:
            self.stdout.write(f"{'would: ' if not action.done else ''}{action.kind}: {action.sentence}")
        for error in report.errors:
            self.stdout.write(f"skipped {error}")
        self.stdout.write(str(report) if not dry_run else f"dry run: {report}")
