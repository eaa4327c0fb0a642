"""The `gpulab` command: the portal from a terminal. `gpulab --help`, `gpulab jobs --help`, ...

Exit codes a script can rely on (also in sdk/README.md):
  0  done (for `jobs wait` and `jobs submit --wait`: the job succeeded)
  1  the job failed
  2  bad input: a wrong flag, a missing or unreadable job file, bad YAML
  3  not configured: no portal URL or no token (run `gpulab login`)
  4  the portal refused: invalid request, unknown profile, not allowed, quota, conflict, not found
  5  the portal cannot be reached, or failed on its side (5xx)
  6  a wait timed out (--timeout)
  7  the job was cancelled
  130 interrupted (Ctrl-C)
"""

from __future__ import annotations

import argparse
import sys
import zoneinfo

from gpulab import commands
from gpulab._output import fit_sentence, print_times_in
from gpulab._version import VERSION
from gpulab.errors import (
    ApiError,
    ConfigError,
    Conflict,
    ConnectionFailed,
    GpulabError,
    QuotaExceeded,
    ServerError,
    WaitTimeout,
)
from gpulab.exits import (
    EXIT_CONFIG,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_TIMEOUT,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
)
from gpulab.jobfile import JobFileError

EPILOG = """\
examples:
  gpulab login https://gpulab.example.edu              # asks for your username and password
  gpulab jobs submit -f job.yaml --follow --wait       # queue, stream its log, exit with its result
  gpulab jobs submit --image python:3.12-slim --gpus 1 --max-runtime 600 -- python -c "print('hi')"
  gpulab jobs wait 42 --timeout 3600 && echo done
  gpulab nb start pytorch-quarter --open
  gpulab reserve create --title "Lab 3" --start 2026-12-01T10:00 --end 2026-12-01T12:00 --count 4
  gpulab gpus --watch
  gpulab completion bash > ~/.local/share/bash-completion/completions/gpulab

exit codes: 0 done/succeeded, 1 job failed, 2 bad input, 3 not configured (gpulab login), 4 refused by the portal,
5 portal unreachable or failing, 6 wait timed out, 7 job cancelled, 130 interrupted.
"""


SUBMIT_EXAMPLES = """\
examples:
  gpulab jobs submit -f job.yaml                     # job.yaml: name, image, command (a list), gpus, max_runtime_s
  gpulab jobs submit -f job.yaml --nodes 4 --follow  # flags override the file; print the log as it is written
  gpulab jobs submit --image python:3.12-slim --gpus 1 --max-runtime 600 --env SEED=1 -- python train.py --lr 0.1
  gpulab jobs submit -f job.yaml --wait --timeout 7200 --json   # exit 0 succeeded, 1 failed, 6 timed out, 7 cancelled
"""
RESERVE_EXAMPLES = """\
examples:
  gpulab reserve create --title "Thesis run" --start 2026-12-01T09:00 --end 2026-12-01T18:00 --nodes gpu03,gpu04
  gpulab reserve create --title "DL-101 lab" --start 2026-12-01T14:00 --end 2026-12-01T16:00 --count 8 \\
      --course DL-101 --weekly-until 2027-01-26
  gpulab reserve create --title "Hackathon" --start 2026-12-12T08:00 --end 2026-12-13T08:00 --all
A conflict exits 4 and names the earliest window that would fit.
"""


