"""A webhook receiver on loopback (http.server in a thread) that keeps what it receives: the notification tests
point apprise's json:// URLs at it. `status` is what it answers (500: a failing hook); `delay_s` makes it slow.
Stops by itself after the test (the fixture) and never outlives it (a daemon thread)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class WebhookServer:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.received: list[dict] = []
        self.status = 200
        self.delay_s = 0.0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str = "hook") -> str:
        return f"json://127.0.0.1:{self.port}/{path}"

    def _handler(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if outer.delay_s:
                    time.sleep(outer.delay_s)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"raw": raw.decode(errors="replace")}
                with outer.lock:
                    outer.received.append({"path": self.path, **body})
                    status = outer.status
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):  # quiet
                pass

        return Handler

    def start(self) -> WebhookServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def messages(self) -> list[dict]:
        with self.lock:
            return list(self.received)

    def wait_for(self, count: int, *, timeout_s: float = 10.0) -> list[dict]:
        deadline = time.monotonic() + timeout_s
        while len(self.messages) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.messages
