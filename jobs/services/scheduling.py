"""The scheduling pass: the database turned into the policy's ClusterState, and the policy's decisions applied.

One pass at a time: a transaction-scoped PostgreSQL advisory lock serialises passes (a second one waits and
then sees what the first did). On SQLite, the embedded setup, the database's single write lock does the same.
Starts write the ledger with the chosen GPUs locked and checked again, as labs.placement.allocate does, so a
notebook that took a GPU since the pass read the ledger wins and the job simply waits for the next pass.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import User
from accounts.prepared import Prepared
from accounts.quotas import QuotaLimits, effective_quotas
from jobs import enqueue
from jobs.conf import policy_config
from jobs.models import PLACED_STATES, Job, JobState, StopReason
from jobs.notices import jobs_tell_stuck, stuck
from jobs.policy import (
    ClusterState,
    PassResult,
    Placement,
    QueuedJob,
    Quota,
    RunningJob,
    Start,
    Waiting,
    Window,
    schedule,
)
from jobs.policy import Node as PolicyNode
from jobs.selectors import decayed_usage_by_person, runtime_predictions
from jobs.services.transitions import job_request_stop, transition
from jobs.services.waiting_words import waiting_said
from labs.ledger import GpuShare, Ref, allocation_open, week_gpu_hours_by_user
from labs.models import Allocation, AllocationKind, Gpu, NodeStatus, Reservation
from labs.placement import reserved_windows
from labs.reservations.selectors import reservation_people
from labs.selectors import gpus_held_now, gpus_up, nodes_up

# Any constant that no other part of the portal uses for an advisory lock.
PASS_LOCK_KEY = 0x6A6F6273  # "jobs"


# Every pass and every job submission's dry run read it, whatever the lab's state: compiled once (accounts.prepared).
_IN_QUEUE_OR_PLACED = Prepared(lambda: Job.objects.filter(state__in=[JobState.QUEUED, *PLACED_STATES]).order_by("pk"))


def user_key(user_id: int) -> str:
    """How the policy names a person (it never needs the name itself)."""
    return str(user_id)


def _ts(moment: dt.datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


@dataclasses.dataclass
class LabSnapshot:
    state: ClusterState
    queued: dict[int, Job]
    placed: dict[int, Job]
    # (node name, GPU index) -> Gpu id, to write the ledger.
    gpu_ids: dict[tuple[str, int], int]


def _reservation_users(reservations: Iterable[Reservation], now: dt.datetime) -> dict[int, frozenset[str]]:
    """Who may work inside each reservation now, as the policy names people (the rule: `reservation_people`)."""
    people = reservation_people(reservations, at=now)
    return {pk: frozenset(user_key(user_id) for user_id in user_ids) for pk, user_ids in people.items()}


def _quotas(
    user_ids: set[int],
    now: dt.datetime,
    known: dict[int, QuotaLimits] | None = None,
    used: dict[int, Decimal] | None = None,
) -> dict[str, Quota]:
    """Everyone's limits and what is left of their week; `known` and `used`: limits and this week's GPU-hours the
    caller has just read (by user id)."""
    quotas = {}
    known = known or {}
    used_by = dict(used or {})
    if user_ids - used_by.keys():  # one query for everyone else waiting
        used_by.update(week_gpu_hours_by_user(user_ids - used_by.keys(), now=now))
    limits_of = dict(known)
    limits_of.update(effective_quotas(User.objects.filter(pk__in=user_ids - known.keys()), now=now))
    for user_id in user_ids & limits_of.keys():
        limits = limits_of[user_id]
        used = used_by.get(user_id, 0)
        quotas[user_key(user_id)] = Quota(
            max_jobs=limits.max_jobs,
            max_gpus_per_job=limits.max_gpus_per_job,
            gpu_hours_left=float(limits.gpu_hours_week - used),
        )
    return quotas


def queued_from(job: Job, expected_runtime_s: float | None = None) -> QueuedJob:
    return QueuedJob(
        id=job.pk,
        user=user_key(job.owner_id),
        gpus_per_node=job.gpus_per_node,
        max_runtime_s=float(job.max_runtime_s),
        submitted_at=job.submitted_at.timestamp(),
        nodes=job.nodes,
        priority_class=job.priority,
        reservation_id=job.reservation_id,
        attempt=job.attempt,
        queued_since=job.queued_since.timestamp(),
        expected_runtime_s=expected_runtime_s,
    )


def running_from(job: Job, now: dt.datetime, expected_runtime_s: float | None = None) -> RunningJob:
    """A placed job as the policy sees it: where it runs, since when, how long it is expected to run (a prediction
    from history, or None), and whether it may give way."""
    return RunningJob(
        id=job.pk,
        user=user_key(job.owner_id),
        gpus_per_node=job.gpus_per_node,
        max_runtime_s=float(job.max_runtime_s),
        submitted_at=job.submitted_at.timestamp(),
        started_at=(job.started_at or now).timestamp(),
        placements=tuple(
            Placement(node=name, gpus=tuple(indices))
            for name, indices in zip(job.node_names, job.gpu_indices, strict=False)
        ),
        priority_class=job.priority,
        reservation_id=job.reservation_id,
        attempt=job.attempt,
        preemptible=job.preemptible,
        stopping_until=_ts(job.stopping_until),
        backfill=job.started_as_backfill,
        expected_runtime_s=expected_runtime_s,
    )


def _reservation_windows(now: dt.datetime) -> dict[int, tuple[Window, ...]]:
    """Per node id, the reservation windows a job started now could run into, each with the people it admits."""
    horizon = now + dt.timedelta(seconds=settings.JOBS_MAX_RUNTIME_S + 3600)
    windows_by_node = reserved_windows(now, horizon)
    people = _reservation_users({r.pk: r for ws in windows_by_node.values() for _, r in ws}.values(), now)
    return {
        node_id: tuple(
            Window(
                starts_at=window.starts_at.timestamp(),
                ends_at=window.ends_at.timestamp(),
                reservation_id=reservation.pk,
                users=people.get(reservation.pk, frozenset()),
            )
            for window, reservation in windows
        )
        for node_id, windows in windows_by_node.items()
    }


def _policy_nodes(
    now: dt.datetime, held_by_jobs: set[tuple[str, int]]
) -> tuple[list[PolicyNode], dict[tuple[str, int], int]]:
    """The nodes that are not down, with the GPUs free now (held by no job, notebook or other work) and their
    reservation windows; and each (node name, GPU index)'s Gpu id, to write the ledger."""
    held_gpus = gpus_held_now()
    windows = _reservation_windows(now)
    # (id, index) of each node's GPUs; plain rows, as a pass and every job submission's dry run read them all.
    gpus_by_node: dict[int, list[tuple[int, int]]] = defaultdict(list)
    gpu_ids: dict[tuple[str, int], int] = {}
    nodes = nodes_up()
    for gpu_id, node_id, index in gpus_up():
        gpus_by_node[node_id].append((gpu_id, index))
    policy_nodes = []
    for node_id, name, status in nodes:
        gpus = gpus_by_node.get(node_id, [])
        gpu_ids.update({(name, index): gpu_id for gpu_id, index in gpus})
        ready = status == NodeStatus.READY
        free = tuple(
            index for gpu_id, index in gpus if ready and gpu_id not in held_gpus and (name, index) not in held_by_jobs
        )
        policy_nodes.append(
            PolicyNode(name=name, gpus=len(gpus), free_gpus=free, schedulable=ready, windows=windows.get(node_id, ()))
        )
    return policy_nodes, gpu_ids


