"""The events where they happen: the job state machine, the scheduling pass, notebook upkeep, reservation decisions
and the reservation tick each reach the owner's chosen channels (e-mail through SMTP, a webhook) once."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.models import ChatTarget, Notice, NotifyPreference
from jobs.models import JobState, StopReason
from jobs.services.scheduling import scheduling_pass
from jobs.services.transitions import job_finish, job_mark_running, job_stop_done
from labs.models import NotebookProfile, NotebookSession, NotebookStatus, Reservation, ReservationStatus
from labs.notebooks import upkeep
from labs.reservations.services import reservation_decide
from labs.reservations.tick import reservations_tick
from tests.factories import CourseFactory, UserFactory
from tests.jobs.factories import JobFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def ada(webhook):
    ada = UserFactory(username="ada", email="ada@lab.example", role="teacher")
    ChatTarget.objects.create(user=ada, url=webhook.url())
    return ada


def wants(user, event):
    for channel in ("email", "chat"):
        NotifyPreference.objects.create(user=user, event=event, channel=channel, enabled=True)


def told_once(smtp_server, webhook, sentence: str) -> None:
    (mail,) = smtp_server.wait_for(1)
    (hook,) = webhook.wait_for(1)
    assert sentence in mail.get_content(), mail.get_content()
    assert sentence in hook["message"]
    assert len(smtp_server.messages) == 1 and len(webhook.messages) == 1


def placed(ada, **fields):
    now = timezone.now()
    values = {"state": JobState.STARTING, "node_names": ["gpu01"], "gpu_indices": [0], "started_at": now}
    if fields.get("state") == JobState.RUNNING:
        values["running_at"] = now
    return JobFactory(owner=ada, name="mnist", **{**values, **fields})


def test_job_started(ada, smtp_server, webhook, on_commit):
    wants(ada, "job.started")
    job = placed(ada)
    with on_commit():
        assert job_mark_running(job=job)
    told_once(smtp_server, webhook, f"Your job “mnist” (#{job.pk}) started on gpu01.")


@pytest.mark.parametrize("succeeded", [True, False])
def test_job_succeeded_or_failed(succeeded, ada, smtp_server, webhook, on_commit):
    wants(ada, "job.succeeded" if succeeded else "job.failed")
    job = placed(ada, state=JobState.RUNNING)
    with on_commit():
        assert job_finish(job=job, succeeded=succeeded, exit_code=0 if succeeded else 3)
    if succeeded:
        told_once(smtp_server, webhook, f"Your job “mnist” (#{job.pk}) finished.")
    else:
        told_once(smtp_server, webhook, f"Your job “mnist” (#{job.pk}) failed: failed (exit code 3)")


def test_job_preempted_and_requeued(ada, smtp_server, webhook, on_commit):
    wants(ada, "job.preempted")
    now = timezone.now()
    job = placed(
        ada,
        state=JobState.RUNNING,
        stop_reason=StopReason.PREEMPTED,
        stop_note="a high-priority job needs the GPU",
        stop_requested_at=now,
    )
    with on_commit():
        assert job_stop_done(job=job)
    told_once(smtp_server, webhook, f"Your job “mnist” (#{job.pk}) was stopped and queued again:")
    assert "a high-priority job needs the GPU" in webhook.messages[0]["message"]


def test_a_job_stuck_past_its_estimate_is_told_once_per_attempt(ada, smtp_server, webhook, on_commit, settings):
    settings.NOTIFY_STUCK_FACTOR = 2
    wants(ada, "job.stuck")
    now = timezone.now()
    # Queued an hour ago, estimated to start 20 minutes after it was queued; no node fits it now.
    job = JobFactory(
        owner=ada,
        name="mnist",
        gpus_per_node=4,
        submitted_at=now - dt.timedelta(hours=1),
        queued_since=now - dt.timedelta(hours=1),
        estimated_start=now - dt.timedelta(minutes=40),
    )
    with on_commit():
        scheduling_pass(now=now)
    told_once(smtp_server, webhook, f"Your job “mnist” (#{job.pk}) is still waiting, longer than estimated")
    job.refresh_from_db()
    assert job.state == JobState.QUEUED and job.stuck_told_attempt == job.attempt
    with on_commit():
        job.estimated_start = now - dt.timedelta(minutes=30)
        job.save()
        scheduling_pass(now=now + dt.timedelta(minutes=5))
    assert len(smtp_server.messages) == 1 and len(webhook.messages) == 1


@pytest.fixture
def session(ada):
    profile = NotebookProfile.objects.create(
        slug="quarter", name="PyTorch, a quarter", image="x:1", gpu_share=Decimal("0.25"), roles=["teacher"]
    )
    now = timezone.now()
    return NotebookSession.objects.create(
        user=ada,
        profile=profile,
        status=NotebookStatus.READY,
        hub_user="ada",
        node="gpu01",
        gpu_index=0,
        ready_at=now - dt.timedelta(minutes=55),
        ends_at=now + dt.timedelta(minutes=5),
    )


def test_notebook_about_to_be_culled(ada, session, smtp_server, webhook, on_commit, settings):
    settings.NOTEBOOKS_IDLE_MIN, settings.NOTEBOOKS_WARN_MIN = 60, 10
    wants(ada, "notebook.cull")
    with on_commit():
        assert upkeep._idle(session, timezone.now(), upkeep.UpkeepReport(), []) is None
        upkeep._idle(session, timezone.now(), upkeep.UpkeepReport(), [])  # the next pass: told already
    told_once(smtp_server, webhook, "Your notebook “PyTorch, a quarter” looks idle and will be stopped at")
    assert Notice.objects.filter(user=ada, text__contains="looks idle").count() == 1  # the portal, as before


def test_notebook_about_to_hit_its_session_limit(ada, session, smtp_server, webhook, on_commit, settings):
    settings.NOTEBOOKS_WARN_MIN = 10
    wants(ada, "notebook.session_end")
    with on_commit():
        upkeep._session_length(session, timezone.now(), upkeep.UpkeepReport(), [])
        session.end_warned_at = None
        upkeep._session_length(session, timezone.now(), upkeep.UpkeepReport(), [])  # same end: told once
    told_once(smtp_server, webhook, "Your notebook “PyTorch, a quarter” ends at")


def pending(ada, **fields):
    start = timezone.now() + dt.timedelta(days=1)
    values = {"title": "DL lab", "starts_at": start, "ends_at": start + dt.timedelta(hours=2)}
    values.update(fields)
    values.setdefault("status", ReservationStatus.PENDING)
    return Reservation.objects.create(owner=ada, created_by=ada, **values)


@pytest.mark.parametrize("approve", [True, False])
def test_reservation_approved_or_rejected(approve, ada, smtp_server, webhook, on_commit):
    wants(ada, "reservation.approved" if approve else "reservation.rejected")
    root = UserFactory(username="root", role="admin")
    reservation = pending(ada)
    with on_commit():
        reservation_decide(by=root, reservation=reservation, approve=approve, reason="exams week")
    if approve:
        told_once(smtp_server, webhook, "The reservation “DL lab” (")
    else:
        told_once(smtp_server, webhook, "The reservation “DL lab” was rejected: exams week")


def test_reservation_starting_soon_reaches_the_owner_and_the_course_channel(
    ada, smtp_server, webhook, on_commit, settings
):
    settings.RESERVATION_WARN_LEAD_MIN = 30
    wants(ada, "reservation.starting")
    course = CourseFactory(code="DL-101")
    ChatTarget.objects.create(course=course, url=webhook.url("class"))
    now = timezone.now()
    pending(ada, status=ReservationStatus.APPROVED, course=course, starts_at=now + dt.timedelta(minutes=20))
    with on_commit():
        reservations_tick(now=now)
        reservations_tick(now=now + dt.timedelta(minutes=1))  # told once
    (mail,) = smtp_server.wait_for(1)
    assert "The reservation “DL lab” starts at" in mail.get_content() and "(in 20 minutes)" in mail.get_content()
    hooks = webhook.wait_for(2)
    assert sorted(hook["path"] for hook in hooks) == ["/class", "/hook"]
    assert len(smtp_server.messages) == 1


def test_reservation_released_as_a_no_show(ada, smtp_server, webhook, on_commit, settings):
    settings.RESERVATION_NO_SHOW_MIN = 20
    wants(ada, "reservation.no_show")
    now = timezone.now()
    pending(
        ada,
        status=ReservationStatus.ACTIVE,
        starts_at=now - dt.timedelta(minutes=30),
        ends_at=now + dt.timedelta(hours=1),
        warned_at=now - dt.timedelta(hours=1),
    )
    with on_commit():
        assert reservations_tick(now=now).released == 1
    told_once(smtp_server, webhook, "The reservation “DL lab” was released: nobody used its nodes in its first 20")
