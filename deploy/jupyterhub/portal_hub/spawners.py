"""Spawners for the run command and the tests: real single-user servers on this machine, or echo responders.

A local server never runs as the hub: `LocalSpawner` starts it in the portal's bubblewrap sandbox
(jobs/backends/sandbox.py in the checkout: an unprivileged user, only the Python, the student's home and a socket
directory, own pid and network namespaces, a seccomp filter, a passwd entry for its user, a new session, killed
with the hub). Its network is a loopback of its own; relay.py inside and the spawner outside carry exactly two
things through unix sockets: the proxy's requests to the server and the server's requests to the hub API.
PostgreSQL, Redis or anything else on the machine's loopback is out of reach.

The server's environment (`get_env()`: the hub API token among others) never reaches bwrap or setpriv, which run
with rights and the portal's fixed environment: the sandbox's exec shim applies it in the server's own exec. Names
the loader, the C library or Python read at start (the hub's PYTHONPATH, an operator's LD_LIBRARY_PATH, ...) are
dropped from it: they name the hub's machine, not the sandbox.

Each person's servers run as a uid of their own when the hub runs as root (`tenant_uid_base` + the portal user's
id, the same uid as their local jobs: JOBS_LOCAL_UID_BASE), so one person's processes never count against another's
RLIMIT_NPROC. The portal user's id comes from `tenant_id` (default: the `user_id` the portal signs into the
options); without one, a server runs as `sandbox_uid`, shared.

Both end a session when its time is up (the portal's ``max_seconds``): the hub polls every server every
``poll_interval`` seconds, and a server past its end is stopped by that poll and reported gone, which makes the hub
remove it as if it had exited. (On the cluster the pod's activeDeadlineSeconds does the same.)
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jupyterhub import __version__ as jupyterhub_version
from jupyterhub.spawner import SimpleLocalProcessSpawner, Spawner
from jupyterhub.utils import random_port
from tornado import web
from tornado.escape import xhtml_escape
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets
from traitlets import Callable, Float, Integer, Unicode

HERE = Path(__file__).resolve().parent
RELAY = HERE / "relay.py"
# The portal checkout's sandbox (standard library only), shared with the local job runner.
SANDBOX = HERE.parent.parent.parent / "jobs" / "backends" / "sandbox.py"


def load_sandbox() -> Any:
    """The sandbox module, or SystemExit with a sentence (local servers never run unsandboxed)."""
    if not SANDBOX.exists():
        raise SystemExit(
            f"HUB_SPAWNER=local runs notebooks in the portal's sandbox ({SANDBOX} in the portal's checkout), which "
            "is not here: run the hub from the checkout (manage.py run_hub) or use HUB_SPAWNER=kubernetes."
        )
    if "portal_sandbox" in sys.modules:
        module = sys.modules["portal_sandbox"]
    else:
        spec = importlib.util.spec_from_file_location("portal_sandbox", SANDBOX)
        module = importlib.util.module_from_spec(spec)
        sys.modules["portal_sandbox"] = module  # before it runs: its dataclasses look themselves up there
        spec.loader.exec_module(module)
    why = module.missing()
    if why is not None:
        raise SystemExit(f"HUB_SPAWNER=local: {why}")
    return module


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.close()


def _forward(connect):
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await connect()
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    return handle


class SessionClock:
    """Mixin: remembers when the session must end, from the options `portal_hub.options` applied."""

    session_options: Any = None
    session_deadline: float | None = None

    def _start_clock(self) -> None:
        opts = self.session_options
        self.session_deadline = time.monotonic() + opts.max_seconds if opts is not None else None

    def _past_end(self) -> bool:
        return self.session_deadline is not None and time.monotonic() >= self.session_deadline


class _EchoHandler(web.RequestHandler):
    """Answers every request under the server's prefix: JSON under .../api, a line of HTML elsewhere."""

    SUPPORTED_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")

    def initialize(self, spawner: EchoSpawner) -> None:
        self.spawner = spawner

    def _answer(self) -> None:
        prefix = self.spawner.server.base_url if self.spawner.server is not None else "/"
        path = self.request.path
        if not (path + "/").startswith(prefix):
            raise web.HTTPError(404)
        self.set_header("X-JupyterHub-Version", jupyterhub_version)
        self.set_header("Cache-Control", "no-store")
        about = self.spawner.about(path)
        if path[len(prefix) :].startswith("api"):
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(about))
        else:
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.finish(
                "<!doctype html><title>echo {server}</title><p>Echo notebook {server} of {user}: {path}</p>\n".format(
                    **{k: xhtml_escape(str(v)) for k, v in about.items()}
                )
            )

    def get(self, *args: Any) -> None:
        self._answer()

    head = post = put = patch = delete = options = get

    def check_xsrf_cookie(self) -> None:
        """An echo has nothing to protect."""

    def log_exception(self, *args: Any) -> None:
        """404s outside the prefix are not worth a traceback."""


