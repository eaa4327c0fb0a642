"""A rank's output, from its pipe to DIR/rank-N.log (local_runner.py). Standard library only: the runner imports
it without Django, as a sibling when it runs as a script."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

TRUNCATED = "[log truncated at {} bytes (JOBS_LOG_MAX_BYTES): the rest of this rank's output was dropped]\n"


class RankLog:
    """A rank's output, from its pipe to DIR/rank-N.log, which stops growing at max_bytes with one line saying so."""

    def __init__(self, path: Path, fd: int, max_bytes: int) -> None:
        self.fd = fd
        self.out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
        self.room = max_bytes if max_bytes > 0 else None
        self.max_bytes = max_bytes
        self.ends_line = True
        os.set_blocking(fd, False)

    def pump(self) -> bool:
        """Copy what the pipe holds; False once it is closed (the rank and its children are gone)."""
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                return True
            if not chunk:
                self.close()
                return False
            self.write(chunk)

    def write(self, chunk: bytes) -> None:
        if self.room is None:
            os.write(self.out, chunk)
            return
        if self.room <= 0:
            return  # past the cap: read and dropped, so the job never blocks on a full pipe
        kept = chunk[: self.room]
        self.room -= len(chunk)
        os.write(self.out, kept)
        self.ends_line = kept.endswith(b"\n")
        if self.room < 0:
            newline = b"" if self.ends_line else b"\n"
            os.write(self.out, newline + TRUNCATED.format(self.max_bytes).encode())

    def close(self) -> None:
        for fd in (self.fd, self.out):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.fd = self.out = -1
