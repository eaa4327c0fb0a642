"""Submit, cancel, the scheduling pass and the state machine, against the database."""

import datetime as dt

import pytest
from django.utils import timezone

from accounts.errors import Conflict, InvalidInput, NotPermitted, QuotaExceeded
from accounts.models import Quota
from jobs.backends.base import JobStatus
from jobs.models import Job, JobEvent, JobState, PriorityClass, StopReason
from jobs.services import (
    job_cancel,
    job_preview,
    job_stop_done,
    job_submit,
    scheduling_pass,
    transition,
)
from jobs.services.dispatch import job_observe, jobs_preempt_for_allocations
from labs.models import Allocation, Gpu, Reservation, ReservationNode, ReservationStatus
from tests.factories import CourseFactory, EnrollmentFactory, UserFactory
from tests.jobs.factories import IMAGE, DatasetFactory, ImageRuleFactory, lab

pytestmark = pytest.mark.django_db


@pytest.fixture
def nodes():
    ImageRuleFactory()
    return lab(2)


@pytest.fixture
def sam(nodes):
    return UserFactory(username="sam", role="student")


@pytest.fixture
def ada(nodes):
    return UserFactory(username="ada", role="teacher")


def submit(user, **overrides):
    fields = dict(name="mnist", image=IMAGE, command=["python", "train.py"], gpus=1, max_runtime_s=3600)
    fields.update(overrides)
    return job_submit(user=user, **fields)


# --- submit ------------------------------------------------------------------------------------


def test_a_submitted_job_is_queued_with_an_event_and_a_first_answer(sam):
    job = submit(sam, env={"EPOCHS": "3"})
    job.refresh_from_db()
    assert job.state == JobState.QUEUED and job.attempt == 1
    assert job.command == ["python", "train.py"] and job.env == {"EPOCHS": "3"}
    assert job.reason == "starting now" and job.position == 1
    assert [(e.from_state, e.to_state, e.reason) for e in job.events.all()] == [("", "queued", "submitted")]
    assert not Allocation.objects.exists()  # only a pass places it


BAD = [
    ({"image": "docker.io/someone/miner:latest"}, "image"),
    ({"image": "not an image; rm -rf /"}, "image"),
    ({"image": ""}, "image"),
    ({"command": "python train.py && curl evil"}, "command"),
    ({"command": []}, "command"),
    ({"command": ["python", 3]}, "command"),
    ({"command": [""]}, "command"),
    ({"command": {"a": 1}}, "command"),
    ({"gpus": 0}, "gpus"),
    ({"gpus": -1}, "gpus"),
    ({"gpus": "two"}, "gpus"),
    ({"gpus": True}, "gpus"),
    ({"gpus": 2}, "gpus"),  # no node has 2 GPUs
    ({"nodes": 0}, "nodes"),
    ({"nodes": 3}, "nodes"),  # the lab has 2
    ({"max_runtime_s": 0}, "max_runtime_s"),
    ({"max_runtime_s": 30 * 24 * 3600}, "max_runtime_s"),
    ({"max_runtime_s": "soon"}, "max_runtime_s"),
    ({"env": {"1BAD": "x"}}, "env"),
    ({"env": {"CUDA_VISIBLE_DEVICES": "0,1"}}, "env"),
    ({"env": {"DATASET_X": "/etc"}}, "env"),
    ({"env": {"EPOCHS": 3}}, "env"),
    ({"env": ["EPOCHS=3"]}, "env"),
    ({"priority": "urgent"}, "priority"),
    ({"priority": "high"}, "priority"),  # students may not
    ({"datasets": ["nope"]}, "datasets"),
    ({"datasets": "imagenet"}, "datasets"),
    ({"reservation": 999999}, "reservation"),
    ({"name": "   "}, "name"),
    ({"name": "x" * 121}, "name"),
    ({"course": "NOPE-1"}, "course"),
]


@pytest.mark.parametrize(("overrides", "field"), BAD)
def test_bad_input_names_the_field_and_writes_nothing(sam, overrides, field):
    with pytest.raises(InvalidInput) as error:
        submit(sam, **overrides)
    assert field in error.value.fields
    assert not Job.objects.exists() and not JobEvent.objects.exists()


