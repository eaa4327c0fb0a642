"""A live portal on loopback for the SDK and CLI tests, started once per session with the benchmarks' kit.

As production runs it (DEBUG off, made-up secrets, SINGLE_MACHINE_LAB): uvicorn with portal.asgi, a Celery worker and
beat on the test Redis, the telemetry collector with the simulator, JupyterHub with the echo spawner; jobs run on the
local backend in the bubblewrap sandbox. Its database is a throwaway one of its own (bench/kit.py makes and
drops it), so the tests' own
database and its flushes never touch it; the tests speak to it only over HTTP and the WebSocket, as users do.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

from bench.kit import (
    ROOT,
    free_port,
    setup_database,
    shell_json,
    stop_all,
    throwaway_postgres,
    throwaway_secrets,
    wait_up,
)
from labs.notebooks.localhub import LocalHub

SETUP = """
import datetime as dt, json
from decimal import Decimal
from labs.inventory import demo_specs
from labs.models import NotebookProfile
from labs.services import inventory_sync
from accounts.models import Course, Enrollment, Quota, Role, User
from accounts.services import token_issue

inventory_sync(specs=demo_specs(4), source="sdk-tests")
course = Course.objects.create(code="SDK-101", name="Terminals", term_start=dt.date(2000, 1, 1),
                               term_end=dt.date(2999, 1, 1))
profile = NotebookProfile.objects.create(slug="tenth", name="Tenth of a GPU", image="python:3.12-slim",
                                         gpu_share=Decimal("0.1"), cpu=Decimal("1"), memory_gb=Decimal("2"),
                                         max_session_h=Decimal("4"), roles=[])
profile.courses.add(course)
ada = User.objects.create(username="ada", role=Role.STUDENT)
Enrollment.objects.create(user=ada, course=course)
Quota.objects.create(user=ada, max_jobs=100)  # the tests submit many; bob keeps a student's limit
bob = User.objects.create(username="bob", role=Role.STUDENT)
bob.set_password("bobs-password-42")  # the CLI's password sign-in (gpulab login --username)
bob.save()
Enrollment.objects.create(user=bob, course=course)
tess = User.objects.create(username="tess", role=Role.TEACHER)
course.teachers.add(tess)
root = User.objects.create(username="root", role=Role.ADMIN)
print(json.dumps({u.username: token_issue(user=u) for u in (ada, bob, tess, root)}))
"""


@dataclasses.dataclass
class LivePortal:
    url: str
    tokens: dict[str, str]
    env: dict[str, str]
    workdir: Path
    pids: dict[str, int]

    def shell(self, script: str) -> object:
        """Run `script` in `manage.py shell` on the portal's database; its last line of output is JSON."""
        return shell_json(self.env, script, extra_env={}, timeout=120, what="A look into the live portal")


def _env(workdir: Path, database_url: str) -> dict[str, str]:
    drop = ("NOTEBOOKS_", "DATABASE_", "DJANGO_", "CELERY_", "HUB_", "JOBS_", "TELEMETRY_", "GPULAB_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop) and k not in ("DEBUG", "REDIS_URL")}
    env.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        DATABASE_URL=database_url,
        PORTAL_VAR_DIR=str(workdir),
        REDIS_URL=settings.REDIS_URL,
        DEBUG="false",
        ALLOWED_HOSTS="127.0.0.1",
        SECURE_SSL_REDIRECT="false",
        SESSION_COOKIE_SECURE="false",
        SINGLE_MACHINE_LAB="true",
        JOBS_BACKEND="local",
        JOBS_SCHEDULE_INTERVAL_S="5",
        JOBS_FOLLOW_INTERVAL_S="1",
        JOBS_LOG_FOLLOW_POLL_MS="200",
        JOBS_LOG_FOLLOW_STATE_MS="500",
        CREDENTIAL_RECHECK_S="1",  # followed logs and sockets look at their token again every second
        NOTEBOOKS_TICK_S="1",
        TELEMETRY_SOURCE="simulator",
        TELEMETRY_COLLECTOR="process",
        TELEMETRY_INTERVAL_MS="500",
        # As production runs it: one pool of connections per process (the shared PostgreSQL has room for few).
        DATABASE_POOL="true",
        DATABASE_POOL_MAX_SIZE="8",
        LOG_LEVEL="WARNING",
        PYTHONUNBUFFERED="1",
        # The sweep submits 20 jobs at once; counters of their own in the shared Redis.
        RATE_LIMIT_JOB_SUBMIT="1000",
        RATE_LIMIT_RESERVATION_CREATE="1000",
        RATE_LIMIT_KEY_PREFIX=f"sdk-{uuid.uuid4().hex}",
    )
    env.update(throwaway_secrets())
    return env


@contextlib.contextmanager
def live_portal() -> Iterator[LivePortal]:
    db = settings.DATABASES["default"]
    server = f"postgresql://{db['USER']}@{db['HOST']}:{db['PORT']}/postgres"
    with (
        tempfile.TemporaryDirectory(prefix="sdk-portal-") as tmp,
        throwaway_postgres(server, "sdk_portal") as database_url,
    ):
        workdir = Path(tmp)
        env = _env(workdir, database_url)
        tokens = setup_database(env, SETUP, extra_env={})
        port = free_port()
        python = sys.executable
        commands = {
            "web": [python, "-m", "uvicorn", "portal.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
            + ["--log-level", "warning", "--no-access-log"],
            "worker": [python, "-m", "celery", "-A", "portal", "worker", "--pool", "threads", "--concurrency", "4"]
            + ["--loglevel", "WARNING", "--without-gossip", "--without-mingle"],
            "beat": [python, "-m", "celery", "-A", "portal", "beat", "--loglevel", "WARNING"]
            + ["--schedule", str(workdir / "celerybeat-schedule")],
            "collector": [python, "manage.py", "telemetry_collect"],
        }
        logs = {name: open(workdir / f"{name}.log", "w") for name in commands}  # noqa: SIM115
        processes: dict[str, subprocess.Popen] = {}
        # JupyterHub with the echo spawner (a stand-in server that answers at once), as the benchmarks run it.
        hub = LocalHub(
            spawner="echo",
            portal_url=f"http://127.0.0.1:{port}",
            token=env["NOTEBOOKS_HUB_TOKEN"],
            oauth_client_secret=env["HUB_OAUTH_CLIENT_SECRET"],
            log_level="error",
        )
        try:
            hub.start(timeout=300)
            env.update(NOTEBOOKS_HUB_API_URL=hub.api_url, NOTEBOOKS_HUB_PUBLIC_URL=hub.public_url)
            for name, command in commands.items():
                processes[name] = subprocess.Popen(
                    command, cwd=ROOT, env=env, stdout=logs[name], stderr=subprocess.STDOUT
                )
            wait_up(f"http://127.0.0.1:{port}/healthz", processes["web"])
            pids = {name: process.pid for name, process in processes.items()}
            yield LivePortal(url=f"http://127.0.0.1:{port}", tokens=tokens, env=env, workdir=workdir, pids=pids)
        finally:
            stop_all(processes, logs, workdir, lambda text: print(text, file=sys.stderr))
            hub.close()