class EchoSpawner(SessionClock, Spawner):
    """A single-user "server" that is an HTTP responder inside the hub process, on a free loopback port.

    It costs one listening socket, so one small machine holds hundreds (the class-start benchmark, most notebook
    tests). It has nothing to resume: after a hub restart, every echo server is reported gone.
    """

    ip = Unicode("127.0.0.1", config=True, help="The loopback address the responders listen on.")
    start_delay = Float(0, config=True, help="Seconds start() waits first, to look like a slow spawner.")
    cold_start_delay = Float(
        0,
        config=True,
        help="Seconds more for the first start of an image on a node (its pull, as a kubelet would), once per hub.",
    )
    # (node, image) pairs pulled, and pulls under way, shared by every echo server of this hub.
    _pulled: set[tuple[str, str]] = set()
    _pulling: dict[tuple[str, str], asyncio.Future] = {}

    _http: HTTPServer | None = None

    def about(self, path: str) -> dict[str, Any]:
        opts = self.session_options
        return {
            "echo": True,
            "user": self.user.name,
            "server": self.name,
            "path": path,
            "session": opts.session if opts is not None else None,
            "profile": opts.profile if opts is not None else None,
            "node": opts.node if opts is not None else None,
        }

    async def _pull(self) -> None:
        """The first start of an image on a node waits cold_start_delay; starts beside it wait for the same pull."""
        opts = self.session_options
        if self.cold_start_delay <= 0 or opts is None:
            return
        key = (str(opts.node), str(opts.image))
        if key in EchoSpawner._pulled:
            return
        pulling = EchoSpawner._pulling.get(key)
        if pulling is None:
            pulling = EchoSpawner._pulling[key] = asyncio.ensure_future(asyncio.sleep(self.cold_start_delay))
        await asyncio.shield(pulling)
        EchoSpawner._pulled.add(key)
        EchoSpawner._pulling.pop(key, None)

    async def start(self) -> str:
        if self.start_delay > 0:
            await asyncio.sleep(self.start_delay)
        await self._pull()
        sockets = bind_sockets(0, self.ip)
        app = web.Application([(r".*", _EchoHandler, {"spawner": self})], log_function=lambda handler: None)
        http = HTTPServer(app, xheaders=True)
        http.add_sockets(sockets)
        self._http = http
        self.port = sockets[0].getsockname()[1]
        self._start_clock()
        return f"http://{self.ip}:{self.port}"

    async def stop(self, now: bool = False) -> None:
        http, self._http = self._http, None
        if http is not None:
            http.stop()
            await http.close_all_connections()

    async def poll(self) -> int | None:
        if self._http is None:
            return 0
        if self._past_end():
            self.log.info("%s reached the end of its session", self._log_name)
            await self.stop()
            return 0
        return None


def portal_user_id(spawner: Any) -> int | None:
    """The portal user's id of the spawner's user, from the options the portal signed (None if they hold none).

    `LocalSpawner.tenant_id` can point elsewhere (c.LocalSpawner.tenant_id = a function of the spawner): the
    user's auth_state, or a hub user name derived from the portal user's id.
    """
    opts = getattr(spawner, "session_options", None)
    return getattr(opts, "user_id", None)


def give_to(path: Path, uid: int, gid: int) -> None:
    """The directory is the user's, 0700; one another uid held (before uids were per person) is given over whole."""
    os.chmod(path, 0o700)
    if os.geteuid() != 0 or os.lstat(path).st_uid == uid:
        return
    os.chown(path, uid, gid)
    for _, dirnames, filenames, dirfd in os.fwalk(path, follow_symlinks=False):
        for name in dirnames + filenames:
            with contextlib.suppress(OSError):
                os.chown(name, uid, gid, dir_fd=dirfd, follow_symlinks=False)


def start_server(
    sandbox: Any,
    command: list[str],
    *,
    env: dict[str, str],
    identity: Any,
    sockets: Path,
    port: int,
    hub_port: int,
    limits: dict[str, int],
    datasets: tuple[Any, ...] = (),
    **popen_kwargs: Any,
) -> subprocess.Popen:
    datasets = tuple(d for d in datasets if d.local_path and os.path.isdir(d.local_path))  # a missing one: not bound
    """Start a server's command in the sandbox behind relay.py (the LocalSpawner's way, for it and the tests)."""
    relay = [sys.executable, str(RELAY), str(sockets), str(port), str(hub_port), "--"]
    server_env = {name: value for name, value in env.items() if sandbox.rules.env_reader(name) is None}
    return sandbox.start(
        [*relay, *command],
        env={**server_env, **identity.env()},
        identity=identity,
        cwd=identity.home,
        # Datasets at their own paths: read-only, but for a course share in its teachers' notebooks.
        writable=[identity.home, str(sockets), *(d.local_path for d in datasets if d.writable)],
        readable=[str(RELAY), *(d.local_path for d in datasets if not d.writable)],
        hostname="notebook",
        unshare_net=True,
        new_session=True,
        die_with_parent=True,
        limits=limits,
        **popen_kwargs,
    )