def test_every_bad_field_is_named_at_once(sam):
    with pytest.raises(InvalidInput) as error:
        submit(sam, image="evil/x:1", command="bash -c x", gpus=0)
    assert set(error.value.fields) == {"image", "command", "gpus"}


def test_quota_gpus_per_job(sam):
    with pytest.raises(QuotaExceeded) as error:
        submit(sam, nodes=2)  # students: 1 GPU per job
    assert error.value.extra["limit"] == "max_gpus_per_job"
    assert not Job.objects.exists()


def test_quota_max_jobs_counts_queued_and_running(sam):
    submit(sam)
    submit(sam)
    with pytest.raises(QuotaExceeded) as error:
        submit(sam)
    assert error.value.extra == {"limit": "max_jobs", "used": 2, "allowed": 2, "help": "/help/#limit-max_jobs"}
    assert Job.objects.count() == 2


def test_quota_weekly_gpu_hours(sam):
    Quota.objects.create(user=sam, gpu_hours_week=2)
    with pytest.raises(QuotaExceeded) as error:
        submit(sam, max_runtime_s=3 * 3600)
    assert error.value.extra["limit"] == "gpu_hours_week"
    assert not Job.objects.exists()


def test_datasets_and_a_teachers_high_priority(ada):
    DatasetFactory(name="imagenet")
    job = submit(ada, priority="high", datasets=["imagenet", "imagenet"], nodes=2)
    assert job.priority == PriorityClass.HIGH and job.datasets == ["imagenet"] and job.total_gpus == 2


def _reservation(owner, nodes, *, course=None, start=None, hours=2):
    start = start or timezone.now() - dt.timedelta(minutes=5)
    reservation = Reservation.objects.create(
        owner=owner,
        created_by=owner,
        course=course,
        title="DL lab",
        starts_at=start,
        ends_at=start + dt.timedelta(hours=hours),
        status=ReservationStatus.APPROVED,
    )
    for node in nodes:
        ReservationNode.objects.create(
            reservation=reservation, node=node, starts_at=reservation.starts_at, ends_at=reservation.ends_at
        )
    return reservation


def test_someone_elses_reservation_is_refused(nodes, sam, ada):
    reservation = _reservation(ada, nodes[:1])
    with pytest.raises(NotPermitted):
        submit(sam, reservation=reservation.pk)
    assert not Job.objects.exists()


def test_a_course_reservation_takes_its_students_jobs_and_fits_them_in_the_window(nodes, sam, ada):
    course = CourseFactory(code="DL-101")
    course.teachers.add(ada)
    EnrollmentFactory(user=sam, course=course)
    reservation = _reservation(ada, nodes[:1], course=course)
    with pytest.raises(InvalidInput) as error:
        submit(sam, reservation=reservation.pk, max_runtime_s=3 * 3600)
    assert "max_runtime_s" in error.value.fields
    job = submit(sam, reservation=reservation.pk)
    assert job.course == course
    scheduling_pass()
    job.refresh_from_db()
    assert job.state == JobState.STARTING and job.node_names == [nodes[0].name]


def test_others_stay_off_a_reserved_node(nodes, sam, ada):
    _reservation(ada, nodes[:1])
    first, second = submit(sam), submit(UserFactory(username="kim"))
    scheduling_pass()
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.state == JobState.STARTING and first.node_names == [nodes[1].name]
    assert second.state == JobState.QUEUED and second.position == 1


# --- the pass ------------------------------------------------------------------------------------


def test_a_pass_places_what_fits_in_the_ledger_and_tells_the_rest_why_they_wait(nodes, sam):
    kim, lea = UserFactory(username="kim"), UserFactory(username="lea")
    jobs = [submit(sam), submit(kim), submit(lea)]
    report = scheduling_pass()
    assert len(report.started) == 2 and report.waiting == 1
    for job in jobs:
        job.refresh_from_db()
    started = [job for job in jobs if job.state == JobState.STARTING]
    waiting = [job for job in jobs if job.state == JobState.QUEUED]
    assert len(started) == 2 and len(waiting) == 1
    for job in started:
        allocation = Allocation.objects.get(ref=f"job:{job.pk}#1")
        assert allocation.kind == "job" and allocation.ends_at is None and allocation.user_id == job.owner_id
        assert allocation.gpu.node.name == job.node_names[0] and job.gpu_indices == [[0]]
        assert job.events.last().to_state == "starting"
    assert sorted(j.node_names[0] for j in started) == ["gpu01", "gpu02"]
    assert waiting[0].position == 1
    assert waiting[0].reason.startswith("waiting for 1 GPU; first in line; estimated start")
    # A second pass changes nothing: nothing is placed twice.
    assert scheduling_pass().started == []
    assert Allocation.objects.filter(ends_at__isnull=True).count() == 2


