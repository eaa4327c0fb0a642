"""The quota rule read for many people at once (accounts.quotas.effective_quotas) gives each of them exactly what
it gives them alone, sources included, in the same few queries however many they are: the scheduler's pass and
every job submission's dry run read the limits of everyone waiting."""

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.models import Course, MoreRequest, Quota, RequestKind, RequestStatus, Role
from accounts.quotas import effective_quota, effective_quotas
from tests.factories import CourseFactory, EnrollmentFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    Quota.objects.update_or_create(role=Role.STUDENT, defaults={"gpu_hours_week": Decimal("30"), "max_jobs": 3})
    generous = CourseFactory(code="B-200")
    stingy = CourseFactory(code="A-100")
    tied = CourseFactory(code="C-300")
    over = CourseFactory(
        code="Z-OLD",
        term_start=timezone.localdate() - dt.timedelta(days=200),
        term_end=timezone.localdate() - dt.timedelta(days=100),
    )
    Quota.objects.create(course=generous, max_jobs=6, reservation_notice_min=20)
    Quota.objects.create(course=stingy, max_jobs=4, gpu_hours_week=Decimal("50"), reservation_notice_min=45)
    Quota.objects.create(course=tied, max_jobs=6)
    Quota.objects.create(course=over, max_jobs=30)  # its term is over: it gives nothing
    plain, both, three, own, raised, old = (
        UserFactory(username=n) for n in ("plain", "both", "three", "own", "raised", "old")
    )
    for course in (generous, stingy):
        EnrollmentFactory(user=both, course=course)
    for course in (generous, stingy, tied):
        EnrollmentFactory(user=three, course=course)
    EnrollmentFactory(user=own, course=stingy)
    Quota.objects.create(user=own, max_jobs=1)
    EnrollmentFactory(user=old, course=over)
    teacher = UserFactory(username="teach", role=Role.TEACHER)
    Course.objects.get(pk=tied.pk).teachers.add(teacher)
    admin = UserFactory(username="boss", role=Role.ADMIN)
    until = timezone.now() + dt.timedelta(days=3)
    for kind, amount in ((RequestKind.QUOTA, "60"), (RequestKind.GPU_HOURS, "5")):
        MoreRequest.objects.create(
            user=raised,
            kind=kind,
            amount=Decimal(amount),
            until=until,
            reason="thesis",
            status=RequestStatus.APPROVED,
            granted_until=until,
        )
    MoreRequest.objects.create(  # over: no longer in force
        user=plain,
        kind=RequestKind.QUOTA,
        amount=Decimal("99"),
        until=until,
        reason="x",
        status=RequestStatus.APPROVED,
        granted_until=timezone.now() - dt.timedelta(minutes=1),
    )
    return [plain, both, three, own, raised, old, teacher, admin]


def test_many_at_once_is_each_alone(people):
    together = effective_quotas(people)
    for person in people:
        alone = effective_quota(person)
        assert together[person.pk] == alone
        assert together[person.pk].sources == alone.sources
    by_name = {p.username: together[p.pk] for p in people}
    assert by_name["plain"].max_jobs == 3 and by_name["plain"].sources["max_jobs"] == "role"
    assert by_name["plain"].gpu_hours_week == Decimal("30")  # the override that ran out does not count
    assert by_name["both"].max_jobs == 6 and by_name["both"].sources["max_jobs"] == "course B-200"
    assert by_name["both"].gpu_hours_week == Decimal("50")
    assert by_name["both"].reservation_notice_min == 20  # lower is more generous there
    assert by_name["three"].sources["max_jobs"] == "course B-200"  # a tie: the first course by code
    assert by_name["own"].max_jobs == 1 and by_name["own"].sources["max_jobs"] == "user"
    assert by_name["raised"].gpu_hours_week == Decimal("65")
    assert by_name["raised"].sources["gpu_hours_week"].startswith("request #")
    assert by_name["old"].max_jobs == 3  # the course whose term is over gives nothing
    assert by_name["teach"].max_jobs == 6 and by_name["teach"].sources["max_jobs"] == "course C-300"
    assert by_name["boss"].max_jobs == 40 and by_name["boss"].sources["max_jobs"] == "role"


def test_the_same_few_queries_for_one_or_forty(people, django_assert_num_queries):
    more = [UserFactory(username=f"extra{n}") for n in range(32)]
    with django_assert_num_queries(3):
        effective_quotas(people[:1])
    with django_assert_num_queries(3):
        assert len(effective_quotas(people + more)) == 40


def test_nobody_costs_nothing(django_assert_num_queries):
    with django_assert_num_queries(0):
        assert effective_quotas([]) == {}
