"""The notebook pass: drive the stops asked for, follow starting sessions to ready, look after running ones (on
periodic runs), then start from the queue.

It places queued sessions on GPUs through the shared placement code, asks the hub to start them (never more at once
than NOTEBOOKS_MAX_STARTING, so no 429 reaches anyone), and follows them to ready. Safe to run twice (placing
re-reads the queued row under a lock); labs.notebooks.tasks keeps to one pass at a time besides.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import logging
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext_lazy

from accounts.locale import said_to, speaking
from accounts.selectors import course_ids_active_for
from accounts.services import notice_send
from labs.coursework.services import handouts_deliver_to
from labs.ledger import Ref, allocations_discard
from labs.models import AllocationKind, Gpu, NotebookSession, NotebookStatus
from labs.notebooks.hub_client import HubClient, HubError, ServerState, hub, sign
from labs.notebooks.prewarm import placeholder_take
from labs.notebooks.services import session_finish
from labs.notebooks.upkeep import notebooks_upkeep
from labs.notebooks.volumes import notebook_volumes
from labs.notebooks.wording import at_local
from labs.placement import Claim, NoCapacity, allocate

log = logging.getLogger(__name__)

HUB_DOWN = gettext_lazy(
    "The notebook service is not answering right now. You keep your place in the queue;"
    " your notebook starts by itself when the service is back."
)
HUB_BUSY = gettext_lazy(
    "The notebook service is busy starting other notebooks; yours is next in line and starts by itself."
)
START_FAILED = gettext_lazy(
    "Your notebook could not start: %(why)s. Its GPU is released and nothing more is counted."
    " Press Start to try again, or pick a smaller profile; if it keeps failing, tell the lab admins."
)
NOT_READY_AFTER = ngettext_lazy(
    "it was not ready after %(minutes)d minute", "it was not ready after %(minutes)d minutes", "minutes"
)


@dataclasses.dataclass
class PassReport:
    started: int = 0
    ready: int = 0
    stopped: int = 0
    failed: int = 0
    queued: int = 0
    starting: int = 0
    hub_down: bool = False
    warned: int = 0

    def __str__(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in dataclasses.asdict(self).items())


def notebooks_pass(
    *, upkeep: bool = True, now: dt.datetime | None = None, client: HubClient | None = None
) -> PassReport:
    """Stops, then follow starting and running sessions, then start from the queue. Safe to run twice."""
    now = now or timezone.now()
    client = client or hub()
    report = PassReport()
    try:
        _drive_stops(client, report, now)
        live = NotebookSession.objects.filter(status__in=(NotebookStatus.STARTING, NotebookStatus.READY))
        if live.exists():
            servers = client.active_servers()
            _follow_starting(client, servers, report, now)
            if upkeep:
                looked = notebooks_upkeep(servers=servers, now=now)
                report.stopped += looked.stopped
                report.warned += looked.warned
        _start_queued(client, report, now)
    except HubError as exc:
        if not exc.retryable:
            raise
        report.hub_down = True
        log.warning("notebooks pass: %s", exc)
        queued = NotebookSession.objects.filter(status=NotebookStatus.QUEUED).select_related("user")
        for session in queued:
            down = said_to(session.user, HUB_DOWN)
            if session.reason != down:
                NotebookSession.objects.filter(pk=session.pk).update(reason=down)
    report.queued = NotebookSession.objects.filter(status=NotebookStatus.QUEUED).count()
    report.starting = NotebookSession.objects.filter(status=NotebookStatus.STARTING).count()
    return report


def _drive_stops(client: HubClient, report: PassReport, now: dt.datetime) -> None:
    for session in NotebookSession.objects.filter(status=NotebookStatus.STOPPING).order_by("stop_requested_at"):
        try:
            gone = client.stop(session.hub_user, session.server_name)
        except HubError as exc:
            if exc.retryable:
                raise
            log.error("stopping %s: %s", session.server_name, exc)
            gone = False
        if gone:
            session_finish(session, NotebookStatus.STOPPED, session.reason or "Stopped.", now=now)
            report.stopped += 1


def _follow_starting(
    client: HubClient, servers: dict[tuple[str, str], ServerState], report: PassReport, now: dt.datetime
) -> None:
    for session in NotebookSession.objects.filter(status=NotebookStatus.STARTING).select_related("profile", "user"):
        state = servers.get((session.hub_user, session.server_name))
        started_for = (now - (session.starting_at or now)).total_seconds()
        if state is not None and state.ready:
            session.status = NotebookStatus.READY
            session.url = settings.NOTEBOOKS_HUB_PUBLIC_URL + (state.url or "/")
            session.ready_at = now
            session.reason = ""
            session.save(update_fields=["status", "url", "ready_at", "reason"])
            report.ready += 1
        elif state is None and started_for > 3:
            # The hub no longer has it: the spawn failed (the hub logs why).
            with transaction.atomic():
                session_finish(
                    session,
                    NotebookStatus.FAILED,
                    said_to(session.user, START_FAILED, why=gettext_lazy("the server did not come up")),
                    now=now,
                )
            notice_send(user=session.user, level="warning", text=session.reason, ref=f"{session.ref}:failed")
            report.failed += 1
        elif started_for > settings.NOTEBOOKS_START_TIMEOUT_S:
            minutes = max(1, settings.NOTEBOOKS_START_TIMEOUT_S // 60)
            try:
                client.stop(session.hub_user, session.server_name)
            except HubError as exc:
                log.warning("could not stop the timed-out spawn %s: %s", session.server_name, exc)
            with transaction.atomic():
                why = said_to(session.user, NOT_READY_AFTER, minutes=minutes)
                session_finish(session, NotebookStatus.FAILED, said_to(session.user, START_FAILED, why=why), now=now)
            notice_send(user=session.user, level="warning", text=session.reason, ref=f"{session.ref}:failed")
            report.failed += 1


def _options(session: NotebookSession, gpu: Gpu, max_seconds: int) -> dict:
    profile = session.profile
    options = {
        "session": session.pk,
        "profile": profile.slug,
        "image": profile.image,
        "gpu_share": float(profile.gpu_share),
        "gpu_mem_mb": int(profile.gpu_mem_mb or int(profile.gpu_share * gpu.memory_mb)),
        "cpu": float(profile.cpu),
        "mem_gb": float(profile.memory_gb),
        "node": gpu.node.name,
        "gpu_index": gpu.index,
        "gpu_uuid": gpu.uuid or "",
        "max_seconds": max_seconds,
        "user_id": session.user_id,  # a local server runs as the person's own uid (the hub's LocalSpawner)
    }
    volumes = notebook_volumes(session.user)
    if volumes:  # datasets and course shares this person may use (labs.notebooks.volumes); absent when none
        options["datasets"] = volumes
    options["sig"] = sign(options, settings.NOTEBOOKS_HUB_TOKEN)
    return options


def _place(session: NotebookSession, now: dt.datetime) -> tuple[NotebookSession, dict] | None:
    """Take a GPU share for the queued session and mark it starting; None if another pass took it first."""
    profile = session.profile
    length = dt.timedelta(hours=float(profile.max_session_h))
    with transaction.atomic():
        row = (
            NotebookSession.objects.select_for_update()
            .select_related("profile", "user")
            .filter(pk=session.pk, status=NotebookStatus.QUEUED)
            .first()
        )
        if row is None:
            return None
        held_for = row.placeholder_for  # a placeholder goes on its reservation's nodes, once the window is open
        if held_for is not None:
            length = min(length, held_for.ends_at - now)
        claim = Claim(
            user=row.user,
            kind=AllocationKind.NOTEBOOK,
            starts_at=now,
            ends_at=now + length,
            share=profile.gpu_share,
            reservation=held_for,
            course=row.course,
        )
        placement, allocations = allocate(
            claim=claim, ref=Ref.notebook(row.pk), reason=f"notebook {profile.slug}", now=now
        )
        gpu = Gpu.objects.select_related("node").get(pk=allocations[0].gpu_id)
        ends_at = now + length
        if placement.must_end_by is not None and placement.must_end_by < ends_at:
            ends_at = placement.must_end_by
        row.status = NotebookStatus.STARTING
        row.node = gpu.node.name
        row.gpu_index = gpu.index
        row.starting_at = now
        row.ends_at = ends_at
        row.must_end_by = placement.must_end_by
        row.start_attempts += 1
        row.reason = said_to(row.user, gettext_lazy("Starting on %(node)s."), node=gpu.node.name)
        if placement.must_end_by is not None:
            with speaking(row.user):
                row.reason += " " + _("It must end by %(at)s: the node is reserved then.") % {
                    "at": at_local(placement.must_end_by)
                }
        row.save(
            update_fields=[
                "status",
                "node",
                "gpu_index",
                "starting_at",
                "ends_at",
                "must_end_by",
                "start_attempts",
                "reason",
            ]
        )
        return row, _options(row, gpu, int((ends_at - now).total_seconds()))


def _requeue(session: NotebookSession, reason: str) -> None:
    """The hub could not take it now: give the GPU back and put it back in the queue, in the same place."""
    with transaction.atomic():
        allocations_discard(ref=Ref.notebook(session.pk))
        NotebookSession.objects.filter(pk=session.pk).update(
            status=NotebookStatus.QUEUED,
            node="",
            gpu_index=None,
            starting_at=None,
            ends_at=None,
            must_end_by=None,
            reason=reason,
        )


def _hand_out(session: NotebookSession) -> None:
    """The person's released course material and assignments into their home before their server starts."""
    try:
        handouts_deliver_to(user=session.user)
    except Exception:  # never keeps a notebook from starting
        log.exception("handing course work out to %s failed", session.user_id)


