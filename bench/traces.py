"""Job traces for the replay benchmark: the CSV format and the model of the user's runtime estimate.

A trace has the columns job_id,user,submit_s,duration_s,gpus (see /work/shared/traces/README.md). The policy
never sees duration_s: a job's max_runtime_s is the user's estimate, the true duration rounded up to the next
of 1 h, 4 h, 24 h and 7 d (beyond 7 d, the next whole week). Users ask for a round limit safely above what
they expect, and most limits are far above the real run time (a 70 s job asks for an hour), as on real
clusters; no job runs past its limit.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from pathlib import Path

ESTIMATE_STEPS_S = (3600.0, 4 * 3600.0, 24 * 3600.0, 7 * 24 * 3600.0)
TRACE_COLUMNS = ("job_id", "user", "submit_s", "duration_s", "gpus")


class TraceError(ValueError):
    pass


@dataclasses.dataclass(frozen=True, slots=True)
class TraceJob:
    job_id: str
    user: str
    submit_s: float
    duration_s: float
    gpus: int


def estimate_max_runtime(duration_s: float) -> float:
    """The user's limit: the true duration rounded up to 1 h, 4 h, 24 h or 7 d, then whole weeks."""
    for step in ESTIMATE_STEPS_S:
        if duration_s <= step:
            return step
    week = ESTIMATE_STEPS_S[-1]
    return math.ceil(duration_s / week) * week


def load_trace(path: str | Path) -> list[TraceJob]:
    """Read a trace CSV (job_id,user,submit_s,duration_s,gpus); errors name the line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise TraceError(f"Cannot read the trace {path}: {exc.strerror}.") from None
    except UnicodeDecodeError:
        raise TraceError(f"The trace {path} is not UTF-8 text.") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in TRACE_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise TraceError(f"The trace needs the columns {', '.join(TRACE_COLUMNS)}; missing {', '.join(missing)}.")
    jobs = []
    for row in reader:
        try:
            job = TraceJob(
                job_id=row["job_id"],
                user=row["user"],
                submit_s=float(row["submit_s"]),
                duration_s=float(row["duration_s"]),
                gpus=int(row["gpus"]),
            )
        except (TypeError, ValueError):
            raise TraceError(f"line {reader.line_num}: submit_s, duration_s and gpus must be numbers.") from None
        if job.gpus < 1 or not job.duration_s > 0 or not job.submit_s >= 0:
            raise TraceError(f"line {reader.line_num}: gpus and duration_s must be positive, submit_s not negative.")
        jobs.append(job)
    jobs.sort(key=lambda j: j.submit_s)
    return jobs
