"""What the fault drills start and break: a private Redis, a real Celery worker, and PostgreSQL's view of who waits.

Everything here stops by itself: each server and worker is a subprocess the drill's fixture stops at the end, and
no drill touches the shared Redis on 6379 or restarts the shared PostgreSQL.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
from django.conf import settings

from tests.jobs.factories import wait_until

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    """A redis-server of the drill's own on a loopback port, with no persistence (as compose runs it)."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.directory = directory
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        binary = shutil.which("redis-server")
        assert binary, "redis-server is not installed"
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            cwd=self.directory,
            # Redis keeps the real clock, as the shared one does: under the clock drills' libfaketime it never answers.
            env={k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "FAKETIME")},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(self.answers, timeout=30)
        return self

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL: what it had in memory is gone, as after a crash or a container restart."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        wait_until(lambda: not self.answers(), timeout=30)

    def stop(self) -> None:
        self.kill()


class Worker:
    """`celery -A portal worker` as a subprocess on the test database, consuming the drill's queue (and `celery`,
    where the tasks a pass sends go). SIGKILL takes the whole worker, as the OOM killer or a node crash does."""

    def __init__(self, *, queue: str, redis_url: str, env: dict[str, str] | None = None) -> None:
        self.queue = queue
        self.redis_url = redis_url
        self.extra = env or {}
        self.process: subprocess.Popen | None = None
        self.log = ROOT / "var" / f"drill-worker-{uuid.uuid4().hex[:8]}.log"

    def start(self) -> Worker:
        db = settings.DATABASES["default"]
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "portal.settings",
            "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
            "REDIS_URL": self.redis_url,
            "DEBUG": "true",
            **self.extra,
        }
        self.log.parent.mkdir(exist_ok=True)
        self._out = self.log.open("a")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "portal", "worker", "--pool", "solo", "-Q", f"{self.queue},celery"]
            + ["--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info"],
            cwd=ROOT,
            env=env,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> str:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        self._out.close()
        text = self.log.read_text()
        self.log.unlink(missing_ok=True)
        return text

    def output(self) -> str:
        return self.log.read_text()


# --- PostgreSQL, seen from a connection of the drill's own -----------------------------------------------------------


def pg_connect() -> psycopg.Connection:
    """A connection outside Django's, to hold locks and watch (and end) the portal's connections."""
    db = settings.DATABASES["default"]
    return psycopg.connect(host=db["HOST"], port=db["PORT"], user=db["USER"], dbname=db["NAME"], autocommit=True)


def lock_waiters(watch: psycopg.Connection) -> list[int]:
    """The backends of this database waiting for a lock now (row, transaction or advisory)."""
    rows = watch.execute(
        "SELECT DISTINCT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
        " WHERE NOT l.granted AND a.datname = current_database() ORDER BY l.pid"
    ).fetchall()
    return [pid for (pid,) in rows]


def backend_alive(watch: psycopg.Connection, pid: int) -> bool:
    return watch.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone() is not None


def wait_for(condition, timeout: float = 60.0):
    """Generous: the machine may be loaded by other suites."""
    return wait_until(condition, timeout=timeout, step=0.1)


def elapsed_since(moment: float) -> float:
    return time.monotonic() - moment
