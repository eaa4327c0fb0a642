"""What each `gpulab` command does: one function per command, taking the parsed arguments, returning the exit code."""

from __future__ import annotations

import argparse
import getpass
import os
import shlex
import sys
import time
import webbrowser
from typing import Any

from gpulab._output import as_json, cell, progress, table, when
from gpulab.client import Client
from gpulab.completion import script as completion_script
from gpulab.config import resolve, write_config
from gpulab.errors import GpulabError
from gpulab.exits import EXIT_CANCELLED, EXIT_FAILED
from gpulab.jobfile import JobFileError, load_job_file
from gpulab.models import Gpu, Job


def client(args: argparse.Namespace) -> Client:
    return Client(args.url, args.token)


def out(args: argparse.Namespace, value: Any, human: str) -> None:
    print(as_json(value) if args.json else human)


# --- login, whoami, usage, gpus, completion ------------------------------------------------------------------------


def login(args: argparse.Namespace) -> int:
    url = resolve(args.portal or args.url, "-", need_token=False).url
    token = args.token or os.environ.get("GPULAB_TOKEN")
    if args.username or not token:
        username = args.username or input("Username: ").strip()
        password = sys.stdin.readline().rstrip("\n") if args.password_stdin else getpass.getpass("Password: ")
        with Client(url, "-") as anonymous:
            from gpulab import _calls

            token = anonymous.run(_calls.token(username, password))["token"]
    with Client(url, token) as lab:
        me = lab.me()
    path = write_config(url, token)
    out(args, {"url": url, "username": me.username, "role": me.role, "config": str(path)},
        f"Signed in to {url} as {me.username} ({me.role}); saved in {path}.")  # fmt: skip
    return 0


def whoami(args: argparse.Namespace) -> int:
    with client(args) as lab:
        me = lab.me()
    courses = ", ".join(c.get("code", "?") for c in me.courses) or "none"
    used = me.usage
    human = (
        f"{me.username} ({me.role}) at {lab.url}\ncourses: {courses}\n"
        f"this week: {used.get('gpu_hours_week', 0)} GPU-hours; running: {used.get('jobs_running', 0)} jobs, "
        f"{used.get('notebooks_running', 0)} notebooks; queued: {used.get('jobs_queued', 0)} jobs"
    )
    out(args, me, human)
    return 0


def usage(args: argparse.Namespace) -> int:
    with client(args) as lab:
        report = lab.usage(from_=args.from_, to=args.to, group_by=args.group_by)
    rows = [[row.key, f"{row.gpu_hours:.2f}", row.starts_at] for row in report.rows]
    human = table([report.group_by or "key", "gpu-hours", "from"], rows, empty="No GPU time used in that window.")
    total = f"total: {report.total_gpu_hours:.2f} GPU-hours, {when(report.from_)} – {when(report.to)}"
    out(args, report, f"{human}\n{total}")
    return 0


def _gpu_table(gpus: list[Gpu], *, free: bool) -> str:
    shown = [g for g in gpus if g.available] if free else gpus
    rows = [
        [
            f"{g.node}/{g.index}",
            g.model,
            "stale" if g.stale else g.node_status,
            f"{g.util_pct}%" if g.util_pct is not None else None,
            f"{g.mem_used_mb}/{g.mem_total_mb} MB" if g.mem_used_mb is not None else None,
            f"{g.temp_c}°C" if g.temp_c is not None else None,
            "free" if g.available else ("busy" if (g.holder or {}).get("busy") else "—"),
        ]
        for g in shown
    ]
    headers = ["gpu", "model", "status", "util", "memory", "temp", "use"]
    return table(headers, rows, empty="No GPUs free now." if free else "No GPUs to show.")


def gpus(args: argparse.Namespace) -> int:
    with client(args) as lab:
        if not args.watch:
            board = lab.gpus()
            out(args, [g for g in board if g.available or not args.free], _gpu_table(board, free=args.free))
            return 0
        for board in lab.watch_gpus(timeout=args.duration):
            if args.json:
                print(as_json([g for g in board if g.available or not args.free]).replace("\n", ""), flush=True)
            else:
                clear = "\x1b[H\x1b[2J" if sys.stdout.isatty() else ""
                stamp = time.strftime("%H:%M:%S")
                print(f"{clear}{stamp}  {len(board)} GPUs\n{_gpu_table(board, free=args.free)}\n", flush=True)
    return 0


def completion(args: argparse.Namespace) -> int:
    from gpulab.cli import build_parser

    print(completion_script(build_parser(), args.shell))
    return 0


# --- jobs -----------------------------------------------------------------------------------------------------------


