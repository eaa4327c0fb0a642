"""The runner of one local job attempt: started by jobs.backends.local, outlives the worker that started it.

Usage: python local_runner.py DIR [--reap]

It takes an exclusive lock on DIR/run.lock for as long as it lives, so one attempt never runs twice: a
second runner finds the lock taken (prints "busy") or the attempt finished (prints "done") and leaves.
Otherwise it prints "ok", detaches (double fork, new session), enters a network namespace of its own (only a
loopback, shared by the attempt's ranks), starts one process per rank from DIR/spec.json (argv, never a
shell, inside the bubblewrap sandbox of sandbox.py as the spec's user, with its rlimits; bwrap and setpriv with
the portal's fixed environment, the rank's own applied only in the sandbox's last exec; own process group; output
through a pipe to DIR/rank-N.log, which stops at log_max_bytes), records their pids in DIR/state.json, and watches
them:
- a rank that fails stops the others (the attempt fails, as a Kubernetes Job with backoffLimit 0 does);
- past max_runtime_s, or when DIR/stop appears (cancel), every rank gets SIGTERM, then SIGKILL after the
  grace period;
- every disk_check_s it adds up what the attempt's writable directories (work dir and checkpoints) hold on disk;
  past the spec's disk_quota every rank is killed at once (a grace period would only let it write more) and the
  attempt fails with reason disk_quota_exceeded and a message with the usage and the limit;
and finally writes DIR/exit.json. `--reap` is for a runner that was lost (machine restart): it stops the
ranks it left behind and writes exit.json. Standard library only: it must not import Django.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

if __package__:
    from jobs.backends import sandbox
    from jobs.backends.disk import MAX_DEPTH, TooDeep, disk_usage, size_text
    from jobs.backends.rank_log import RankLog
else:  # run as a script: its own directory is on sys.path
    import sandbox
    from disk import MAX_DEPTH, TooDeep, disk_usage, size_text
    from rank_log import RankLog

POLL_S = 0.1
# After the last rank ended, how long what its leftovers wrote is still read into the log.
DRAIN_S = 2.0
# Status probes take the run lock for an instant to see whether a runner holds it.
LOCK_WAIT_S = 2.0
DISK_CHECK_S = 5.0


def write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def group_alive(pgid: int) -> bool:
    """Is the rank (its process group) still there? A leader that is a zombie nobody reaped counts as gone."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pgid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] != "Z"


def signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def terminate(pgid: int) -> None:
    """SIGTERM to a rank's processes but its leader, the sandbox (bwrap), which would die of it at once and end
    the rank before the job could write its checkpoint; the sandbox ends when the job does."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == pgid:
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGTERM)


def pump(logs: list, timeout: float) -> None:
    """Wait up to timeout for output of any rank and copy it to the logs."""
    open_logs = {log.fd: log for log in logs if log.fd >= 0}
    if not open_logs:
        time.sleep(timeout)
        return
    ready, _, _ = select.select(list(open_logs), [], [], timeout)
    for fd in ready:
        open_logs[fd].pump()


def take(lock) -> bool:
    """The run lock, waiting out the instant a status probe holds it; False if another runner has it."""
    until = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= until:
                return False
            time.sleep(0.01)


def detach() -> None:
    """Double fork: the worker reaps the first child at once; the runner belongs to no one's session."""
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)


def stop_requested(root: Path) -> float | None:
    stop = read_json(root / "stop")
    if stop is None:
        return None
    return float(stop.get("grace_s", 0))


def cannot_start(root: Path, spec: dict, started_at: float, why: str) -> dict:
    for rank in spec["ranks"]:
        with open(root / f"rank-{rank['rank']}.log", "ab") as log:
            log.write(f"{why}\n".encode())
    return {
        "phase": "failed",
        "reason": "cannot_start",
        "message": why,
        "exit_codes": [],
        "started_at": started_at,
    }


def run(root: Path) -> dict:
    spec = json.loads((root / "spec.json").read_text())
    started_at = time.time()
    prepared = enter_sandbox(root, spec, started_at)
    if isinstance(prepared, dict):
        return prepared
    started = start_ranks(root, spec, prepared, started_at)
    if isinstance(started, dict):
        return started
    procs, logs = started
    reason, used = watch(root, spec, procs, logs, started_at)
    # Leftovers of a rank (its children) go with it, and what they wrote last goes to the log.
    for proc in procs:
        signal_group(proc.pid, signal.SIGKILL)
    drain_until = time.monotonic() + DRAIN_S
    while any(log.fd >= 0 for log in logs) and time.monotonic() < drain_until:
        pump(logs, POLL_S)
    for log in logs:
        log.close()
    return outcome(spec, procs, reason, used, started_at)