def _expected_runtimes(jobs: list[Job], now: dt.datetime) -> dict[int, float]:
    """Run-time predictions that order the queue and plan the estimated starts; the limit still stops a job."""
    return {pk: p.expected_s for pk, p in runtime_predictions(jobs, now=now).items() if p.confidence != "none"}


def snapshot(
    *,
    now: dt.datetime,
    extra: Iterable[QueuedJob] = (),
    limits: dict[int, QuotaLimits] | None = None,
    used: dict[int, Decimal] | None = None,
) -> LabSnapshot:
    """Everything one pass looks at, read from the database now (`limits` and `used`: quotas and this week's
    GPU-hours just read, by user id)."""
    queued: dict[int, Job] = {}
    placed: dict[int, Job] = {}
    for job in _IN_QUEUE_OR_PLACED.objects():
        (queued if job.state == JobState.QUEUED else placed)[job.pk] = job
    expected = _expected_runtimes([*queued.values(), *placed.values()], now)
    running = [running_from(job, now, expected.get(job.pk)) for job in placed.values()]
    held_by_jobs = {(p.node, g) for job in running for p in job.placements for g in p.gpus}
    policy_nodes, gpu_ids = _policy_nodes(now, held_by_jobs)
    extra = [q for q in extra if q.id not in queued]
    users = {job.owner_id for job in queued.values()} | {int(q.user) for q in extra}
    state = ClusterState(
        now=now.timestamp(),
        nodes=policy_nodes,
        queued=[queued_from(job, expected.get(job.pk)) for job in queued.values()] + extra,
        running=running,
        usage={user_key(u): v for u, v in decayed_usage_by_person(now, policy_config().half_life_s).items()},
        quotas=_quotas(users, now, limits, used),
    )
    return LabSnapshot(state=state, queued=queued, placed=placed, gpu_ids=gpu_ids)


