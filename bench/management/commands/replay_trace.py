"""Replay a job trace through the queue policy and print the figures of the scheduler benchmark."""

from __future__ import annotations

import json

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from bench.oracle import OracleResult, srtf_oracle
from bench.simulate import SimConfig, SimResult, TraceError, load_trace, simulate
from jobs.policy import PolicyConfig


class Command(BaseCommand):
    help = (
        "Replay a trace (CSV: job_id,user,submit_s,duration_s,gpus) as a discrete-event simulation through the "
        "same policy code the scheduler runs, and print mean/p95 wait, mean JCT, utilisation, idle GPU-hours "
        "while a fitting job waited, and per-user slowdown with Jain's index; beside them the SRTF oracle's "
        "figures on the same trace (preemptive shortest-remaining-time-first with the true durations) and the ratios."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="the trace CSV")
        parser.add_argument("--gpus", type=int, default=40, help="GPUs in the simulated lab (default 40)")
        parser.add_argument("--gpus-per-node", type=int, default=1, help="GPUs per node (default 1, as in the lab)")
        parser.add_argument("--policy", choices=("fifo", "portal", "srtf-oracle"), default="portal")
        parser.add_argument("--tick-s", type=float, default=60.0, help="scheduling tick while jobs wait (default 60)")
        parser.add_argument(
            "--grace-s", type=float, default=None, help="preemption grace period (default: JOBS_PREEMPT_GRACE_S)"
        )
        parser.add_argument(
            "--restart-overhead-s", type=float, default=60.0, help="time a resumed job takes to reload (default 60)"
        )
        parser.add_argument(
            "--no-checkpoint", action="store_true", help="preempted jobs lose their work and start over"
        )
        parser.add_argument(
            "--no-predict",
            action="store_true",
            help="no runtime predictions from history: the policy sees only each job's limit",
        )
        parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")

    def handle(self, *args, **options) -> None:
        if options["gpus"] < 1 or options["gpus_per_node"] < 1 or options["gpus"] % options["gpus_per_node"]:
            raise CommandError("--gpus must be a positive multiple of --gpus-per-node.")
        if options["tick_s"] <= 0:
            raise CommandError("--tick-s must be positive.")
        grace = options["grace_s"] if options["grace_s"] is not None else float(settings.JOBS_PREEMPT_GRACE_S)
        if grace < 0 or options["restart_overhead_s"] < 0:
            raise CommandError("--grace-s and --restart-overhead-s must not be negative.")
        try:
            trace = load_trace(options["file"])
            # The oracle models one-GPU nodes only.
            oracle = srtf_oracle(trace, options["gpus"]) if options["gpus_per_node"] == 1 else None
            if options["policy"] == "srtf-oracle":
                if oracle is None:
                    raise CommandError("--policy srtf-oracle models one-GPU nodes: leave out --gpus-per-node.")
                self._print_oracle(oracle, options)
                return
            config = SimConfig(
                gpus=options["gpus"],
                gpus_per_node=options["gpus_per_node"],
                policy=options["policy"],
                tick_s=options["tick_s"],
                restart_overhead_s=options["restart_overhead_s"],
                checkpoint=not options["no_checkpoint"],
                predict=not options["no_predict"],
                policy_config=PolicyConfig(preempt_grace_s=grace),
            )
            result = simulate(trace, config)
        except TraceError as exc:
            raise CommandError(str(exc)) from None
        figures = result.as_dict()
        if oracle is not None:
            figures["oracle"] = oracle.as_dict()
            figures["vs_oracle"] = _ratios(result, oracle)
        if options["json"]:
            self.stdout.write(json.dumps(figures, indent=2, sort_keys=True))
            return
        self.stdout.write(_report(result, options["file"]))
        if oracle is not None:
            self.stdout.write(_oracle_report(oracle, figures["vs_oracle"]))

    def _print_oracle(self, oracle: OracleResult, options: dict) -> None:
        if options["json"]:
            self.stdout.write(json.dumps({"policy": "srtf-oracle", **oracle.as_dict()}, indent=2, sort_keys=True))
            return
        self.stdout.write(f"trace {options['file']}: {oracle.jobs} jobs, {oracle.gpus} GPUs, policy srtf-oracle")
        self.stdout.write(_oracle_report(oracle, None))