def enter_sandbox(root: Path, spec: dict, started_at: float) -> sandbox.Identity | dict:
    """Check sandbox and program, enter the attempt's network namespace, name the ranks' user; or the exit."""
    box = spec.get("sandbox") or {}
    why = sandbox.missing()
    if why is not None:
        return cannot_start(root, spec, started_at, f"cannot start {spec['argv'][0]!r}: {why}")
    first_env = spec["ranks"][0]["env"]
    if shutil.which(spec["argv"][0], path=first_env.get("PATH", os.defpath)) is None:
        return cannot_start(root, spec, started_at, f"cannot start {spec['argv'][0]!r}: No such file or directory")
    try:
        # One loopback per attempt, shared by its ranks (their rendezvous), and none of this machine's services.
        sandbox.enter_private_network()
    except OSError as exc:
        return cannot_start(root, spec, started_at, f"cannot start {spec['argv'][0]!r} sandboxed: {exc.strerror}")
    try:
        return sandbox.Identity(
            uid=int(box.get("uid", sandbox.NOBODY)),
            gid=int(box.get("gid", sandbox.NOBODY)),
            name=box.get("user", "user"),
            home=box.get("home", spec["cwd"]),
        )
    except ValueError as exc:
        return cannot_start(root, spec, started_at, f"cannot start {spec['argv'][0]!r}: {exc}")


def start_ranks(
    root: Path, spec: dict, identity: sandbox.Identity, started_at: float
) -> tuple[list[subprocess.Popen], list[RankLog]] | dict:
    """One sandboxed process per rank, output piped to its log, pids in state.json; or the exit (cannot_start)."""
    box = spec.get("sandbox") or {}
    procs: list[subprocess.Popen] = []
    logs: list[RankLog] = []
    for rank in spec["ranks"]:
        reader, writer = os.pipe()
        try:
            procs.append(
                sandbox.start(
                    spec["argv"],
                    env=rank["env"],
                    identity=identity,
                    cwd=spec["cwd"],
                    writable=box.get("writable", [spec["cwd"]]),
                    readable=box.get("readable", []),
                    files=spec.get("files") or {},
                    hostname=root.name,
                    limits=box.get("limits", {}),
                    tmp_size=int(box.get("tmp_size", 0)),
                    stdin=subprocess.DEVNULL,
                    stdout=writer,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    close_fds=True,
                )
            )
        except (OSError, ValueError) as exc:
            os.close(reader)
            os.close(writer)
            for proc in procs:
                signal_group(proc.pid, signal.SIGKILL)
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return cannot_start(root, spec, started_at, f"cannot start {spec['argv'][0]!r}: {why}")
        os.close(writer)
        logs.append(RankLog(root / f"rank-{rank['rank']}.log", reader, int(spec.get("log_max_bytes", 0))))
    ranks = [
        {"rank": rank["rank"], "pid": proc.pid, "pgid": proc.pid}
        for rank, proc in zip(spec["ranks"], procs, strict=True)
    ]
    write_json(root / "state.json", {"runner_pid": os.getpid(), "started_at": started_at, "ranks": ranks})
    return procs, logs


def stop_reason(root: Path, codes: list, now: float, deadline: float, quota: int, used: int, grace: float):
    """Why the ranks must stop now (None: they go on), and the grace period they get."""
    requested = stop_requested(root)
    if requested is not None:
        return "cancelled", requested
    if now >= deadline:
        return "deadline_exceeded", grace
    if any(code not in (None, 0) for code in codes):
        return "failed", grace
    if quota > 0 and (used > quota or used < 0):
        return "disk_quota_exceeded", 0  # no grace: it would only write more
    return None, grace


def stop_ranks(procs: list, codes: list, *, kill: bool) -> None:
    """SIGKILL, or SIGTERM (SIGKILL follows after the grace), to the group of every rank still running."""
    for proc, code in zip(procs, codes, strict=True):
        if code is None:
            signal_group(proc.pid, signal.SIGKILL) if kill else terminate(proc.pid)