def test_a_gpu_a_notebook_holds_is_not_given_to_a_job(nodes, sam):
    from tests.factories import AllocationFactory

    for node in nodes:
        AllocationFactory(kind="notebook", ref="notebook:1", gpu=node.gpus.first())
    job = submit(sam)
    scheduling_pass()
    job.refresh_from_db()
    assert job.state == JobState.QUEUED and "no estimated start" in job.reason


def test_a_stale_transition_loses_and_writes_no_event(sam):
    job = submit(sam)
    stale = Job.objects.get(pk=job.pk)
    assert transition(job, to=JobState.CANCELLED, why="x", finished_at=timezone.now())
    assert not transition(stale, to=JobState.STARTING, why="y", started_at=timezone.now())
    assert list(Job.objects.get(pk=job.pk).events.values_list("to_state", flat=True)) == ["queued", "cancelled"]


# --- cancel ------------------------------------------------------------------------------------


def test_cancel_a_queued_job(sam):
    job = job_cancel(user=sam, job=submit(sam))
    job.refresh_from_db()
    assert job.state == JobState.CANCELLED and job.finished_at is not None
    assert job.events.last().reason == "cancelled by its owner while queued"
    with pytest.raises(Conflict):
        job_cancel(user=sam, job=job)


def test_only_the_owner_or_an_admin_cancels(sam, ada):
    job = submit(sam)
    with pytest.raises(NotPermitted):
        job_cancel(user=ada, job=job)
    admin = UserFactory(username="root", role="admin")
    assert job_cancel(user=admin, job=job).state == JobState.CANCELLED


def test_cancel_a_running_job_stops_it_then_gives_the_gpus_back(sam):
    job = submit(sam)
    scheduling_pass()
    job.refresh_from_db()
    job = job_cancel(user=sam, job=job)
    assert job.state == JobState.STARTING and job.stop_reason == StopReason.CANCELLED
    assert job.status_label == "stopping"
    assert job_observe(job=job, status=JobStatus(name="x", phase="running")) == "stopping"
    assert job_observe(job=job, status=JobStatus(name="x", phase="failed")) == "stopped"
    job.refresh_from_db()
    assert job.state == JobState.CANCELLED and job.stop_requested_at is None
    assert not Allocation.objects.filter(ends_at__isnull=True).exists()


# --- preemption ----------------------------------------------------------------------------------


def test_a_high_priority_job_preempts_low_work_which_is_requeued_as_attempt_2(nodes, sam, ada):
    low = [submit(sam, priority="low"), submit(UserFactory(username="kim"), priority="low")]
    scheduling_pass()
    high = submit(ada, priority="high")
    report = scheduling_pass()
    assert len(report.preempted) == 1
    victim = Job.objects.get(pk=report.preempted[0])
    assert victim.pk in {j.pk for j in low}
    assert victim.stop_reason == StopReason.PREEMPTED and "higher priority class" in victim.stop_note
    high.refresh_from_db()
    assert high.state == JobState.QUEUED and high.reason.startswith("starting at about")
    assert job_stop_done(job=victim)
    victim.refresh_from_db()
    assert victim.state == JobState.QUEUED and victim.attempt == 2 and victim.node_names == []
    event = victim.events.last()
    assert event.from_state == "starting" and event.to_state == "queued" and event.attempt == 2
    assert "preempted" in event.reason and "attempt 2" in event.reason
    assert Allocation.objects.get(ref=f"job:{victim.pk}#1").ends_at is not None
    scheduling_pass()
    high.refresh_from_db()
    assert high.state == JobState.STARTING