class LocalSpawner(SessionClock, SimpleLocalProcessSpawner):
    """Real `jupyterhub-singleuser` processes on this machine, each in the sandbox (see the module's docstring)."""

    sandbox_uid = Integer(65534, config=True, help="The user servers run as without a uid of their own.")
    sandbox_gid = Integer(65534, config=True, help="Its group.")
    tenant_uid_base = Integer(
        0, config=True, help="A person's servers run as this + their portal user id (0: everyone as sandbox_uid)."
    )
    tenant_uid_count = Integer(1_000_000, config=True, help="How many uids from tenant_uid_base are the portal's.")
    tenant_id = Callable(portal_user_id, config=True, help="The spawner's user's portal user id, or None.")
    max_processes = Integer(1024, config=True, help="RLIMIT_NPROC of a server.")

    _relays: list[asyncio.base_events.Server] | None = None

    def _socket_dir(self) -> Path:
        # Short (a unix socket path has at most 107 bytes): beside the homes, one per server.
        return Path(self.home_dir).parent.parent / "run" / f"{self.user.id}-{self.name or 'default'}"

    def sandbox_identity(self, sandbox: Any) -> Any:
        """Who the server runs as: the person's own uid (see the module's docstring), else the shared one."""
        number = self.tenant_id(self)
        if self.tenant_uid_base and isinstance(number, int) and 0 < number < self.tenant_uid_count:
            uid = gid = self.tenant_uid_base + number
        else:
            if self.tenant_uid_base:
                self.log.warning("%s has no portal user id: it runs as the shared uid", self._log_name)
            uid, gid = self.sandbox_uid, self.sandbox_gid
        name = sandbox.Identity.user_name(self.user.name)
        return sandbox.Identity(uid=uid, gid=gid, name=name, home=os.path.normpath(os.path.abspath(self.home_dir)))

    async def start(self) -> Any:
        sandbox = load_sandbox()
        if self.port == 0:
            self.port = random_port()
        env = self.get_env()
        hub = urlsplit(env.get("JUPYTERHUB_API_URL", ""))
        if hub.hostname not in ("127.0.0.1", "localhost") or not hub.port:
            url = env.get("JUPYTERHUB_API_URL")
            raise RuntimeError(f"a sandboxed server reaches the hub on loopback only, not {url}")
        identity = self.sandbox_identity(sandbox)
        home, sockets = Path(identity.home), self._socket_dir()
        shutil.rmtree(sockets, ignore_errors=True)
        for path in (home, sockets):
            path.mkdir(parents=True, exist_ok=True)
            give_to(path, identity.uid, identity.gid)
        await self._start_relays(sockets, hub.port, identity)
        popen_kwargs = {"start_new_session": True, **self.popen_kwargs}
        limits = {"nproc": self.max_processes, "core": 0}
        opts = self.session_options
        if opts is not None:
            # The profile's memory (each process's heap) and CPU share over the session's length.
            limits["data"] = opts.mem_bytes
            limits["cpu"] = int(opts.cpu * opts.max_seconds) + 60
        popen_kwargs.pop("preexec_fn", None)
        popen_kwargs.pop("env", None)
        self.log.info("Spawning %s sandboxed as uid %s on 127.0.0.1:%s", self._log_name, identity.uid, self.port)
        self.proc = start_server(
            sandbox,
            [*self.cmd, *self.get_args()],
            env=env,
            identity=identity,
            sockets=sockets,
            port=self.port,
            hub_port=hub.port,
            limits=limits,
            datasets=opts.datasets if opts is not None else (),
            **popen_kwargs,
        )
        self.pid = self.proc.pid
        self._start_clock()
        return ("127.0.0.1", self.port)

    async def _start_relays(self, sockets: Path, hub_port: int, identity: Any) -> None:
        async def to_server():
            return await asyncio.open_unix_connection(str(sockets / "server.sock"))

        async def to_hub():
            return await asyncio.open_connection("127.0.0.1", hub_port)

        hub_sock = sockets / "hub.sock"
        towards_hub = await asyncio.start_unix_server(_forward(to_hub), path=str(hub_sock))
        if os.geteuid() == 0:
            os.chown(hub_sock, identity.uid, identity.gid)
        from_proxy = await asyncio.start_server(_forward(to_server), "127.0.0.1", self.port)
        self._relays = [towards_hub, from_proxy]

    def _stop_relays(self) -> None:
        relays, self._relays = self._relays or [], None
        for relay in relays:
            relay.close()
        shutil.rmtree(self._socket_dir(), ignore_errors=True)

    async def stop(self, now: bool = False) -> None:
        await super().stop(now=now)
        self._stop_relays()

    async def poll(self) -> int | None:
        status = await super().poll()
        if status is None and self._past_end():
            self.log.info("%s reached the end of its session", self._log_name)
            await self.stop()
            return 0
        if status is not None:
            self._stop_relays()
        return status
