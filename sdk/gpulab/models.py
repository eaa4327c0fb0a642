"""Typed models of what the API answers: frozen dataclasses built from its JSON.

Each model names the OpenAPI component it mirrors (`SCHEMA`); the SDK's tests fetch the portal's served schema
(/api/v1/schema/) and fail when the fields here and there disagree. Timestamps become aware `datetime`s; fields
the portal adds later are kept in `raw` (the whole JSON object) until a model names them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any, ClassVar, TypeVar

T = TypeVar("T", bound="Model")

FINISHED = ("succeeded", "failed", "cancelled")


def parse_time(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
    return value


@dataclasses.dataclass(frozen=True)
class Model:
    SCHEMA: ClassVar[str] = ""
    TIMES: ClassVar[frozenset[str]] = frozenset()
    NESTED: ClassVar[dict[str, type[Model]]] = {}

    raw: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def api_fields(cls) -> set[str]:
        """The JSON fields this model reads (what the schema test compares)."""
        return {f.name.rstrip("_") for f in dataclasses.fields(cls) if f.name != "raw"}

    @classmethod
    def from_api(cls: type[T], data: dict[str, Any]) -> T:
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            if field.name == "raw":
                continue
            key = field.name.rstrip("_")  # `from_` reads "from"
            if key not in data:
                continue
            value = data[key]
            if key in cls.TIMES:
                value = parse_time(value)
            elif key in cls.NESTED and isinstance(value, list):
                value = [cls.NESTED[key].from_api(item) for item in value if isinstance(item, dict)]
            values[field.name] = value
        return cls(raw=dict(data), **values)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object as the portal sent it (what `--json` prints)."""
        return dict(self.raw)


@dataclasses.dataclass(frozen=True)
class JobEvent(Model):
    SCHEMA: ClassVar[str] = "JobEventOut"
    TIMES: ClassVar[frozenset[str]] = frozenset({"at"})

    at: dt.datetime | None = None
    from_state: str = ""
    to_state: str = ""
    attempt: int = 0
    reason: str = ""


@dataclasses.dataclass(frozen=True)
class Job(Model):
    """A training job. `events` is filled by `get` (the detail); lists leave it empty."""

    SCHEMA: ClassVar[str] = "JobDetailOut"
    TIMES: ClassVar[frozenset[str]] = frozenset(
        {"submitted_at", "queued_since", "started_at", "running_at", "finished_at", "estimated_start"}
    )
    NESTED: ClassVar[dict[str, type[Model]]] = {"events": JobEvent}

    id: int = 0
    name: str = ""
    status: str = ""
    stopping: bool = False
    owner: str = ""
    course: str | None = None
    image: str = ""
    command: list[str] = dataclasses.field(default_factory=list)
    script: str = ""
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    gpus: int = 0
    gpu_share: float = 1.0
    scratch: str = ""
    bulk: str = ""
    nodes: int = 1
    max_runtime_s: int = 0
    priority: str = ""
    reservation: int | None = None
    datasets: list[str] = dataclasses.field(default_factory=list)
    idle_ok_reason: str = ""
    resumed_from: int | None = None
    attempt: int = 0
    node_names: list[str] = dataclasses.field(default_factory=list)
    position: int | None = None
    reason: str = ""
    estimated_start: dt.datetime | None = None
    submitted_at: dt.datetime | None = None
    queued_since: dt.datetime | None = None
    started_at: dt.datetime | None = None
    running_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None
    exit_code: int | None = None
    message: str = ""
    events: list[JobEvent] = dataclasses.field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"


@dataclasses.dataclass(frozen=True)
class Preview(Model):
    """The answer to "will it start now?" (nothing is queued)."""

    SCHEMA: ClassVar[str] = "PreviewOut"
    TIMES: ClassVar[frozenset[str]] = frozenset({"estimated_start"})

    starts_now: bool = False
    sentence: str = ""
    position: int | None = None
    estimated_start: dt.datetime | None = None
    node_names: list[str] = dataclasses.field(default_factory=list)
    help: str = ""  # where the limit that says no is explained (/help/#limit-...), when one does


@dataclasses.dataclass(frozen=True)
class Profile(Model):
    SCHEMA: ClassVar[str] = "ProfileOut"

    slug: str = ""
    name: str = ""
    description: str = ""
    image: str = ""
    gpu_share: float = 0.0
    gpu_mem_mb: int | None = None
    cpu: float = 0.0
    memory_gb: float = 0.0
    max_session_s: int = 0
    courses: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Notebook(Model):
    SCHEMA: ClassVar[str] = "NotebookOut"
    TIMES: ClassVar[frozenset[str]] = frozenset({"requested_at", "ready_at", "ends_at", "must_end_by", "stopped_at"})

    id: int = 0
    status: str = ""
    position: int | None = None
    url: str | None = None
    reason: str = ""
    profile: str = ""
    profile_name: str = ""
    gpu_share: float = 0.0
    owner: str = ""
    course: str | None = None
    node: str = ""
    requested_at: dt.datetime | None = None
    ready_at: dt.datetime | None = None
    ends_at: dt.datetime | None = None
    must_end_by: dt.datetime | None = None
    stopped_at: dt.datetime | None = None