def _ratios(r: SimResult, o: OracleResult) -> dict[str, float | None]:
    def ratio(ours: float, theirs: float) -> float | None:
        return ours / theirs if theirs > 0 else None

    return {"mean_wait": ratio(r.mean_wait_s, o.mean_wait_s), "mean_jct": ratio(r.mean_jct_s, o.mean_jct_s)}


def _oracle_report(o: OracleResult, ratios: dict[str, float | None] | None) -> str:
    def times(key: str) -> str:
        value = ratios.get(key) if ratios else None
        return f"   (this policy: {value:.2f}x)" if value is not None else ""

    return "\n".join(
        [
            "  SRTF oracle (true durations, free preemption; no lab can run it), same trace:",
            f"    mean wait        {o.mean_wait_s / 60:10.1f} min ({o.mean_wait_s:.1f} s){times('mean_wait')}",
            f"    mean JCT         {o.mean_jct_s / 3600:10.2f} h ({o.mean_jct_s:.0f} s){times('mean_jct')}",
            f"    Jain's index     {o.jain_index:10.3f}",
            f"    idle GPU-hours while a fitting job waited {o.idle_gpu_hours_while_waiting:.2f}",
            f"    preemptions {o.preemptions}; took {o.wall_s:.1f} s",
        ]
    )


def _report(r: SimResult, name: str) -> str:
    lines = [
        f"trace {name}: {r.jobs} jobs, {r.gpus} GPUs, policy {r.policy}",
        f"  mean wait          {r.mean_wait_s / 60:10.1f} min ({r.mean_wait_s:.1f} s)",
        f"  p95 wait           {r.p95_wait_s / 60:10.1f} min",
        f"  mean JCT           {r.mean_jct_s / 3600:10.2f} h ({r.mean_jct_s:.0f} s)",
        f"  utilisation        {r.utilisation * 100:10.1f} %",
        f"  idle GPU-hours while a fitting job waited {r.idle_gpu_hours_while_waiting:.2f}",
        f"  Jain's index over per-user mean slowdown  {r.jain_index:.3f}",
        _eta_line(r),
        f"  preemptions {r.preemptions}; {r.passes} passes, {r.pass_ms_mean:.2f} ms each; replay took {r.wall_s:.1f} s",
        "  per user:",
    ]
    for user, figures in r.per_user.items():
        lines.append(
            f"    {user:16s} jobs {figures['jobs']:6.0f}  mean wait {figures['mean_wait_s'] / 60:8.1f} min  "
            f"mean JCT {figures['mean_jct_s'] / 3600:7.2f} h  mean slowdown {figures['mean_slowdown']:7.2f}  "
            f"preempted {figures['preemptions']:.0f}"
        )
    return "\n".join(lines)


def _eta_line(r: SimResult) -> str:
    lines = []
    for what, e in (("jobs that waited", r.eta), ("of them waiting in the plan, not for a claim", r.eta_planned)):
        if e is None or not e.waited:
            lines.append(f"  ETAs at submission: no {what}")
            continue
        lines.append(
            f"  ETAs at submission, {e.waited} {what}: median error {e.median_abs_error_s / 60:.1f} min, "
            f"p90 {e.p90_abs_error_s / 60:.1f} min; within 25 % of the wait {e.within_25 * 100:.0f} %, "
            f"inside the range shown {e.in_range * 100:.0f} %, unknown {e.unknown}"
        )
    if not r.predictions:
        lines.append("  (no run-time predictions: --no-predict)")
    return "\n".join(lines)
