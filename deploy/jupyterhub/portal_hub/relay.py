"""Inside a notebook's sandbox: the only two ways through its network namespace, then the server itself.

Usage: python relay.py SOCKET_DIR PORT HUB_PORT -- COMMAND...

The sandbox has a loopback of its own and nothing else (so 127.0.0.1:5432 is not the machine's PostgreSQL). The
spawner, outside, listens on the machine's 127.0.0.1:PORT (for the proxy) and on SOCKET_DIR/hub.sock (towards the
hub API). Here, SOCKET_DIR/server.sock leads to the server on the sandbox's 127.0.0.1:PORT, and the sandbox's
127.0.0.1:HUB_PORT leads to hub.sock. COMMAND runs as a child; its exit status is this process's. Standard library
only: it runs with whatever Python the sandbox has.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading


def pipe(source: socket.socket, target: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            target.sendall(data)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)


def serve(listener: socket.socket, connect) -> None:
    while True:
        client, _ = listener.accept()
        try:
            upstream = connect()
        except OSError:
            client.close()  # the server is not up yet: the hub asks again
            continue
        for source, target in ((client, upstream), (upstream, client)):
            threading.Thread(target=pipe, args=(source, target), daemon=True).start()


def main(argv: list[str]) -> int:
    socket_dir, port, hub_port = argv[1], int(argv[2]), int(argv[3])
    command = argv[argv.index("--") + 1 :]
    server_sock = os.path.join(socket_dir, "server.sock")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(server_sock)
    inbound = socket.socket(socket.AF_UNIX)
    inbound.bind(server_sock)
    inbound.listen(64)
    outbound = socket.create_server(("127.0.0.1", hub_port), backlog=64)

    def to_server() -> socket.socket:
        return socket.create_connection(("127.0.0.1", port), timeout=10)

    def to_hub() -> socket.socket:
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(os.path.join(socket_dir, "hub.sock"))
        return sock

    for listener, connect in ((inbound, to_server), (outbound, to_hub)):
        threading.Thread(target=serve, args=(listener, connect), daemon=True).start()
    child = subprocess.Popen(command)  # noqa: S603 - the spawner's argv
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda sig, _frame: child.send_signal(sig))
    code = child.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