def _spec(args: argparse.Namespace) -> dict[str, Any]:
    spec = load_job_file(args.file) if args.file else {}
    for name in ("name", "image", "gpus", "nodes", "max_runtime_s", "priority", "reservation", "course"):
        if getattr(args, name) is not None:
            spec[name] = getattr(args, name)
    command = list(args.command or [])
    if command and command[0] == "--":
        command = command[1:]
    if command:
        spec["command"] = command
    if getattr(args, "script", None):
        try:
            with open(args.script, encoding="utf-8") as handle:
                spec["script"] = handle.read()
        except OSError as exc:
            raise JobFileError(f"--script {args.script}: {exc.strerror}.") from exc
        if not command:  # the flag's script instead of the job file's command
            spec.pop("command", None)
    if args.env:
        env = dict(spec.get("env") or {})
        for pair in args.env:
            name, sep, value = pair.partition("=")
            if not sep or not name:
                raise JobFileError(f"--env takes NAME=VALUE, not {pair!r}.")
            env[name] = value
        spec["env"] = env
    if args.datasets:
        spec["datasets"] = list(spec.get("datasets") or []) + args.datasets
    for need in ("image", "command", "gpus", "max_runtime_s"):
        if need == "command" and spec.get("script"):
            continue
        if spec.get(need) in (None, "", []):
            flag = {"max_runtime_s": "--max-runtime", "command": "-- COMMAND..."}.get(need, f"--{need}")
            raise JobFileError(f"The job has no {need}: put it in the job file or give {flag}.")
    return spec


def _job_line(job: Job) -> str:
    where = f" on {', '.join(job.node_names)}" if job.node_names else ""
    if job.status == "queued":
        return f"job {job.id} queued (#{job.position or '?'}): {job.reason}"
    if job.finished:
        code = "" if job.exit_code is None else f", exit code {job.exit_code}"
        return f"job {job.id} {job.status}{code}{where}" + (f": {job.reason}" if job.reason else "")
    return f"job {job.id} {job.status}{where}"


def _result(job: Job) -> int:
    return 0 if job.status == "succeeded" else (EXIT_CANCELLED if job.status == "cancelled" else EXIT_FAILED)


def _wait(lab: Client, job_id: int, *, timeout: float | None, quiet: bool) -> Job:
    seen: list[str] = []
    started = time.monotonic()

    def show(job: Job) -> None:
        line = _job_line(job)
        if not quiet and (not seen or seen[-1] != line):
            seen.append(line)
            progress(f"[{time.monotonic() - started:6.0f} s] {line}")

    return lab.jobs.wait(job_id, timeout=timeout, on_progress=show)


def job_submit(args: argparse.Namespace) -> int:
    spec = _spec(args)
    with client(args) as lab:
        job = lab.jobs.submit(spec)
        if args.json and not (args.follow or args.wait):
            print(as_json(job))
            return 0
        if not args.json:
            print(f"Submitted job {job.id} ({job.name or 'unnamed'}): {job.status}" + (
                f", #{job.position} in the queue" if job.position else ""))  # fmt: skip
        if args.follow:
            for line in lab.jobs.logs(job.id, follow=True):
                print(line, flush=True)
        if not (args.wait or args.follow):
            return 0
        final = _wait(lab, job.id, timeout=args.timeout, quiet=args.json)
        out(args, final, _job_line(final))
        return _result(final) if args.wait else 0


def job_preview(args: argparse.Namespace) -> int:
    with client(args) as lab:
        answer = lab.jobs.preview(_spec(args))
    out(args, answer, answer.sentence)
    return 0


def job_list(args: argparse.Namespace) -> int:
    with client(args) as lab:
        found = []
        for job in lab.jobs.list(status=args.status, mine=args.mine, page_size=min(args.limit, 500)):
            found.append(job)
            if len(found) >= args.limit:
                break
    rows = [[j.id, j.name, j.status, j.owner, f"{j.gpus}×{j.nodes}", j.submitted_at, j.reason] for j in found]
    headers = ["id", "name", "status", "owner", "gpus", "submitted", "reason"]
    out(args, found, table(headers, rows, empty="No jobs yet: gpulab jobs submit -f job.yaml"))
    return 0


def job_show(args: argparse.Namespace) -> int:
    with client(args) as lab:
        job = lab.jobs.get(args.job_id)
    lines = [
        _job_line(job),
        f"name: {job.name}   owner: {job.owner}   attempt: {job.attempt}   priority: {job.priority}",
        f"image: {job.image}",
        f"command: {shlex.join(job.command)}" if not job.script else "script:\n" + job.script.rstrip("\n"),
        f"gpus: {job.gpus} per node × {job.nodes}   max runtime: {job.max_runtime_s} s",
        f"submitted: {when(job.submitted_at)}   started: {when(job.started_at)}   finished: {when(job.finished_at)}",
        "events:",
        *(f"  {when(e.at)}  {e.from_state or '—'} → {e.to_state} (#{e.attempt}): {e.reason}" for e in job.events),
    ]
    out(args, job, "\n".join(lines))
    return 0


def job_logs(args: argparse.Namespace) -> int:
    with client(args) as lab:
        lines = lab.jobs.logs(args.job_id, follow=args.follow, tail=args.tail, attempt=args.attempt, rank=args.rank)
        for line in lines:
            print(as_json({"line": line}).replace("\n", "") if args.json else line, flush=True)
    return 0


