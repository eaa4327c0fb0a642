"""A real JupyterHub on loopback, for the run command and the tests: harness, not product.

Its users are `manage.py run_hub` (the run command's hub), the class-start benchmark and the tests; no page, API,
task or service of the portal imports it. It imports no module of portal/, labs/ or jobs/ (only Django's settings, for
defaults), so it can move beside bench/kit.py (the benchmarks' kit, which also finds free ports and runs servers)
without taking anything along.

`LocalHub` runs ``jupyterhub -f deploy/jupyterhub/jupyterhub_config.py`` as a child process in its own process
group, with the portal's token and OAuth client, a private data directory and free ports (or given ones), and the
"echo" spawner (in-process HTTP responders, hundreds per core) or the "local" one (real JupyterLab servers).

It never leaves a process behind: `stop()` ends the hub's whole process group (the hub stops its proxy and its
local notebooks itself, and anything left is killed), and the same happens when the object is collected, at
interpreter exit, and, through the kernel's parent-death signal, when this process dies without cleaning up.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent.parent
CONFIG = ROOT / "deploy" / "jupyterhub" / "jupyterhub_config.py"
REPO_PROXY = ROOT / "node_modules" / ".bin" / "configurable-http-proxy"
SPAWNERS = ("echo", "local")
INSTALL_HINT = "run scripts/test.sh or scripts/run.sh, they install it"
_PR_SET_PDEATHSIG = 1


class HubNotInstalled(RuntimeError):
    """jupyterhub (pip extra "hub") or configurable-http-proxy (npm, package.json) is missing."""


class HubFailed(RuntimeError):
    """The hub did not come up (the message ends with the tail of its log)."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on `host` now (the hub binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def jupyterhub_command() -> str:
    """The jupyterhub next to this Python (the project's .venv), else the one on PATH."""
    beside = Path(sys.executable).parent / "jupyterhub"
    found = str(beside) if beside.exists() else shutil.which("jupyterhub")
    if not found:
        raise HubNotInstalled(f"JupyterHub is not installed in this environment: {INSTALL_HINT}.")
    return found


def proxy_command() -> str:
    """The repository's configurable-http-proxy (npm ci), else one on PATH; the hub config picks the same."""
    found = str(REPO_PROXY) if REPO_PROXY.exists() else shutil.which("configurable-http-proxy")
    if not found:
        raise HubNotInstalled(f"configurable-http-proxy (npm) is not installed: {INSTALL_HINT}.")
    if not shutil.which("node"):
        raise HubNotInstalled(f"Node.js is not installed (configurable-http-proxy needs it): {INSTALL_HINT}.")
    return found