def test_two_passes_in_a_row_preempt_none_of_the_jobs_the_first_one_started():
    # The fault drills' case: 6 one-GPU jobs of 6 students on 4 GPUs, a second pass right after the first.
    ImageRuleFactory()
    lab(4)
    now = timezone.now().replace(microsecond=0)
    students = [UserFactory(username=f"student{n}", role="student") for n in range(6)]
    jobs = [submit(student, now=now - dt.timedelta(seconds=60 - n)) for n, student in enumerate(students)]
    first = scheduling_pass(now=now)
    assert len(first.started) == 4 and first.waiting == 2
    assert not Job.objects.filter(started_as_backfill=True).exists()
    for later in (1, 60, 120):
        again = scheduling_pass(now=now + dt.timedelta(seconds=later))
        assert (again.started, again.preempted) == ([], []), later
    rows = Job.objects.filter(pk__in=[j.pk for j in jobs])
    assert sorted(rows.values_list("state", flat=True)) == ["queued"] * 2 + ["starting"] * 4
    assert not rows.exclude(stop_requested_at=None).exists()


def test_a_job_started_as_a_backfill_gives_way_after_the_exempt_time(sam, settings):
    from tests.factories import AllocationFactory

    settings.JOBS_PREEMPT_EXEMPT_S = 600
    now = timezone.now().replace(microsecond=0)
    notebook = AllocationFactory(kind="notebook", ref="notebook:1", gpu=Gpu.objects.get(node__name="gpu01"))
    submit(UserFactory(username="kim", role="teacher"), nodes=2, now=now - dt.timedelta(hours=1))
    fill = submit(sam, now=now - dt.timedelta(minutes=1))
    assert scheduling_pass(now=now).started == [fill.pk]  # ahead of the 2-node job, which cannot fit
    fill.refresh_from_db()
    assert fill.started_as_backfill and "as a backfill" in fill.events.last().reason
    Allocation.objects.filter(pk=notebook.pk).update(ends_at=now + dt.timedelta(seconds=30))
    assert scheduling_pass(now=now + dt.timedelta(minutes=5)).preempted == []  # younger than the exempt time
    report = scheduling_pass(now=now + dt.timedelta(minutes=11))
    assert report.preempted == [fill.pk]
    fill.refresh_from_db()
    assert fill.stop_reason == StopReason.PREEMPTED and "ahead of a higher-priority job" in fill.stop_note
    assert job_stop_done(job=fill, now=now + dt.timedelta(minutes=12))
    fill.refresh_from_db()
    assert (fill.state, fill.attempt, fill.started_as_backfill) == (JobState.QUEUED, 2, False)


def test_ended_allocations_preempt_their_job(sam):
    job = submit(sam)
    scheduling_pass()
    ids = list(Allocation.objects.filter(ref=f"job:{job.pk}#1").values_list("pk", flat=True))
    assert jobs_preempt_for_allocations(allocation_ids=ids, reason="The node is reserved for “DL lab”.") == [job.pk]
    job.refresh_from_db()
    assert job.stop_reason == StopReason.PREEMPTED and job.stop_note == "The node is reserved for “DL lab”."
    # Twice is once.
    assert jobs_preempt_for_allocations(allocation_ids=ids, reason="again") == []


# --- will it start now? ------------------------------------------------------------------------


def test_preview_says_whether_it_would_start_and_writes_nothing(nodes, sam):
    fields = dict(name="x", image=IMAGE, command=["python"], gpus=1, max_runtime_s=3600)
    answer = job_preview(user=sam, **fields)
    assert answer.starts_now and answer.sentence.startswith("Yes: it would start now, on gpu0")
    for user in ("kim", "lea"):
        submit(UserFactory(username=user))
    scheduling_pass()
    answer = job_preview(user=sam, **fields)
    assert not answer.starts_now and answer.position == 1
    assert answer.sentence.startswith("Not now: waiting for 1 GPU; first in line; estimated start")
    assert Job.objects.count() == 2
    Quota.objects.create(user=sam, max_jobs=0)
    assert job_preview(user=sam, **fields).sentence.startswith("No: You have 0 jobs")
