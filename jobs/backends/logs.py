"""Job logs in pages of bounded size, for every backend: a log may be far larger than what one answer may hold.

Two caps, both in settings:
- JOBS_LOG_MAX_BYTES, per rank and attempt: the local runner stops writing a rank's log there; from Kubernetes the
  portal reads no further into a pod's log in one request (the kubelet rotates container logs itself, at its
  `containerLogMaxSize`, 10 MiB by default, and the pod-log API serves only the current file);
- JOBS_LOG_RESPONSE_MAX_BYTES, per answer: what one read holds in memory and returns (1 MiB by default).
One read asks for the end of the log (the default), its last N lines (`tail_lines`), or a byte range
(`offset`, `limit_bytes`) to page through it; the LogPage says where the bytes lie and whether the cap cut them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from django.conf import settings


def response_cap() -> int:
    return max(1, int(settings.JOBS_LOG_RESPONSE_MAX_BYTES))


def read_cap() -> int:
    return max(1, int(settings.JOBS_LOG_MAX_BYTES))


@dataclasses.dataclass(frozen=True, slots=True)
class Ask:
    """What a caller asked for, with the cap applied: `take` bytes at most, from `offset` or from the end."""

    tail_lines: int | None
    offset: int | None
    limit_bytes: int | None
    take: int

    @classmethod
    def of(cls, tail_lines: int | None, offset: int | None, limit_bytes: int | None) -> Ask:
        cap = response_cap()
        take = cap if limit_bytes is None else max(0, min(int(limit_bytes), cap))
        return cls(
            tail_lines=None if tail_lines is None else max(0, int(tail_lines)),
            offset=None if offset is None else max(0, int(offset)),
            limit_bytes=None if limit_bytes is None else max(0, int(limit_bytes)),
            take=take,
        )

    def cut(self, available: int) -> bool:
        """Whether the cap, not the caller's own limit, kept `available` bytes from the answer."""
        wanted = available if self.limit_bytes is None else min(self.limit_bytes, available)
        return wanted > self.take


def last_lines(data: bytes, lines: int, *, more_before: bool) -> tuple[bytes, bool]:
    """The last `lines` lines of a window of a log; and whether fewer were found than asked while more precede.

    With `more_before` the window starts inside the log, so its first line is partial and is dropped (unless the
    window is all one line: then that line's end is all there is to show).
    """
    if lines <= 0:
        return b"", False
    if more_before:
        newline = data.find(b"\n")
        if 0 <= newline < len(data) - 1:
            data = data[newline + 1 :]
    pos = len(data) - 1 if data.endswith(b"\n") else len(data)
    for found in range(1, lines + 1):
        pos = data.rfind(b"\n", 0, pos)
        if pos < 0:
            return data, more_before and found < lines
    return data[pos + 1 :], False


@dataclasses.dataclass(frozen=True, slots=True)
class LogRead:
    data: bytes
    read: int  # bytes read from the stream
    ended: bool  # the stream ended before the reader stopped: `read` is the log's size


def read_window(chunks: Iterable[bytes], *, keep: int, ceiling: int, skip: int = 0, last: bool = False) -> LogRead:
    """Read a stream of chunks no further than `ceiling` bytes, holding at most `keep` bytes (+ one chunk).

    Kept are the first `keep` bytes after `skip` (one more is read, to tell whether more follow), or with `last`
    the last `keep` bytes read. Whatever the other side sends, memory stays bounded and reading stops.
    """
    stop_at = ceiling if last else min(ceiling, skip + keep + 1)
    buffer = bytearray()
    read = 0
    for chunk in chunks:
        if not chunk:
            continue
        piece = chunk[: stop_at - read]
        begin = max(0, skip - read)
        if begin < len(piece):
            buffer += piece[begin:]
        read += len(piece)
        if last and len(buffer) > keep:
            del buffer[: len(buffer) - keep]  # cheap: bytearray drops from the front without copying the rest
        if read >= stop_at:
            return LogRead(bytes(buffer if last else buffer[: keep + 1]), read, ended=False)
    return LogRead(bytes(buffer), read, ended=True)
