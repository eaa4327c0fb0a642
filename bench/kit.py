"""What the loopback benchmarks share: free ports, a throwaway database set up by our own manage.py, servers that
must answer before the measurement, and stopping everything they started (with the logs' tails when it went wrong).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from django.conf import settings
from django.core.management.base import CommandError

ROOT = Path(settings.BASE_DIR)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def throwaway_secrets() -> dict[str, str]:
    """Every secret the portal demands with DEBUG off, made up for one run: the benchmarks run it as in production."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return {
        "SECRET_KEY": secrets.token_urlsafe(32),
        "OIDC_RSA_PRIVATE_KEY": key.decode(),
        "NOTEBOOKS_HUB_TOKEN": secrets.token_urlsafe(32),
        "HUB_OAUTH_CLIENT_SECRET": secrets.token_urlsafe(32),
    }


def setup_database(env: dict[str, str], script: str, *, extra_env: dict[str, str], timeout: int = 600) -> object:
    """Migrate the database `env` names and run `script` in `manage.py shell`; its last line of output is JSON."""
    python = sys.executable
    subprocess.run(  # noqa: S603 - this interpreter, our own manage.py, fixed argv
        [python, "manage.py", "migrate", "--no-input", "-v0"], cwd=ROOT, env=env, check=True, timeout=timeout
    )
    return shell_json(env, script, extra_env=extra_env, timeout=timeout, what="Setting up the benchmark database")


def shell_json(env: dict[str, str], script: str, *, extra_env: dict[str, str], timeout: int, what: str) -> object:
    """Run `script` in `manage.py shell` on the database `env` names; its last line of output is JSON."""
    done = subprocess.run(  # noqa: S603 - this interpreter, our own manage.py, fixed argv
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT,
        env={**env, **extra_env},
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise CommandError(f"{what} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def wait_up(url: str, server: subprocess.Popen, *, timeout_s: float = 300) -> None:
    """Wait until `url` answers 200; fail at once if the server process ends meanwhile.

    The limit is generous: a loaded machine starts slowly, and a server that dies is noticed at once anyway."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise CommandError("The server stopped while starting; see its log above.")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as answer:  # noqa: S310
            if answer.status == 200:
                return
        time.sleep(0.3)
    raise CommandError(f"{url} did not answer within {timeout_s:g} s.")


def stop_all(processes: dict[str, subprocess.Popen], logs: dict[str, IO], workdir: Path, say) -> None:
    """Terminate, then kill what is left; close the logs and show the tail of any that has a traceback or error."""
    for process in processes.values():
        if process.poll() is None:
            process.terminate()
    for process in processes.values():
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
    for handle in logs.values():
        handle.close()
    for name in logs:
        text = (workdir / f"{name}.log").read_text(errors="replace")
        if "Traceback" in text or " ERROR " in text:
            say(f"--- {name} log (tail) ---\n{text[-3000:]}")


@contextlib.contextmanager
def throwaway_postgres(url: str, prefix: str) -> Iterator[str]:
    """A PostgreSQL database of its own on the server `url` names, made for one run and dropped at the end."""
    import psycopg

    parts = urllib.parse.urlsplit(url)
    name = f"{prefix}_{secrets.token_hex(4)}"
    admin_url = urllib.parse.urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def process_tree(pid: int) -> list[int]:
    """The process and its descendants (uvicorn --workers runs a supervisor and its workers)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                with open(f"/proc/{entry}/stat", encoding="ascii") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def rss_mb(pid: int) -> float:
    """Resident memory of the process tree, in MB."""
    total_kb = 0
    for member in process_tree(pid):
        with contextlib.suppress(OSError), open(f"/proc/{member}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
    return round(total_kb / 1024, 1)


def cpu_s(pid: int) -> float:
    """CPU seconds used so far by the process tree."""
    total = 0
    for member in process_tree(pid):
        with contextlib.suppress(OSError), open(f"/proc/{member}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def client_event(client: subprocess.Popen, name: str, timeout_s: float = 300) -> dict:
    """The next JSON line of a client process that is event `name` (other lines are progress)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = client.stdout.readline()
        if not line:
            raise CommandError(f"The client process ended before '{name}'.")
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if event.get("event") == name:
                return event
    raise CommandError(f"No '{name}' from the client process in {timeout_s} s.")
