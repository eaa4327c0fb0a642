"""A course gives access from the first day of its term to the last, and nothing after: one rule on every path.

The student `ella` took DL-101, whose term ended yesterday; `mia` takes it in a term that runs on. DL-101's
reservation was booked while the course was in term. On each path that reads course membership (placement, job
submission on the reservation, the reservation's eviction and no-show rules, the live GPU view, the notebook
profiles a course offers) ella is treated as an outsider and mia as a member, and every refusal says the same.
"""

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.errors import NotPermitted
from accounts.models import Course
from jobs.models import Job
from jobs.services import job_submit
from labs.models import Allocation, AllocationKind, ReservationStatus
from labs.notebooks.selectors import profiles_offered
from labs.placement import Claim, NoCapacity, place
from labs.reservations.selectors import not_yours
from labs.reservations.services import NodeRequest, reservation_create
from labs.reservations.tick import reservations_tick
from labs.telemetry.visibility import public_gpu, viewer_for
from tests.factories import AllocationFactory, CourseFactory, EnrollmentFactory, NodeFactory, UserFactory
from tests.jobs.factories import IMAGE, ImageRuleFactory

pytestmark = pytest.mark.django_db

# Two days ahead, so the whole test lies after the ended term (which ends yesterday, whatever the hour now).
NOW = timezone.now().replace(microsecond=0) + dt.timedelta(days=2)
SENTENCE = "is not yours, nor for a course of yours that is in term."


@pytest.fixture
def lab():
    ImageRuleFactory()
    return {n: NodeFactory(name=f"gpu{n:02d}") for n in range(1, 4)}


@pytest.fixture
def course():
    course = CourseFactory(code="DL-101")
    course.teachers.add(UserFactory(username="ada", role="teacher"))
    return course


@pytest.fixture
def people(course):
    """ella's enrolment is in DL-101's old run, which ended yesterday; mia is in its current run."""
    ended = CourseFactory(code="DL-101-old")
    ella = EnrollmentFactory(course=ended, user=UserFactory(username="ella")).user
    EnrollmentFactory(course=course, user=ella)
    mia = EnrollmentFactory(course=course, user=UserFactory(username="mia")).user
    return ella, mia


def reserve(course, names, start, hours=2):
    [reservation] = reservation_create(
        by=course.teachers.get(),
        title="DL-101 lab",
        starts_at=start,
        ends_at=start + dt.timedelta(hours=hours),
        nodes=NodeRequest(names=tuple(names)),
        course=course,
        now=start - dt.timedelta(hours=3),
    )
    return reservation


def end_term(course):
    """The course's term ended yesterday (in the lab's zone): booked while in term, over now."""
    yesterday = timezone.localdate() - dt.timedelta(days=1)
    Course.objects.filter(pk=course.pk).update(term_start=yesterday - dt.timedelta(days=90), term_end=yesterday)


@pytest.fixture
def split_course(lab, course, people):
    """DL-101 booked gpu01 from NOW for 2 h; then split: ella's enrolment moves to a copy whose term has ended."""
    reservation = reserve(course, ["gpu01"], NOW)
    ella, mia = people
    old = Course.objects.get(code="DL-101-old")
    # Ella keeps only the ended run: drop her from the current one, and let the ended one own the reservation.
    course.enrollments.filter(user=ella).delete()
    type(reservation).objects.filter(pk=reservation.pk).update(course=old)
    old.teachers.add(course.teachers.get())
    end_term(old)
    reservation.refresh_from_db()
    return reservation, ella, mia, old


def claim(user, kind=AllocationKind.JOB, *, reservation=None, start=NOW, hours=1, share="1"):
    return Claim(
        user=user,
        kind=kind,
        starts_at=start,
        ends_at=start + dt.timedelta(hours=hours),
        share=Decimal(share),
        reservation=reservation,
    )


def test_placement_refuses_the_reservation_of_an_ended_course_with_the_one_sentence(split_course):
    reservation, ella, _mia, old = split_course
    with pytest.raises(NoCapacity) as refused:
        place(claim(ella, reservation=reservation))
    assert str(refused.value) == not_yours(reservation) and str(refused.value).endswith(SENTENCE)
    # Without the reservation, its node is kept from her like from anyone outside the course.
    assert "gpu01" not in place(claim(ella)).node_names
    # While the term ran, the same claim was hers to make.
    Course.objects.filter(pk=old.pk).update(term_end=timezone.localdate(NOW))
    assert place(claim(ella, reservation=reservation)).node_names == ["gpu01"]