def watch(root: Path, spec: dict, procs: list, logs: list[RankLog], started_at: float) -> tuple[str | None, int]:
    """Pump the logs until every rank ended, stopping them all once `stop_reason` says so (SIGTERM, then SIGKILL
    after the grace; over the disk quota at once). Why they were stopped (None: they ended), the disk use seen."""
    box = spec.get("sandbox") or {}
    writable, deadline = box.get("writable", [spec["cwd"]]), started_at + float(spec["max_runtime_s"])
    quota, every = int(box.get("disk_quota", 0)), float(box.get("disk_check_s", DISK_CHECK_S))
    next_check, used = started_at + every, 0
    reason, kill_at, grace = None, None, float(spec["grace_s"])
    while None in (codes := [proc.poll() for proc in procs]):
        now = time.time()
        if reason is None and quota > 0 and now >= next_check:
            next_check = now + every
            try:
                used = disk_usage(writable)
            except TooDeep:
                used = -1  # not measurable: over its quota
        if reason is None:
            reason, grace = stop_reason(root, codes, now, deadline, quota, used, grace)
            if reason is not None:
                stop_ranks(procs, codes, kill=reason == "disk_quota_exceeded")
                kill_at = now + grace
        elif kill_at is not None and now >= kill_at:
            stop_ranks(procs, codes, kill=True)
            kill_at = None
        pump(logs, POLL_S)
    return reason, used


def outcome(spec: dict, procs: list, reason: str | None, used: int, started_at: float) -> dict:
    """The attempt's exit.json: its phase, reason, a message a person can read, and each rank's exit code."""
    quota = int((spec.get("sandbox") or {}).get("disk_quota", 0))
    exit_codes = [code if code >= 0 else 128 - code for code in (proc.returncode for proc in procs)]
    if reason is None:
        reason = "completed" if all(code == 0 for code in exit_codes) else "failed"
    messages = {
        "completed": "completed",
        "failed": f"exit codes {exit_codes}",
        "deadline_exceeded": f"stopped at its max runtime of {spec['max_runtime_s']} s",
        "cancelled": "cancelled",
        "disk_quota_exceeded": f"stopped: its work and checkpoint directories held {size_text(used)} on disk, more "
        f"than its disk quota of {size_text(quota)} (JOBS_DISK_QUOTA)"
        if used >= 0
        else f"stopped: its directories are nested more than {MAX_DEPTH} deep, too deep for its disk quota to measure",
    }
    return {
        "phase": "succeeded" if reason == "completed" else "failed",
        "reason": reason,
        "message": messages[reason],
        "exit_codes": exit_codes,
        "started_at": started_at,
    }


def reap(root: Path) -> dict:
    """Stop what a lost runner left running: SIGTERM, the grace period, SIGKILL."""
    state = read_json(root / "state.json") or {}
    groups = [rank["pgid"] for rank in state.get("ranks", [])]
    grace = stop_requested(root)
    grace = float((read_json(root / "spec.json") or {}).get("grace_s", 10)) if grace is None else grace
    for pgid in groups:
        signal_group(pgid, signal.SIGTERM)
    until = time.time() + grace
    while time.time() < until and any(group_alive(pgid) for pgid in groups):
        time.sleep(POLL_S)
    for pgid in groups:
        signal_group(pgid, signal.SIGKILL)
    return {
        "phase": "failed",
        "reason": "lost",
        "message": "the local runner was lost; what it left running was stopped",
        "exit_codes": [],
        "started_at": state.get("started_at"),
    }


def main(argv: list[str]) -> int:
    root = Path(argv[1])
    reaping = "--reap" in argv[2:]
    lock = open(root / "run.lock", "a")  # noqa: SIM115 - held for the runner's whole life
    if not take(lock):
        print("busy", flush=True)
        return 0
    if (root / "exit.json").exists():
        print("done", flush=True)
        return 0
    detach()
    print("ok", flush=True)
    with open(root / "runner.log", "ab") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    # The runner itself is stopped by a cancel through DIR/stop; a signal to it is read the same way.
    signal.signal(signal.SIGTERM, lambda *_: write_json(root / "stop", {"grace_s": 0}))
    result = reap(root) if reaping else run(root)
    result["finished_at"] = time.time()
    write_json(root / "exit.json", result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