def positive_int(text: str) -> int:
    """A count of at least 1 (`--limit 0` is a usage error, not quietly one job)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, not {text!r}")
    return value


class Parser(argparse.ArgumentParser):
    """Usage errors as one line and exit code 2 (argparse's own code), never a traceback."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"gpulab: {message} (see: {self.prog} --help)\n")


def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print JSON (for scripts) instead of tables")
    common.add_argument("--url", help="the portal (default: GPULAB_URL, then the config file)")
    common.add_argument("--token", help="an API token (default: GPULAB_TOKEN, then the config file)")
    common.add_argument(
        "--tz",
        metavar="ZONE",
        help="print times in this zone (an IANA name such as America/Sao_Paulo, or 'local' for this machine's);"
        " default: the lab's",
    )
    return common


def _job_fields(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--file", help="a job file (YAML: name, image, command, gpus, nodes, ...)")
    parser.add_argument("--name")
    parser.add_argument("--image")
    parser.add_argument("--gpus", type=int, help="GPUs per node")
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--max-runtime", type=int, dest="max_runtime_s", metavar="SECONDS")
    parser.add_argument("--priority", choices=["low", "normal", "high"])
    parser.add_argument("--reservation", type=int, metavar="ID")
    parser.add_argument("--course")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--dataset", action="append", default=[], dest="datasets", metavar="NAME")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="after --: the argv to run")


def build_parser() -> Parser:
    common = _common()
    root = Parser(
        prog="gpulab",
        description="The GPU Lab Portal from a terminal: jobs, notebooks, reservations, live GPUs.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    root.add_argument("--version", action="version", version=f"gpulab {VERSION}")
    top = root.add_subparsers(dest="area", metavar="COMMAND", parser_class=Parser, required=True)

    def sub(group, name: str, help_: str, handler, **kw) -> argparse.ArgumentParser:
        if "epilog" in kw:
            kw["formatter_class"] = argparse.RawDescriptionHelpFormatter
        parser = group.add_parser(name, help=help_, description=help_, parents=[common], **kw)
        parser.set_defaults(handler=handler)
        return parser

    login = sub(top, "login", "Save the portal's URL and your API token (in a file only you can read)", commands.login)
    login.add_argument("portal", nargs="?", help="the portal's URL (default: GPULAB_URL)")
    login.add_argument("--username", help="sign in with your username (the password is asked for)")
    login.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    sub(top, "whoami", "Who the token belongs to, your quota and usage", commands.whoami)
    gpus = sub(top, "gpus", "The lab's GPUs now (--watch: live)", commands.gpus)
    gpus.add_argument("--watch", action="store_true", help="keep the table up to date from the live stream")
    gpus.add_argument("--free", action="store_true", help="only GPUs you could use now")
    gpus.add_argument("--duration", type=float, metavar="SECONDS", help="with --watch: stop after this long")
    usage = sub(top, "usage", "GPU-hours from the lab's ledger", commands.usage)
    usage.add_argument("--from", dest="from_", metavar="TIME")
    usage.add_argument("--to", metavar="TIME")
    usage.add_argument("--group-by", metavar="user|course|...", help="how the portal groups the rows")
    completion = sub(top, "completion", "Print a shell completion script (bash or zsh)", commands.completion)
    completion.add_argument("shell", choices=["bash", "zsh"])

    jobs = top.add_parser("jobs", help="Training jobs: submit, ls, show, logs, wait, cancel, preview")
    jobs_sub = jobs.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser, required=True)
    submit_help = "Queue a job from a file and/or flags"
    submit = sub(jobs_sub, "submit", submit_help, commands.job_submit, epilog=SUBMIT_EXAMPLES)
    _job_fields(submit)
    submit.add_argument("--follow", action="store_true", help="stream the log until the job ends")
    submit.add_argument("--wait", action="store_true", help="wait for the end; exit with the job's result")
    submit.add_argument("--timeout", type=float, metavar="SECONDS", help="give up waiting after this long")
    preview = sub(jobs_sub, "preview", "Would it start now? (nothing is queued)", commands.job_preview)
    _job_fields(preview)
    ls = sub(jobs_sub, "ls", "Jobs you may see, newest first", commands.job_list)
    ls.add_argument("--status", choices=["queued", "starting", "running", "succeeded", "failed", "cancelled"])
    ls.add_argument("--mine", action="store_true")
    ls.add_argument("--limit", type=positive_int, default=50, help="list at most this many jobs")
    for name, help_, handler in (
        ("show", "One job with its events", commands.job_show),
        ("cancel", "Cancel a job (stopping it if it runs)", commands.job_cancel),
    ):
        sub(jobs_sub, name, help_, handler).add_argument("job_id", type=int, metavar="JOB")
    logs = sub(jobs_sub, "logs", "A job's log (-f: follow it as it is written)", commands.job_logs)
    logs.add_argument("job_id", type=int, metavar="JOB")
    logs.add_argument("-f", "--follow", action="store_true")
    logs.add_argument("--tail", type=int, metavar="LINES")
    logs.add_argument("--rank", type=int, default=0)
    logs.add_argument("--attempt", type=int)
    wait_help = "Wait for a job to end; exit 0 if it succeeded, 1 failed, 7 cancelled"
    wait = sub(jobs_sub, "wait", wait_help, commands.job_wait)
    wait.add_argument("job_id", type=int, metavar="JOB")
    wait.add_argument("--timeout", type=float, metavar="SECONDS")
    wait.add_argument("--quiet", action="store_true", help="no progress on stderr")

    nb = top.add_parser("nb", help="Notebooks: start, ls, stop, open, extend, profiles")
    nb_sub = nb.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser, required=True)
    start = sub(nb_sub, "start", "Start a notebook and print its URL once ready", commands.nb_start)
    start.add_argument("profile", help="a profile's short name (gpulab nb profiles)")
    start.add_argument("--no-wait", action="store_true", help="return once queued")
    start.add_argument("--open", action="store_true", help="open it in the browser once ready")
    start.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS")
    sub(nb_sub, "ls", "Your notebooks", commands.nb_list).add_argument("--all", action="store_true")
    sub(nb_sub, "profiles", "The profiles you may start", commands.nb_profiles)
    for name, help_, handler in (
        ("stop", "Stop a notebook", commands.nb_stop),
        ("open", "Open a ready notebook in the browser (and print its URL)", commands.nb_open),
        ("extend", "Keep a notebook: reset its idle time, add time", commands.nb_extend),
    ):
        sub(nb_sub, name, help_, handler).add_argument("notebook_id", type=int, metavar="NOTEBOOK")

    reserve = top.add_parser("reserve", help="Node reservations (teachers, admins): create, ls, cancel, free")
    res_sub = reserve.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser, required=True)
    create = sub(
        res_sub, "create", "Reserve named nodes, a count, or the whole lab", commands.reserve_create,
        epilog=RESERVE_EXAMPLES,
    )  # fmt: skip
    create.add_argument("--title", required=True)
    create.add_argument("--start", required=True, metavar="TIME", help="ISO time, in the lab's zone without offset")
    create.add_argument("--end", required=True, metavar="TIME")
    which = create.add_mutually_exclusive_group(required=True)
    which.add_argument("--nodes", help="comma-separated node names, e.g. gpu01,gpu02")
    which.add_argument("--count", type=int, dest="node_count", help="any N free nodes")
    which.add_argument("--all", action="store_true", dest="all_nodes", help="the whole lab")
    create.add_argument("--course")
    create.add_argument("--weekly-until", metavar="DATE", help="repeat every week until this date")
    create.add_argument("--owner", help="admins: book for this teacher")
    res_ls = sub(res_sub, "ls", "Reservations overlapping a window (default: the next 14 days)", commands.reserve_list)
    res_ls.add_argument("--from", dest="from_", metavar="TIME")
    res_ls.add_argument("--to", metavar="TIME")
    sub(res_sub, "cancel", "Cancel a reservation", commands.reserve_cancel).add_argument("reservation_id", type=int)
    free = sub(res_sub, "free", "Nodes free to reserve in a window", commands.reserve_free)
    free.add_argument("--start", required=True, metavar="TIME")
    free.add_argument("--end", required=True, metavar="TIME")
    return root


