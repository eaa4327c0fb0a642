"""Spawners for the run command and the tests: real single-user servers on this machine, or echo responders.

Both end a session when its time is up (the portal's ``max_seconds``): the hub polls every server every
``poll_interval`` seconds, and a server past its end is stopped by that poll and reported gone, which makes the hub
remove it as if it had exited. (On the cluster the pod's activeDeadlineSeconds does the same.)
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from jupyterhub import __version__ as jupyterhub_version
from jupyterhub.spawner import SimpleLocalProcessSpawner, Spawner
from tornado import web
from tornado.escape import xhtml_escape
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets
from traitlets import Float, Unicode


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

    async def start(self) -> str:
        if self.start_delay > 0:
            await asyncio.sleep(self.start_delay)
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


class LocalSpawner(SessionClock, SimpleLocalProcessSpawner):
    """Real `jupyterhub-singleuser` processes on this machine (no isolation: development and tests only)."""

    async def start(self) -> Any:
        url = await super().start()
        self._start_clock()
        return url

    async def poll(self) -> int | None:
        status = await super().poll()
        if status is None and self._past_end():
            self.log.info("%s reached the end of its session", self._log_name)
            await self.stop()
            return 0
        return status