def _start_queued(client: HubClient, report: PassReport, now: dt.datetime) -> None:
    slots = settings.NOTEBOOKS_MAX_STARTING - NotebookSession.objects.filter(status=NotebookStatus.STARTING).count()
    queued = NotebookSession.objects.filter(status=NotebookStatus.QUEUED).select_related("profile", "user")
    # The smallest share that found no GPU this pass, per set of courses (whose reservations a person may use).
    blocked_at: dict[frozenset[int], Decimal] = {}
    courses_of: dict[int, frozenset[int]] = {}
    for session in queued.order_by("requested_at", "id")[:1000]:
        share = session.profile.gpu_share
        if session.user_id not in courses_of:
            courses_of[session.user_id] = course_ids_active_for(session.user, today=timezone.localdate(now))
        key = courses_of[session.user_id]
        if key in blocked_at and share >= blocked_at[key]:
            continue
        if slots <= 0:
            busy = said_to(session.user, HUB_BUSY)
            if session.reason != busy:
                NotebookSession.objects.filter(pk=session.pk).update(reason=busy)
            continue
        taken = placeholder_take(session, now)
        if taken is not None:
            row, gpu, held = taken
            with contextlib.suppress(HubError):  # a placeholder left running is the reconciler's to stop
                client.stop(held.hub_user, held.server_name)
            placed = row, _options(row, gpu, int((row.ends_at - now).total_seconds()))
        else:
            placed = None
        try:
            with speaking(session.user):  # why it cannot be placed, in the owner's language
                placed = placed or _place(session, now)
        except NoCapacity as exc:
            blocked_at[key] = share
            why = said_to(session.user, gettext_lazy("Waiting for a GPU: %(why)s"), why=exc.message)[:300]
            NotebookSession.objects.filter(pk=session.pk).exclude(reason=why).update(reason=why)
            continue
        if placed is None:
            continue
        row, options = placed
        _hand_out(row)
        try:
            client.ensure_user(row.hub_user)
            client.start(row.hub_user, row.server_name, options)
        except HubError as exc:
            if exc.retryable and exc.status == 429:
                _requeue(row, said_to(row.user, HUB_BUSY))  # the hub's own spawn limit: try again on the next pass
                return
            if exc.retryable:
                _requeue(row, said_to(row.user, HUB_DOWN))
                raise
            log.error("the hub refused to start %s: %s", row.server_name, exc)
            with transaction.atomic():
                session_finish(
                    row,
                    NotebookStatus.FAILED,
                    said_to(row.user, START_FAILED, why=gettext_lazy("the notebook service refused it")),
                    now=now,
                )
            report.failed += 1
            continue
        slots -= 1
        report.started += 1