def job_cancel(args: argparse.Namespace) -> int:
    with client(args) as lab:
        job = lab.jobs.cancel(args.job_id)
    out(args, job, f"Cancelling job {job.id}: {job.status}" + (" (stopping)" if job.stopping else ""))
    return 0


def job_wait(args: argparse.Namespace) -> int:
    with client(args) as lab:
        job = _wait(lab, args.job_id, timeout=args.timeout, quiet=args.quiet or args.json)
    out(args, job, _job_line(job))
    return _result(job)


# --- notebooks ------------------------------------------------------------------------------------------------------


def _nb_rows(notebooks) -> str:
    rows = [[n.id, n.profile, n.status, n.node, n.ends_at, n.url or n.reason] for n in notebooks]
    return table(["id", "profile", "status", "node", "ends", "url / reason"], rows,
                 empty="No notebooks: gpulab nb start PROFILE (gpulab nb profiles lists them)")  # fmt: skip


def nb_start(args: argparse.Namespace) -> int:
    with client(args) as lab:
        notebook = lab.notebooks.start(args.profile, wait=False)
        if not args.no_wait:
            if not args.json:
                progress(f"notebook {notebook.id} {notebook.status}; waiting until it is ready…")
            notebook = lab.notebooks.wait(notebook.id, timeout=args.timeout)
    out(args, notebook, notebook.url or f"notebook {notebook.id} {notebook.status}: {notebook.reason}")
    if args.open and notebook.url:
        webbrowser.open(notebook.url)
    return 0


def nb_list(args: argparse.Namespace) -> int:
    with client(args) as lab:
        notebooks = lab.notebooks.list(mine=not args.all)
    out(args, notebooks, _nb_rows(notebooks))
    return 0


def nb_profiles(args: argparse.Namespace) -> int:
    with client(args) as lab:
        profiles = lab.notebooks.profiles()
    rows = [[p.slug, p.name, p.gpu_share, f"{p.max_session_s // 3600} h", p.description] for p in profiles]
    out(args, profiles, table(["profile", "name", "gpu", "max", "about"], rows, empty="No profiles offered to you."))
    return 0


def nb_stop(args: argparse.Namespace) -> int:
    with client(args) as lab:
        notebook = lab.notebooks.stop(args.notebook_id)
    out(args, notebook, f"notebook {notebook.id} {notebook.status}")
    return 0


def nb_extend(args: argparse.Namespace) -> int:
    with client(args) as lab:
        notebook = lab.notebooks.extend(args.notebook_id)
    out(args, notebook, f"notebook {notebook.id} kept until {when(notebook.ends_at)}")
    return 0


def nb_open(args: argparse.Namespace) -> int:
    with client(args) as lab:
        notebook = lab.notebooks.get(args.notebook_id)
    if not notebook.url:
        raise GpulabError(f"Notebook {notebook.id} is {notebook.status}, not ready: {notebook.reason}")
    out(args, notebook, notebook.url)
    if not args.json:
        webbrowser.open(notebook.url)
    return 0


# --- reservations ---------------------------------------------------------------------------------------------------


def _res_rows(reservations) -> str:
    rows = [[r.id, r.title, r.starts_at, r.ends_at, r.nodes, r.status, r.owner] for r in reservations]
    headers = ["id", "title", "starts", "ends", "nodes", "status", "owner"]
    return table(headers, rows, empty="No reservations in that window.")


def reserve_create(args: argparse.Namespace) -> int:
    nodes = [n.strip() for n in args.nodes.split(",") if n.strip()] if args.nodes else None
    with client(args) as lab:
        made = lab.reservations.create(
            args.title, args.start, args.end, nodes=nodes, node_count=args.node_count, all_nodes=args.all_nodes,
            course=args.course, repeat_weekly_until=args.weekly_until, owner=args.owner,
        )  # fmt: skip
    weeks = f" ({len(made.occurrences)} weeks)" if len(made.occurrences) > 1 else ""
    out(args, made, f"Reservation {made.id} {made.status}{weeks}: {cell(made.nodes)}, "
                    f"{when(made.starts_at)} – {when(made.ends_at)}")  # fmt: skip
    return 0


def reserve_list(args: argparse.Namespace) -> int:
    with client(args) as lab:
        found = lab.reservations.list(from_=args.from_, to=args.to)
    out(args, found, _res_rows(found))
    return 0


def reserve_cancel(args: argparse.Namespace) -> int:
    with client(args) as lab:
        cancelled = lab.reservations.cancel(args.reservation_id)
    out(args, cancelled, f"Reservation {cancelled.id}: {cancelled.status}")
    return 0


def reserve_free(args: argparse.Namespace) -> int:
    with client(args) as lab:
        free = lab.reservations.availability(args.start, args.end)
    out(args, free, f"{free.free_count} of {free.ready_count} ready nodes free: {cell(free.free_nodes)}")
    return 0
