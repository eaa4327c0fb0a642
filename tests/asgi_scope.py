"""An ASGI HTTP GET's scope, as uvicorn hands one to the application, for tests that talk to it directly."""

from __future__ import annotations


def http_get(
    path: str, *, query: bytes = b"", headers: list[tuple[bytes, bytes]] = (), host: str = "testserver"
) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": [(b"host", host.encode()), *headers],
        "client": ("127.0.0.1", 50000),
        "server": (host, 80),
    }