def test_a_job_on_the_reservation_of_an_ended_course_is_refused_with_the_one_sentence(split_course):
    reservation, ella, _mia, _old = split_course
    with pytest.raises(NotPermitted) as refused:
        job_submit(
            user=ella,
            name="mnist",
            image=IMAGE,
            command=["python", "train.py"],
            gpus=1,
            max_runtime_s=3600,
            reservation=reservation.pk,
        )
    assert str(refused.value) == not_yours(reservation)
    assert refused.value.extra["fields"] == {"reservation": [not_yours(reservation)]}
    assert not Job.objects.exists()


def test_the_api_answers_403_with_the_one_sentence(split_course, client):
    from rest_framework.test import APIClient

    from accounts.services import token_issue

    reservation, ella, _mia, _old = split_course
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=ella)}")
    answer = api.post(
        "/api/v1/jobs/",
        {
            "name": "mnist",
            "image": IMAGE,
            "command": ["python", "train.py"],
            "gpus": 1,
            "max_runtime_s": 3600,
            "reservation": reservation.pk,
        },
        format="json",
    )
    assert answer.status_code == 403, answer.content
    assert answer.json()["code"] == "permission_denied"
    assert answer.json()["detail"] == not_yours(reservation)


def test_the_window_evicts_the_student_of_an_ended_course(lab, course, people):
    ella, _mia = people
    course.enrollments.filter(user=ella).delete()
    reservation = reserve(course, ["gpu01"], NOW + dt.timedelta(minutes=10))
    old = Course.objects.get(code="DL-101-old")
    old.teachers.add(course.teachers.get())
    type(reservation).objects.filter(pk=reservation.pk).update(course=old)
    end_term(old)
    hers = AllocationFactory(user=ella, gpu=lab[1].gpus.get(), kind="notebook", ref="notebook:1", share="0.25")
    reservations_tick(now=NOW)
    assert ella.notices.filter(text__contains="will be stopped").exists()  # warned like any outsider
    reservations_tick(now=NOW + dt.timedelta(minutes=10))
    hers.refresh_from_db()
    assert hers.ends_at == NOW + dt.timedelta(minutes=10)  # an ended course keeps nobody on its nodes
    assert ella.notices.filter(text__contains="was stopped").exists()


def test_use_by_a_student_of_an_ended_course_is_no_show(split_course, lab, settings):
    settings.RESERVATION_NO_SHOW_MIN = 30
    reservation, ella, _mia, _old = split_course
    reservations_tick(now=NOW)
    reservation.refresh_from_db()
    assert reservation.status == ReservationStatus.ACTIVE
    # ella's notebook somehow got on the node (placed before the term ended): it is not use by the course.
    AllocationFactory(
        user=ella, gpu=lab[1].gpus.get(), kind="notebook", ref="notebook:5", starts_at=NOW + dt.timedelta(minutes=5)
    )
    assert reservations_tick(now=NOW + dt.timedelta(minutes=31)).released == 1
    reservation.refresh_from_db()
    assert reservation.status == ReservationStatus.ENDED and "nobody used the nodes" in reservation.status_reason


def test_the_live_gpu_view_offers_the_ended_courses_reserved_gpu_to_nobody_but_its_owner(split_course):
    reservation, ella, mia, old = split_course
    holder = {
        "user_id": reservation.owner_id,
        "user": "ada",
        "kind": AllocationKind.RESERVATION,
        "ref": reservation.ref,
        "course_id": old.pk,
        "course": old.code,
        "share": 1.0,
        "since": NOW.isoformat(),
    }
    state = {"node": "gpu01", "index": 0, "node_status": "ready", "stale": False, "holders": [holder]}
    assert public_gpu(state, viewer_for(ella))["available"] is False
    assert public_gpu(state, viewer_for(reservation.owner))["available"] is True
    Course.objects.filter(pk=old.pk).update(term_end=timezone.localdate() + dt.timedelta(days=1))
    assert public_gpu(state, viewer_for(ella))["available"] is True  # in term, it was hers to use


def test_course_profiles_end_with_the_term(course, people):
    from labs.models import NotebookProfile

    ella, mia = people
    profile = NotebookProfile.objects.create(slug="dl101-half", name="DL-101 half", gpu_share=Decimal("0.5"))
    profile.courses.add(course)
    assert profile in profiles_offered(mia) and profile in profiles_offered(ella)
    end_term(course)
    assert profile not in profiles_offered(mia) and profile not in profiles_offered(ella)


def test_ella_and_the_ledger_are_untouched_by_refusals(split_course):
    reservation, ella, _mia, _old = split_course
    before = Allocation.objects.count()
    with pytest.raises(NoCapacity):
        place(claim(ella, reservation=reservation))
    assert Allocation.objects.count() == before
