"""A fake Kubernetes API server on loopback that answers as the real one does, errors included.

It serves the endpoints the portal calls, keeps what it was sent, and can be told to fail
the next requests with a status (or to hang, for time-outs).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def status_body(code: int, reason: str, message: str) -> dict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def gpu_node(name: str, gpus: int = 1, *, ready: bool = True, unschedulable: bool = False, labels=None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "nvidia.com/gpu.product": "NVIDIA-GeForce-RTX-4090",
                "nvidia.com/gpu.memory": "24564",
                **(labels or {}),
            },
        },
        "spec": {"unschedulable": unschedulable} if unschedulable else {},
        "status": {
            "capacity": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": str(gpus)} if gpus else {"cpu": "8"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


class FakeKube:
    def __init__(self) -> None:
        self.nodes: dict[str, dict] = {}
        self.requests: list[tuple[str, str, dict | None]] = []
        self.failures: list[tuple[int, str]] = []  # (status, reason); status 0 means hang past the timeout
        self.hang_s = 3.0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeKube:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fail_next(self, status: int, reason: str = "InternalError") -> None:
        self.failures.append((status, reason))

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                return

            def _send(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> dict | None:
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length)) if length else None

            def _dispatch(self, method: str) -> None:
                body = self._body() if method in ("POST", "PATCH", "PUT") else None
                fake.requests.append((method, self.path, body))
                if fake.failures:
                    code, reason = fake.failures.pop(0)
                    if code == 0:
                        time.sleep(fake.hang_s)
                        return
                    self._send(code, status_body(code, reason, f"fake failure {code}"))
                    return
                path = self.path.split("?")[0]
                if method == "GET" and path == "/api/v1/nodes":
                    self._send(
                        200,
                        {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": list(fake.nodes.values())},
                    )
                    return
                if path.startswith("/api/v1/nodes/"):
                    name = path.rsplit("/", 1)[1]
                    node = fake.nodes.get(name)
                    if node is None:
                        self._send(404, status_body(404, "NotFound", f'nodes "{name}" not found'))
                        return
                    if method == "PATCH":
                        node["spec"].update((body or {}).get("spec", {}))
                    self._send(200, node)
                    return
                self._send(404, status_body(404, "NotFound", "the server could not find the requested resource"))

            def do_GET(self):
                self._dispatch("GET")

            def do_PATCH(self):
                self._dispatch("PATCH")

        return Handler