@dataclasses.dataclass(frozen=True)
class Reservation(Model):
    """A node reservation; `occurrences` (the ids of every week of a series) comes with `create`."""

    SCHEMA: ClassVar[str] = "ReservationCreatedOut"
    TIMES: ClassVar[frozenset[str]] = frozenset({"starts_at", "ends_at"})

    id: int = 0
    title: str = ""
    starts_at: dt.datetime | None = None
    ends_at: dt.datetime | None = None
    nodes: list[str] = dataclasses.field(default_factory=list)
    status: str = ""
    status_reason: str = ""
    owner: str = ""
    created_by: str = ""
    course: str | None = None
    requested: str = ""
    series: str | None = None
    occurrences: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Availability(Model):
    SCHEMA: ClassVar[str] = "AvailabilityOut"
    TIMES: ClassVar[frozenset[str]] = frozenset({"starts_at", "ends_at"})

    starts_at: dt.datetime | None = None
    ends_at: dt.datetime | None = None
    free_nodes: list[str] = dataclasses.field(default_factory=list)
    free_count: int = 0
    ready_count: int = 0


@dataclasses.dataclass(frozen=True)
class Gpu(Model):
    """The latest sample of one GPU; `holder` and `alerts` stay JSON (dicts)."""

    SCHEMA: ClassVar[str] = "GpuOut"
    TIMES: ClassVar[frozenset[str]] = frozenset({"sampled_at"})

    node: str = ""
    index: int = 0
    uuid: str | None = None
    model: str = ""
    util_pct: int | None = None
    mem_used_mb: int | None = None
    mem_total_mb: int | None = None
    temp_c: int | None = None
    power_w: float | None = None
    holder: dict[str, Any] | None = None
    sampled_at: dt.datetime | None = None
    stale: bool = False
    node_status: str = ""
    node_reason: str = ""
    available: bool = False
    alerts: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    @property
    def key(self) -> tuple[str, int]:
        return (self.node, self.index)


@dataclasses.dataclass(frozen=True)
class Me(Model):
    SCHEMA: ClassVar[str] = "MeOut"

    username: str = ""
    email: str = ""
    role: str = ""
    courses: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    quota: dict[str, Any] = dataclasses.field(default_factory=dict)
    usage: dict[str, Any] = dataclasses.field(default_factory=dict)
    lab_time_zone: str = ""  # the lab's zone (IANA): the CLI prints times in it unless told otherwise (--tz)
    language: str = ""  # the language the portal writes to this person in


@dataclasses.dataclass(frozen=True)
class UsageRow(Model):
    """One group of a usage report: a person, a course, ... (`key`), or a time bucket (`starts_at`, `ends_at`)."""

    SCHEMA: ClassVar[str] = "UsageReportRowOut"
    TIMES: ClassVar[frozenset[str]] = frozenset({"starts_at", "ends_at"})

    key: str = ""
    gpu_hours: float = 0.0
    gpu_seconds: float = 0.0
    starts_at: dt.datetime | None = None
    ends_at: dt.datetime | None = None


@dataclasses.dataclass(frozen=True)
class Usage(Model):
    """GPU-hours from the allocation ledger (GET /api/v1/usage/): `rows` as the portal groups them."""

    SCHEMA: ClassVar[str] = "/api/v1/usage/"  # a path: the schema test reads its 200 answer
    TIMES: ClassVar[frozenset[str]] = frozenset({"from", "to", "until"})
    NESTED: ClassVar[dict[str, type[Model]]] = {"rows": UsageRow}

    from_: dt.datetime | None = None
    to: dt.datetime | None = None
    until: dt.datetime | None = None
    group_by: str = ""
    kinds: list[str] = dataclasses.field(default_factory=list)
    total_gpu_hours: float = 0.0
    total_gpu_seconds: float = 0.0
    rows: list[UsageRow] = dataclasses.field(default_factory=list)


SCHEMA_MODELS: tuple[type[Model], ...] = (
    JobEvent,
    Job,
    Preview,
    Profile,
    Notebook,
    Reservation,
    Availability,
    Gpu,
    Me,
    UsageRow,
    Usage,
)
