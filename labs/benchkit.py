"""What the loopback benchmarks share: free ports, a throwaway database set up by our own manage.py, servers that
must answer before the measurement, and stopping everything they started (with the logs' tails when it went wrong).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
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
    setup = subprocess.run(  # noqa: S603 - this interpreter, our own manage.py, fixed argv
        [python, "manage.py", "shell", "-c", script],
        cwd=ROOT,
        env={**env, **extra_env},
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if setup.returncode != 0:
        raise CommandError(f"Setting up the benchmark database failed:\n{setup.stderr[-2000:]}")
    return json.loads(setup.stdout.strip().splitlines()[-1])


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