# --- The pass ------------------------------------------------------------------------


@dataclasses.dataclass
class PassReport:
    started: list[int] = dataclasses.field(default_factory=list)
    preempted: list[int] = dataclasses.field(default_factory=list)
    waiting: int = 0
    lost_race: list[int] = dataclasses.field(default_factory=list)

    def __str__(self) -> str:
        return f"started {len(self.started)}, preempting {len(self.preempted)}, waiting {self.waiting}"


def _lock_pass() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [PASS_LOCK_KEY])


def _start(job: Job, start: Start, snap: LabSnapshot, now: dt.datetime) -> bool:
    gpu_ids = [snap.gpu_ids[(p.node, g)] for p in start.placements for g in p.gpus]
    # Lock the GPUs, then look again: a notebook may have taken one since the snapshot.
    list(Gpu.objects.select_for_update().filter(id__in=gpu_ids).order_by("id"))
    taken = (
        Allocation.objects.filter(gpu_id__in=gpu_ids, ends_at__isnull=True)
        .exclude(kind=AllocationKind.RESERVATION)
        .exists()
    )
    if taken:
        return False
    where = ", ".join(f"{p.node} (GPU {', '.join(str(g) for g in p.gpus)})" for p in start.placements)
    why = f"attempt {job.attempt} placed on {where}" + (" as a backfill" if start.backfill else "")
    if not transition(
        job,
        to=JobState.STARTING,
        why=why,
        now=now,
        node_names=[p.node for p in start.placements],
        gpu_indices=[list(p.gpus) for p in start.placements],
        started_at=now,
        running_at=None,
        started_as_backfill=start.backfill,
        reason="",
        position=None,
        estimated_start=None,
    ):
        return False
    course_id = job.course_id or (job.reservation.course_id if job.reservation_id and job.reservation else None)
    allocation_open(
        ref=Ref.job(job.pk, job.attempt),
        user_id=job.owner_id,
        course_id=course_id,
        shares=[GpuShare(gpu_id) for gpu_id in gpu_ids],
        at=now,
        reason=job.name,
    )
    enqueue.dispatch_after_commit(job.pk, job.attempt)
    return True


