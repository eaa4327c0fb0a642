"""What following a log and watching the GPUs share between the sync and the async client: cutting bytes into lines,
and merging the WebSocket's snapshot and updates into one board of GPUs."""

from __future__ import annotations

import dataclasses
from typing import Any

from gpulab.models import Gpu

RESYNC = '{"type": "resync"}'


class LineSplitter:
    """Bytes in as they come, whole lines out (without their newline); a line cut between two pieces waits."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, data: bytes) -> list[str]:
        self._pending += data
        *lines, self._pending = self._pending.split(b"\n")
        return [line.decode("utf-8", errors="replace") for line in lines]

    def flush(self) -> list[str]:
        """What is left at the end (a last line without a newline)."""
        rest, self._pending = self._pending, b""
        return [rest.decode("utf-8", errors="replace")] if rest else []


@dataclasses.dataclass
class GpuBoard:
    """The GPUs as the WebSocket says they are: the snapshot, then each update merged in field by field.

    `apply` returns False on a gap in the sequence numbers: the caller asks for a resync (a new snapshot) and
    ignores updates until it comes.
    """

    records: dict[tuple[str, int], dict[str, Any]] = dataclasses.field(default_factory=dict)
    seq: int | None = None
    waiting_for_snapshot: bool = True

    def apply(self, message: dict[str, Any]) -> bool:
        kind = message.get("type")
        seq = message.get("seq")
        if kind == "snapshot":
            self.records = {(g["node"], g["index"]): dict(g) for g in message.get("gpus") or [] if _keyed(g)}
            self.seq = seq if isinstance(seq, int) else None
            self.waiting_for_snapshot = False
            return True
        if kind != "update" or self.waiting_for_snapshot:
            return True
        if isinstance(seq, int) and self.seq is not None and seq != self.seq + 1:
            if seq <= self.seq:
                return True  # an update the snapshot already holds
            self.waiting_for_snapshot = True
            return False
        self.seq = seq if isinstance(seq, int) else self.seq
        for change in message.get("gpus") or []:
            if _keyed(change):
                self.records.setdefault((change["node"], change["index"]), {}).update(change)
        return True

    def gpus(self) -> list[Gpu]:
        return [Gpu.from_api(self.records[key]) for key in sorted(self.records)]


def _keyed(record: Any) -> bool:
    return isinstance(record, dict) and isinstance(record.get("node"), str) and isinstance(record.get("index"), int)
