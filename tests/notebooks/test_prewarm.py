"""Warm the lab before class: the pre-puller's Job per reserved node (strict schema and name rules), the local
spawner's no-op, and placeholders through the real hub (echo spawner): held for a course reservation, handed to a
student of the course on Start (same GPU, the ledger moved over), stopped when the window ends."""

from __future__ import annotations

import datetime as dt
import time
from decimal import Decimal

import kubernetes_validate
import pytest
from django.utils import timezone
from kubernetes import client

from jobs.backends.rules import is_dns1123_label
from labs.models import Allocation, NotebookProfile, NotebookSession, NotebookStatus, Reservation
from labs.notebooks.passes import notebooks_pass
from labs.notebooks.prewarm import HANDED_OVER, prepull, prepull_manifest, prewarm_pass
from labs.notebooks.services import notebook_request
from labs.reservations.node_request import NodeRequest
from labs.reservations.services import reservation_create
from tests.factories import CourseFactory, EnrollmentFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.usefixtures("hub_settings")


@pytest.mark.parametrize("version", ("1.33", "1.37"))
def test_the_prepuller_is_one_job_per_node_that_passes_strict_validation(version):
    manifest = prepull_manifest(
        reservation_id=12, node="gpu07", image="quay.io/jupyter/pytorch-notebook:cuda12-latest", namespace="nb"
    )
    kubernetes_validate.validate(manifest, version, strict=True)
    assert is_dns1123_label(manifest["metadata"]["name"]) and manifest["metadata"]["name"] == "prepull-r12-gpu07"
    pod = manifest["spec"]["template"]["spec"]
    assert pod["nodeName"] == "gpu07" and pod["containers"][0]["command"] == ["/bin/sh", "-c", "true"]
    assert pod["automountServiceAccountToken"] is False
    # The client's own model takes it (kubernetes 37 validates before it sends).
    assert client.V1Job.from_dict(manifest).spec.template.spec.node_name == "gpu07"


@pytest.fixture
def lab(db, settings):
    settings.NOTEBOOKS_PREWARM_MIN = 30
    course = CourseFactory(code="DL-101")
    teacher = UserFactory(username="grace", role="teacher")
    course.teachers.add(teacher)
    profile = NotebookProfile.objects.create(
        slug="quarter", name="Quarter GPU", image="quay.io/jupyter/base-notebook:latest", gpu_share=Decimal("0.25")
    )
    profile.courses.add(course)
    NodeFactory(name="gpu01")
    NodeFactory(name="gpu02")
    students = []
    for name in ("ada", "alan"):
        user = UserFactory(username=name)
        EnrollmentFactory(user=user, course=course)
        students.append(user)
    now = timezone.now()
    [reservation] = reservation_create(
        by=teacher,
        title="DL-101 lab",
        starts_at=now - dt.timedelta(minutes=1),
        ends_at=now + dt.timedelta(hours=2),
        nodes=NodeRequest(names=("gpu01",)),
        course=course,
        now=now - dt.timedelta(days=3),
    )
    Reservation.objects.filter(pk=reservation.pk).update(notebook_profile=profile, placeholders=2)
    reservation.refresh_from_db()
    return reservation, teacher, students


def run_until(condition, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        notebooks_pass(upkeep=True)
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_on_the_local_spawner_the_prepull_is_a_no_op_that_says_so(lab, settings):
    settings.HUB_SPAWNER = "local"
    reservation, _teacher, _students = lab
    assert prepull(reservation) == "local spawner: images are not pulled on this machine, nothing to pre-pull for gpu01"


def test_placeholders_are_held_and_handed_to_a_student_on_start(lab, settings):
    settings.HUB_SPAWNER = "echo"
    reservation, teacher, (ada, alan) = lab
    assert prewarm_pass() == {"prepulled": 1, "placeholders": 2, "ended": 0}
    assert prewarm_pass()["placeholders"] == 0  # topped up once
    held = NotebookSession.objects.filter(placeholder_for=reservation)
    run_until(lambda: held.filter(status=NotebookStatus.READY).count() == 2)
    # The teacher's own notebooks are not counted against the placeholders.
    assert notebook_request(user=teacher, profile="quarter").status == NotebookStatus.QUEUED
    first = held.filter(status=NotebookStatus.READY).order_by("ready_at", "id").first()
    gpu = (first.node, first.gpu_index)

    session = notebook_request(user=ada, profile="quarter")
    notebooks_pass(upkeep=False)
    session.refresh_from_db()
    first.refresh_from_db()
    assert (first.status, first.reason) == (NotebookStatus.STOPPED, HANDED_OVER)
    assert (
        session.status in (NotebookStatus.STARTING, NotebookStatus.READY) and (session.node, session.gpu_index) == gpu
    )
    assert "warm" in session.reason or session.status == NotebookStatus.READY
    assert session.course.code == "DL-101"
    # The ledger moved over: the placeholder's share closed, the student's open on the same GPU.
    assert not Allocation.objects.filter(ref=f"notebook:{first.pk}", ends_at__isnull=True).exists()
    (mine,) = Allocation.objects.filter(ref=f"notebook:{session.pk}", ends_at__isnull=True)
    assert mine.user == ada and mine.gpu.node.name == gpu[0] == "gpu01"  # placeholders sit on the reserved node
    run_until(lambda: NotebookSession.objects.get(pk=session.pk).status == NotebookStatus.READY)
    # Handed-over placeholders are not replaced; the other one stops when the window ends.
    assert prewarm_pass()["placeholders"] == 0
    assert prewarm_pass(now=reservation.ends_at + dt.timedelta(seconds=1))["ended"] == 1


def test_a_student_of_another_course_gets_no_placeholder(lab, settings):
    settings.HUB_SPAWNER = "echo"
    reservation, _teacher, _students = lab
    prewarm_pass()
    held = NotebookSession.objects.filter(placeholder_for=reservation)
    run_until(lambda: held.filter(status=NotebookStatus.READY).count() == 2)
    outsider = UserFactory(username="bob")
    other = CourseFactory(code="OTHER-1")
    EnrollmentFactory(user=outsider, course=other)
    NotebookProfile.objects.get(slug="quarter").courses.add(other)
    session = notebook_request(user=outsider, profile="quarter")
    notebooks_pass(upkeep=False)
    assert held.filter(status=NotebookStatus.READY).count() == 2
    session.refresh_from_db()
    assert "warm" not in session.reason