def _save_waiting(waiting: list[Waiting], snap: LabSnapshot, now: dt.datetime) -> None:
    changed, late = [], []
    # Each owner reads why their job waits in their own language (the pages show the stored sentence).
    owners = {job.owner_id for job in snap.queued.values()}
    languages = dict(User.objects.filter(pk__in=owners).values_list("pk", "language"))
    for entry in waiting:
        job = snap.queued.get(entry.job_id)
        if job is None:
            continue
        if stuck(job, previous_estimate=job.estimated_start, now=now):
            late.append(job)
        sentence = waiting_said(entry, now, languages.get(job.owner_id, ""))[:300]
        estimate = (
            dt.datetime.fromtimestamp(entry.estimated_start, dt.UTC) if entry.estimated_start is not None else None
        )
        if estimate is not None:
            estimate = estimate.replace(microsecond=0)
        if (job.reason, job.position, job.estimated_start) != (sentence, entry.position, estimate):
            job.reason, job.position, job.estimated_start = sentence, entry.position, estimate
            changed.append(job)
    if changed:
        # Only rows still queued: a job cancelled since the snapshot keeps its final words.
        still = set(
            Job.objects.filter(pk__in=[j.pk for j in changed], state=JobState.QUEUED).values_list("pk", flat=True)
        )
        Job.objects.bulk_update(
            [j for j in changed if j.pk in still], ["reason", "position", "estimated_start"], batch_size=500
        )
    if late:
        jobs_tell_stuck(late)
        Job.objects.filter(pk__in=[j.pk for j in late], state=JobState.QUEUED).update(stuck_told_attempt=F("attempt"))


def scheduling_pass(*, now: dt.datetime | None = None) -> PassReport:
    """One pass of the queue: start what fits, preempt what must give way, tell everyone else why they wait."""
    report = PassReport()
    with transaction.atomic():
        _lock_pass()
        now = now or timezone.now()
        snap = snapshot(now=now)
        if not snap.queued:
            return report
        result: PassResult = schedule(snap.state, policy_config())
        for start in result.starts:
            job = snap.queued.pop(start.job_id)
            with transaction.atomic():
                if _start(job, start, snap, now):
                    report.started.append(job.pk)
                else:
                    report.lost_race.append(job.pk)
        for preemption in result.preemptions:
            job = snap.placed.get(preemption.job_id)
            if job is not None and job_request_stop(
                job=job, why=StopReason.PREEMPTED, note=preemption.reason, grace_s=preemption.grace_s, now=now
            ):
                report.preempted.append(job.pk)
        _save_waiting(result.waiting, snap, now)
        report.waiting = len(result.waiting)
    return report


# --- "Will it start now?" -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Preview:
    starts_now: bool
    sentence: str
    position: int | None = None
    estimated_start: dt.datetime | None = None
    node_names: tuple[str, ...] = ()
    help: str = ""  # where a limit that says no is explained (the help page's row: QuotaExceeded's `help`)


def preview(
    job: QueuedJob,
    *,
    now: dt.datetime | None = None,
    limits: dict[int, QuotaLimits] | None = None,
    used: dict[int, Decimal] | None = None,
) -> Preview:
    """A dry run of the policy with `job` added to the queue as it is now. Writes nothing. `limits` and `used`: the
    quotas and this week's GPU-hours the caller has just read in the same transaction (job_submit's check), by user
    id, so they are not read twice."""
    now = now or timezone.now()
    snap = snapshot(now=now, extra=[job], limits=limits, used=used)
    result = schedule(snap.state, policy_config())
    for start in result.starts:
        if start.job_id == job.id:
            where = ", ".join(start.node_names)
            return Preview(
                True, _("Yes: it would start now, on %(nodes)s.") % {"nodes": where}, node_names=start.node_names
            )
    waiting = result.waiting_by_id().get(job.id)
    if waiting is None:  # cannot happen: every job is started or waiting
        return Preview(False, _("No answer from the queue right now."))
    estimate = (
        dt.datetime.fromtimestamp(waiting.estimated_start, dt.UTC) if waiting.estimated_start is not None else None
    )
    sentence = waiting_said(waiting, now)
    return Preview(False, _("Not now: %(why)s.") % {"why": sentence}, waiting.position, estimate)