def _die_with_parent() -> None:
    """In the child: get SIGTERM when the process that started the hub dies (Linux), so the hub cleans up."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class _Process:
    """What must be cleaned up, kept apart from LocalHub so a finalizer can hold it without holding the hub."""

    def __init__(self, data_dir: Path, owns_dir: bool) -> None:
        self.data_dir = data_dir
        self.owns_dir = owns_dir
        self.popen: subprocess.Popen[bytes] | None = None

    def stop(self, timeout: float = 15) -> None:
        popen, self.popen = self.popen, None
        if popen is not None:
            if popen.poll() is None:
                # The whole group: the hub (which stops its proxy and notebooks) and local notebooks kept in it.
                _signal_group(popen.pid, signal.SIGTERM)
                try:
                    popen.wait(timeout)
                except subprocess.TimeoutExpired:
                    _signal_group(popen.pid, signal.SIGKILL)
                    popen.wait(5)
            # Whatever the hub left in its group after exiting (a notebook that ignored the hub's stop).
            for pid in _group_members(popen.pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        self._stop_stray_proxy()

    def _stop_stray_proxy(self) -> None:
        """The proxy runs in a session of its own; a hub that was killed leaves it, with its pid in a file."""
        pid_file = self.data_dir / "jupyterhub-proxy.pid"
        try:
            pid = int(pid_file.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return
        if b"configurable-http-proxy" in cmdline:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        with contextlib.suppress(OSError):
            pid_file.unlink()

    def close(self) -> None:
        self.stop()
        if self.owns_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)


def _group_members(pgid: int) -> list[int]:
    """The processes still in a process group (Linux /proc), so a reused group id is never signalled."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so split after the last ")".
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class LocalHub:
    """A JupyterHub on this machine, driven like the cluster's: through its REST API with the portal's token.

    Arguments (all keyword-only; settings are read from Django only for what is not given):
        spawner                  "echo" (default) or "local"
        portal_url               the portal as browsers reach it (the hub's OAuth provider)
        portal_internal_url      the portal as the hub reaches it; default portal_url
        host                     where the proxy and the hub API listen; default 127.0.0.1
        api_port, proxy_port     the hub API's and the proxy's ports; default free ones
        proxy_api_port           the proxy's own API; default a free one
        data_dir                 kept as it is; default a private temporary directory, removed by close()
        token                    the portal's service token; default settings.NOTEBOOKS_HUB_TOKEN
        oauth_client_id/_secret  the hub's OAuth client; default settings.HUB_OAUTH_CLIENT_ID/_SECRET
        admin_token              token of the hub's admin service "hub-admin"; default a random one
        concurrent_spawn_limit   the hub's limit on spawns in flight; default 50
        log_level                the hub's log level; default "info"
        env                      more environment for the hub (e.g. {"HUB_ECHO_START_DELAY_S": "2"})

    Attributes: api_url (".../hub/api"), public_url (the proxy), api_port, proxy_port, proxy_api_port, host,
    spawner, token, admin_token, data_dir, log_path, running, pid.
    """

    def __init__(
        self,
        *,
        spawner: str = "echo",
        portal_url: str = "http://127.0.0.1:8000",
        portal_internal_url: str | None = None,
        host: str = "127.0.0.1",
        api_port: int | None = None,
        proxy_port: int | None = None,
        proxy_api_port: int | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        token: str | None = None,
        oauth_client_id: str | None = None,
        oauth_client_secret: str | None = None,
        admin_token: str | None = None,
        concurrent_spawn_limit: int = 50,
        log_level: str = "info",
        env: dict[str, str] | None = None,
    ) -> None:
        if spawner not in SPAWNERS:
            raise ValueError(f"spawner must be one of {', '.join(SPAWNERS)}, got {spawner!r}")
        self.spawner = spawner
        self.portal_url = portal_url.rstrip("/")
        self.portal_internal_url = (portal_internal_url or portal_url).rstrip("/")
        self.host = host
        self.api_port = api_port or free_port(host)
        self.proxy_port = proxy_port or free_port(host)
        self.proxy_api_port = proxy_api_port or free_port("127.0.0.1")
        self.token = token if token is not None else _setting("NOTEBOOKS_HUB_TOKEN")
        self.oauth_client_id = oauth_client_id if oauth_client_id is not None else _setting("HUB_OAUTH_CLIENT_ID")
        self.oauth_client_secret = (
            oauth_client_secret if oauth_client_secret is not None else _setting("HUB_OAUTH_CLIENT_SECRET")
        )
        self.admin_token = admin_token or secrets.token_hex(24)
        self.concurrent_spawn_limit = concurrent_spawn_limit
        self.log_level = log_level
        self.extra_env = dict(env or {})
        owns_dir = data_dir is None
        path = Path(tempfile.mkdtemp(prefix="portal-hub-")) if owns_dir else Path(data_dir).resolve()
        path.mkdir(parents=True, exist_ok=True)
        self.data_dir = path
        self.log_path = path / "jupyterhub.log"
        self._process = _Process(path, owns_dir)
        self._finalizer = weakref.finalize(self, self._process.close)

    # --- where it is

    @property
    def api_url(self) -> str:
        return f"http://{self._url_host}:{self.api_port}/hub/api"

    @property
    def public_url(self) -> str:
        return f"http://{self._url_host}:{self.proxy_port}"

    @property
    def _url_host(self) -> str:
        return "127.0.0.1" if self.host in ("", "0.0.0.0") else self.host  # noqa: S104

    @property
    def running(self) -> bool:
        popen = self._process.popen
        return popen is not None and popen.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.popen.pid if self.running else None

    def environment(self) -> dict[str, str]:
        """The hub's environment: this one without anything hub-related, plus the settings above."""
        inherited = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("JUPYTERHUB_", "HUB_", "OAUTH_", "CONFIGPROXY_", "PORTAL_"))
        }
        bin_dir = str(Path(sys.executable).parent)
        env = {
            **inherited,
            "PATH": bin_dir + os.pathsep + inherited.get("PATH", os.defpath),
            "PORTAL_URL": self.portal_url,
            "PORTAL_INTERNAL_URL": self.portal_internal_url,
            "OAUTH_CLIENT_ID": self.oauth_client_id,
            "OAUTH_CLIENT_SECRET": self.oauth_client_secret,
            "JUPYTERHUB_PORTAL_TOKEN": self.token,
            "HUB_ADMIN_TOKEN": self.admin_token,
            "HUB_PUBLIC_URL": self.public_url,
            "HUB_BIND_URL": f"http://{self.host}:{self.proxy_port}",
            "HUB_API_IP": self.host,
            "HUB_API_PORT": str(self.api_port),
            "HUB_PROXY_API_URL": f"http://127.0.0.1:{self.proxy_api_port}",
            "HUB_PROXY_COMMAND": proxy_command(),
            "HUB_DATA_DIR": str(self.data_dir),
            "HUB_LOG_LEVEL": self.log_level,
            "HUB_CONCURRENT_SPAWN_LIMIT": str(self.concurrent_spawn_limit),
            "HUB_SPAWNER": self.spawner,
            # Local servers run as their person's uid: the same one as their local jobs.
            "HUB_LOCAL_UID_BASE": str(_setting("JOBS_LOCAL_UID_BASE")),
            "HUB_LOCAL_UID_COUNT": str(_setting("JOBS_LOCAL_UID_COUNT")),
        }
        env.update(self.extra_env)
        return env

    # --- life cycle

    def start(self, timeout: float = 60) -> LocalHub:
        """Start the hub and wait until its API answers the portal's token and its proxy routes to it."""
        if self.running:
            return self
        command = [jupyterhub_command(), "-f", str(CONFIG)]
        env = self.environment()
        with open(self.log_path, "ab") as log:
            log.write(f"\n==> {' '.join(command)} ({self.spawner} spawner)\n".encode())
            log.flush()
            self._process.popen = subprocess.Popen(  # noqa: S603
                command,
                cwd=self.data_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                # Only from the main thread: the signal comes when the *thread* that started the child ends.
                preexec_fn=_die_with_parent if threading.current_thread() is threading.main_thread() else None,
            )
        try:
            self._wait_up(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_up(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        checks = [
            (f"{self.api_url}/user", {"Authorization": f"token {self.token}"}),
            (f"{self.public_url}/hub/health", {}),
        ]
        with requests.Session() as http:
            while checks:
                popen = self._process.popen
                if popen is None or popen.poll() is not None:
                    code = None if popen is None else popen.returncode
                    raise HubFailed(f"JupyterHub exited (status {code}) while starting:\n{self.log_tail()}")
                if time.monotonic() > deadline:
                    raise HubFailed(
                        f"JupyterHub did not answer at {checks[0][0]} within {timeout:g}s:\n{self.log_tail()}"
                    )
                url, headers = checks[0]
                try:
                    if http.get(url, headers=headers, timeout=2).status_code == 200:
                        checks.pop(0)
                        continue
                except requests.RequestException:
                    pass
                time.sleep(0.1)

    def stop(self, timeout: float = 15) -> None:
        """Stop the hub and everything it started, and wait for them (the data directory stays)."""
        self._process.stop(timeout)

    def restart(self, timeout: float = 60) -> LocalHub:
        """Stop and start again on the same ports and data (users and their servers' records survive)."""
        self.stop()
        return self.start(timeout)

    def close(self) -> None:
        """Stop, and remove the data directory if it was a private temporary one."""
        self._finalizer()

    def __enter__(self) -> LocalHub:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        # weakref.finalize does the work (also at interpreter exit); this only makes the intent visible.
        finalizer = getattr(self, "_finalizer", None)
        if finalizer is not None:
            finalizer()

    # --- diagnostics

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<LocalHub {self.spawner} {state} api={self.api_url} public={self.public_url}>"


def _setting(name: str) -> str:
    from django.conf import settings

    return str(getattr(settings, name))
