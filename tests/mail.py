"""A real SMTP server on loopback (aiosmtpd) that keeps what it receives: the e-mail tests read what arrived.

`smtp_server` (tests/conftest.py) starts one on a free port of 127.0.0.1, points Django's SMTP backend at it and
stops it after the test. Addresses added to `smtp_server.refuse` are refused at RCPT TO (550), as a server refuses
an unknown mailbox.
"""

from __future__ import annotations

import email
import email.policy
import logging
import socket
import threading
import time
from email.message import EmailMessage

from aiosmtpd.controller import Controller

# aiosmtpd logs every connection at INFO from its own thread, also after pytest closed the stream the test's log
# handler writes to ("--- Logging error --- I/O operation on closed file" in the suite's output): keep its warnings.
logging.getLogger("mail.log").setLevel(logging.WARNING)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _Keep:
    def __init__(self, server: SmtpServer) -> None:
        self.server = server

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # noqa: N802 - aiosmtpd's hook
        with self.server.lock:
            if address in self.server.refuse:
                return "550 5.1.1 No such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 - aiosmtpd's hook name
        message = email.message_from_bytes(envelope.original_content, policy=email.policy.default)
        with self.server.lock:
            self.server.received.append((list(envelope.rcpt_tos), message))
            self.server.sessions.append(session)  # one per SMTP connection (kept: ids stay unique)
        return "250 Message accepted for delivery"


class SmtpServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.lock = threading.Lock()
        self.received: list[tuple[list[str], EmailMessage]] = []
        self.sessions: list[object] = []  # the SMTP session each message came in, in order
        self.refuse: set[str] = set()
        self.controller = Controller(_Keep(self), hostname="127.0.0.1", port=self.port)

    def start(self) -> SmtpServer:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()

    @property
    def messages(self) -> list[EmailMessage]:
        with self.lock:
            return [message for _, message in self.received]

    @property
    def connections(self) -> int:
        """How many SMTP connections the messages came over."""
        with self.lock:
            return len({id(session) for session in self.sessions})

    def to(self, address: str) -> list[EmailMessage]:
        with self.lock:
            return [message for rcpts, message in self.received if address in rcpts]

    def wait_for(self, count: int, *, timeout_s: float = 10.0) -> list[EmailMessage]:
        """The messages once at least `count` have arrived (or whatever arrived by the deadline)."""
        deadline = time.monotonic() + timeout_s
        while len(self.messages) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.messages
