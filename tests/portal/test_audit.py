"""The audit trail: every kind of write leaves an entry with its actor and the fields before and after, in the same
transaction as the change (a failed write leaves none); the entries cannot be edited or deleted through the portal;
the retention sweep removes old ones."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.db import transaction
from django.utils import timezone

from accounts import audit
from accounts.models import AuditEntry, Quota
from accounts.selectors import tokens_of
from accounts.services import (
    enrollment_remove,
    enrollment_set,
    quota_set,
    token_create,
    token_revoke,
    user_language_set,
    user_role_set,
)
from accounts.signin.services import signin_groups_apply
from labs.budgets.services import budget_create, budget_delete, budget_update
from labs.models import NodeStatus, Reservation, ReservationStatus
from labs.reservations.services import reservation_decide
from labs.services import node_cordon, node_drain, node_uncordon
from tests.factories import PASSWORD, CourseFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin():
    return UserFactory(username="ada", role="admin")


@pytest.fixture
def sam():
    return UserFactory(username="sam", role="student")


def only(action: str) -> AuditEntry:
    entries = list(AuditEntry.objects.filter(action=action))
    assert len(entries) == 1, [str(entry) for entry in AuditEntry.objects.all()]
    return entries[0]


def test_role_change(admin, sam):
    user_role_set(by=admin, user=sam, role="teacher")
    entry = only("role.change")
    assert entry.actor == admin and entry.actor_name == "ada"
    assert (entry.target_type, entry.target_id, entry.target_label) == ("user", str(sam.pk), "sam")
    assert entry.before == {"role": "student"} and entry.after == {"role": "teacher"}


def test_quota_change_and_removal(admin, sam):
    quota_set(by=admin, user=sam, limits={"gpu_hours_week": Decimal("30")}, note="thesis")
    entry = only("quota.change")
    assert entry.actor == admin
    assert entry.before == {} and entry.after["gpu_hours_week"] == "30" and entry.after["note"] == "thesis"
    quota_set(by=admin, user=sam, limits={"gpu_hours_week": Decimal("40")}, note="thesis")
    latest = AuditEntry.objects.filter(action="quota.change").first()
    assert latest.before == {"gpu_hours_week": "30"} and latest.after == {"gpu_hours_week": "40"}
    quota_set(by=admin, user=sam, limits={}, note="")
    assert only("quota.remove").before["gpu_hours_week"] == "40"


def test_a_write_that_changes_nothing_leaves_no_entry(admin, sam):
    user_role_set(by=admin, user=sam, role="student")  # already a student, by hand
    assert not AuditEntry.objects.exists()


def test_budget_create_change_delete(admin):
    course = CourseFactory(code="DL101")
    budget = budget_create(by=admin, gpu_hours="100", course=course)
    assert only("budget.create").after["gpu_hours"] == "100"
    assert only("budget.create").course == course
    budget_update(by=admin, budget=budget, gpu_hours="150")
    change = only("budget.change")
    assert change.actor == admin and change.before == {"gpu_hours": "100"} and change.after == {"gpu_hours": "150"}
    budget_delete(by=admin, budget=budget)
    assert only("budget.delete").before["gpu_hours"] == "150"


def test_course_membership(sam):
    course = CourseFactory(code="DL101")
    enrollment_set(user=sam, course=course)
    added = only("course.member_add")
    assert added.target_label == "sam" and added.course == course and added.after["role"] == "student"
    enrollment_set(user=sam, course=course, role="assistant")
    assert only("course.member_change").before["role"] == "student"
    enrollment_remove(user=sam, course=course)
    assert only("course.member_remove").before == {"role": "assistant", "source": "manual"}


def test_reservation_decisions(admin):
    teacher = UserFactory(username="tess", role="teacher")
    start = timezone.now() + dt.timedelta(days=2)
    made = [
        Reservation.objects.create(
            title=f"Class {n}",
            owner=teacher,
            created_by=teacher,
            starts_at=start,
            ends_at=start + dt.timedelta(hours=2),
            status=ReservationStatus.PENDING,
        )
        for n in (1, 2)
    ]
    reservation_decide(by=admin, reservation=made[0], approve=True)
    reservation_decide(by=admin, reservation=made[1], approve=False, reason="Exam week.")
    approved, rejected = only("reservation.approve"), only("reservation.reject")
    assert approved.actor == admin and approved.before == {"status": "pending"}
    assert approved.after == {"status": "approved"}
    assert rejected.reason == "Exam week." and rejected.after == {"status": "cancelled"}


def test_node_cordon_drain_uncordon(admin):
    node = NodeFactory(name="gpu17")
    node_cordon(node=node, by=admin, reason="Fan noise.")
    cordon = only("node.cordon")
    assert cordon.actor == admin and cordon.target_label == "gpu17" and cordon.reason == "Fan noise."
    assert cordon.before["status"] == NodeStatus.READY and cordon.after["status"] == NodeStatus.CORDONED
    node_uncordon(node=node, by=admin, reason="Fixed.")
    assert only("node.uncordon").after == {"status": NodeStatus.READY, "status_reason": ""}
    node_drain(node=node, by=admin, reason="Driver update.")
    assert only("node.drain").reason == "Driver update."


def test_token_create_and_revoke(sam):
    token, _key = token_create(user=sam, name="laptop")
    created = only("token.create")
    assert created.after["name"] == "laptop" and created.target_id == str(token.pk)
    token_revoke(user=sam, token_id=token.pk)
    revoked = only("token.revoke")
    assert revoked.before == {"revoked_at": None} and revoked.after["revoked_at"]


@pytest.mark.parametrize("language", ["en", "pt-br"])
def test_a_new_password_revokes_the_tokens_with_one_entry_naming_who_set_it(client, sam, language):
    for name in ("laptop", "cluster"):
        token_create(user=sam, name=name)
    AuditEntry.objects.all().delete()
    client.login(username="sam", password=PASSWORD)
    new = "a-much-longer-passphrase-41"
    form = {"old_password": PASSWORD, "new_password1": new, "new_password2": new}
    response = client.post("/account/password/", form, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 302
    entry = only("token.revoke_all")
    assert entry.actor == sam and entry.target_id == str(sam.pk) and entry.reason == "A new password."
    assert entry.before == {"live_tokens": 2} and entry.after == {"live_tokens": 0}
    assert not tokens_of(sam)
    # An admin's new password for someone without tokens left: nothing ended, nothing to record.
    sam.set_password("yet-another-passphrase-42")
    sam.save()
    assert AuditEntry.objects.filter(action="token.revoke_all").count() == 1


def test_signin_mapping(settings, sam):
    settings.SIGNIN_ROLE_GROUPS = "faculty=teacher"
    sam.role_source = "idp"
    sam.save()
    signin_groups_apply(user=sam, groups=["faculty"])
    entry = only("signin.mapping")
    assert entry.actor is None and entry.before == {"role": "student"} and entry.after["role"] == "teacher"
    assert entry.reason == "faculty"


def test_profile(sam):
    user_language_set(user=sam, language="pt-br")
    entry = only("profile.change")
    assert entry.before == {"language": ""} and entry.after == {"language": "pt-br"}


def test_a_failed_write_leaves_no_entry(admin, sam):
    with pytest.raises(RuntimeError), transaction.atomic():
        user_role_set(by=admin, user=sam, role="teacher")
        raise RuntimeError("the rest of the write failed")
    assert not AuditEntry.objects.exists()
    sam.refresh_from_db()
    assert sam.role == "student"


def test_a_bad_quota_is_refused_and_leaves_no_entry(admin, sam):
    from accounts.errors import InvalidInput

    with pytest.raises(InvalidInput):
        quota_set(by=admin, user=sam, limits={"notebook_gpu_share": Decimal("7")})
    assert [str(e) for e in AuditEntry.objects.all()] == [] and not Quota.objects.filter(user=sam).exists()


def test_retention(settings, sam):
    settings.AUDIT_RETENTION_DAYS = 30
    now = timezone.now()
    with transaction.atomic():
        audit.record(actor=None, action="old", target=sam, only_changes=False, at=now - dt.timedelta(days=31))
        audit.record(actor=None, action="new", target=sam, only_changes=False, at=now - dt.timedelta(days=29))
    from accounts.tasks import audit_prune

    assert audit_prune.apply().result == {"removed": 1}
    assert list(AuditEntry.objects.values_list("action", flat=True)) == ["new"]


def test_request_id_from_the_request_and_the_actor_from_the_session(client, sam):
    client.login(username="sam", password=PASSWORD)
    response = client.post("/account/", {"action": "language", "language": "pt-br"}, HTTP_X_REQUEST_ID="req-42")
    assert response["X-Request-ID"] == "req-42"
    entry = only("profile.change")
    assert entry.request_id == "req-42" and entry.actor == sam