def explain(exc: Exception) -> tuple[int, str]:
    """One line and an exit code for anything that went wrong."""
    if isinstance(exc, JobFileError):
        return EXIT_USAGE, str(exc)
    if isinstance(exc, ConfigError):
        return EXIT_CONFIG, str(exc)
    if isinstance(exc, ConnectionFailed):
        return EXIT_UNREACHABLE, str(exc)
    if isinstance(exc, WaitTimeout):
        return EXIT_TIMEOUT, str(exc)
    if isinstance(exc, ServerError):
        return EXIT_UNREACHABLE, f"The portal failed ({exc.status}): {exc.detail}"
    if isinstance(exc, Conflict):
        extra = f"; {fit_sentence(exc.earliest_fit)}" if "earliest_fit" in exc.body else ""
        return EXIT_REFUSED, f"{exc.detail}{extra}"
    if isinstance(exc, QuotaExceeded):
        return EXIT_REFUSED, f"{exc.detail} (quota {exc.limit}: used {exc.used} of {exc.allowed})"
    if isinstance(exc, ApiError):
        return EXIT_REFUSED, f"{exc.detail} ({exc.code})"
    if isinstance(exc, GpulabError):
        return EXIT_REFUSED, str(exc)
    if isinstance(exc, TypeError | ValueError):
        return EXIT_USAGE, str(exc)
    return EXIT_UNREACHABLE, f"{type(exc).__name__}: {exc}"


def _zone_of(args: argparse.Namespace):
    """The zone printed times are in: --tz, else the lab's (GET /api/v1/me/'s lab_time_zone), else this machine's."""
    wanted = getattr(args, "tz", None)
    if wanted == "local":
        return None
    try:
        if wanted:
            return zoneinfo.ZoneInfo(wanted)
        with commands.client(args) as lab:
            name = lab.me().lab_time_zone
        return zoneinfo.ZoneInfo(name) if name else None
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        if wanted:
            raise GpulabError(f"--tz {wanted}: not a time zone (use an IANA name such as Europe/Berlin)") from exc
        return None
    except Exception:  # noqa: BLE001 - a portal that cannot say: this machine's zone, as before
        return None


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    print_times_in(lambda: _zone_of(args))
    try:
        code = args.handler(args)
    except KeyboardInterrupt:
        print("gpulab: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - the CLI's promise: one line, never a traceback
        code, line = explain(exc)
        print(f"gpulab: {line}", file=sys.stderr)
        return code
    return code or EXIT_OK


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
