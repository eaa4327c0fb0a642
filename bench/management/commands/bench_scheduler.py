"""Time one scheduling pass of the portal policy over a deep queue on a busy lab."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from bench.scheduler import bench_pass


class Command(BaseCommand):
    help = "Time one scheduling pass with N queued jobs on a lab of G GPUs (median and p95 over repeats)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--queued", type=int, default=10_000, help="queued jobs (default 10000)")
        parser.add_argument("--gpus", type=int, default=40, help="GPUs in the lab (default 40)")
        parser.add_argument("--gpus-per-node", type=int, default=1, help="GPUs per node (default 1)")
        parser.add_argument("--repeats", type=int, default=30, help="passes to time (default 30)")
        parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")

    def handle(self, *args, **options) -> None:
        if options["queued"] < 0 or options["repeats"] < 1:
            raise CommandError("--queued must not be negative and --repeats must be at least 1.")
        if options["gpus"] < 1 or options["gpus_per_node"] < 1 or options["gpus"] % options["gpus_per_node"]:
            raise CommandError("--gpus must be a positive multiple of --gpus-per-node.")
        result = bench_pass(
            queued=options["queued"],
            gpus=options["gpus"],
            gpus_per_node=options["gpus_per_node"],
            repeats=options["repeats"],
        )
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict(), indent=2, sort_keys=True))
            return
        self.stdout.write(
            f"one pass over {result.queued} queued jobs on {result.nodes} nodes ({result.gpus} GPUs), "
            f"{result.repeats} repeats:\n"
            f"  median {result.pass_ms_median:.1f} ms, p95 {result.pass_ms_p95:.1f} ms\n"
            f"  decisions: {result.starts} starts, {result.preemptions} preemptions, {result.waiting} still queued"
        )
