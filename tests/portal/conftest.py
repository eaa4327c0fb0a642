"""A real SMTP server on loopback for the e-mail the portal sends (aiosmtpd), and a way to read what it received.

(The budgets work may add a similar fixture to tests/conftest.py; one of the two can go at merge.)
"""

from __future__ import annotations

import email
import email.policy
import socket
import threading
import time

import pytest


class Inbox:
    """What the server received: one parsed message per DATA command, in order."""

    def __init__(self) -> None:
        self.messages: list[email.message.EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []
        self._lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):  # aiosmtpd's handler hook
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self._lock:
            self.messages.append(message)
            self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
        return "250 Message accepted for delivery"

    def wait_for(self, count: int, *, timeout: float = 10) -> list[email.message.EmailMessage]:
        """The first `count` messages, waiting for them up to `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.messages) >= count:
                    return list(self.messages[:count])
            time.sleep(0.02)
        raise AssertionError(f"the SMTP server received {len(self.messages)} messages, not {count}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def smtp_server(settings):
    """An aiosmtpd server on a free 127.0.0.1 port; the portal's settings send e-mail there through Django's SMTP
    backend. Stops at the end of the test."""
    from aiosmtpd.controller import Controller

    inbox = Inbox()
    controller = None
    for _ in range(5):  # a free port can be taken between the probe and the bind: try another
        controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
        try:
            controller.start()
            break
        except (OSError, RuntimeError):
            controller = None
    assert controller is not None, "no free loopback port for the SMTP server"
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = controller.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_TIMEOUT = 10
    try:
        yield inbox
    finally:
        controller.stop()
