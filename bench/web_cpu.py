"""CPU per answer by endpoint class, measured inside bench_portal's uvicorn processes (bench.web_settings).

Under ASGI Django runs the (sync) middleware chain and the view of one request in one thread of its own; this
middleware, first in the chain, takes `time.thread_time()` of that thread around it: the CPU of the whole
middleware chain, the view, its queries' client side, serialising and rendering, for that answer alone (other
requests run in other threads). What runs on the event loop (uvicorn's HTTP parsing, Django's ASGI handler, the
hop into the thread, sending the body) and WebSockets cannot be told apart per request; bench_portal takes it from
the processes' whole CPU and spreads it evenly over the answers (README, "The whole-portal benchmark").

Each process adds its sums to a small JSON file in BENCH_CPU_DIR at most twice a second (the baseline client's
steady requests keep it fresh), which bench_portal reads at the start and the end of the measurement.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

CLASSES = ("page", "api_read", "api_write", "baseline")
WRITE_EVERY_S = 0.5


def endpoint_class(method: str, path: str) -> str:
    if path.startswith("/bench/baseline/"):
        return "baseline"
    if path.startswith("/api/"):
        return "api_read" if method in ("GET", "HEAD", "OPTIONS") else "api_write"
    return "page"


class CpuPerClassMiddleware:
    lock = threading.Lock()
    sums: dict[str, list[float]] = {name: [0, 0.0] for name in CLASSES}  # answers, thread CPU seconds
    written = 0.0

    def __init__(self, get_response):
        self.get_response = get_response
        self.target = Path(os.environ.get("BENCH_CPU_DIR", ".")) / f"cpu-{os.getpid()}.json"

    def __call__(self, request):
        began = time.thread_time()
        response = self.get_response(request)
        spent = time.thread_time() - began
        kind = endpoint_class(request.method, request.path)
        cls = type(self)
        with cls.lock:
            cls.sums[kind][0] += 1
            cls.sums[kind][1] += spent
            now = time.monotonic()
            if now - cls.written >= WRITE_EVERY_S:
                cls.written = now
                self._write()
        return response

    def _write(self) -> None:
        temporary = self.target.with_suffix(".tmp")
        temporary.write_text(json.dumps({"pid": os.getpid(), "sums": self.sums}))
        temporary.replace(self.target)


def read_sums(folder: Path) -> dict[str, list[float]]:
    """The sums of every process that wrote to `folder`, added up."""
    total = {name: [0, 0.0] for name in CLASSES}
    for file in folder.glob("cpu-*.json"):
        try:
            sums = json.loads(file.read_text())["sums"]
        except (OSError, ValueError, KeyError):
            continue
        for name in CLASSES:
            total[name][0] += sums[name][0]
            total[name][1] += sums[name][1]
    return total


def per_class(start: dict, end: dict, web_cpu_s: float) -> dict:
    """Answers and CPU per answer (ms) of each class over the measurement, and the ratio to the baseline's.

    `web_cpu_s` is the web processes' whole CPU over the same time; what the request threads did not spend (the
    event loop's share, WebSockets included) is spread evenly over every answer as `shared_ms_per_answer`."""
    answers = {name: end[name][0] - start[name][0] for name in CLASSES}
    thread_s = {name: end[name][1] - start[name][1] for name in CLASSES}
    total = sum(answers.values())
    shared_ms = 1000.0 * max(0.0, web_cpu_s - sum(thread_s.values())) / max(1, total)
    out: dict = {"shared_ms_per_answer": round(shared_ms, 2), "classes": {}}
    for name in CLASSES:
        own = 1000.0 * thread_s[name] / answers[name] if answers[name] else None
        out["classes"][name] = {
            "answers": answers[name],
            "thread_ms_per_answer": None if own is None else round(own, 2),
            "ms_per_answer": None if own is None else round(own + shared_ms, 2),
        }
    base = out["classes"]["baseline"]["ms_per_answer"]
    for row in out["classes"].values():
        row["x_baseline"] = round(row["ms_per_answer"] / base, 2) if base and row["ms_per_answer"] else None
    return out


def describe(cpu: dict) -> str:
    rows = ", ".join(
        f"{name} {row['ms_per_answer']} ms ({row['answers']} answers, {row['x_baseline']}x)"
        for name, row in cpu["classes"].items()
    )
    return f"  web CPU per answer by class (x baseline): {rows}; of which shared {cpu['shared_ms_per_answer']} ms"
