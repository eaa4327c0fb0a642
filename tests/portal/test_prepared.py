"""Lookups compiled once (accounts.prepared): the session, its account and an API token, which every signed-in
request makes. They must give what the ORM gives, with each call's own values, and keep every refusal: an expired
session, a switched-off or deleted account, a session naming no number, a revoked token. Also run on SQLite
(scripts/test.sh), where date-times reach the database as text."""

from __future__ import annotations

import datetime as dt

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.db.models import Count, Max, Q
from django.test import Client
from django.utils import timezone

from accounts.models import ApiToken, AuditEntry, User
from accounts.prepared import Prepared
from accounts.selectors import token_find, user_signed_in
from accounts.services import token_issue
from accounts.sessions import SessionStore
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

AT = AuditEntry._meta.get_field("at")
ACTION = AuditEntry._meta.get_field("action")


def fields_of(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_a_prepared_query_gives_the_orms_instances_with_each_calls_own_values():
    moment = timezone.now().replace(microsecond=0)
    for i, action in enumerate(["quota.change", "node.cordon", "quota.change"]):
        AuditEntry.objects.create(
            at=moment - dt.timedelta(minutes=i), action=action, target_type="user", before={"n": i}, after={"a": [i]}
        )
    since = Prepared(
        lambda action, at: AuditEntry.objects.filter(action=action, at__gte=at), action=ACTION, at=AT
    )  # fmt: skip
    for action, start in [("quota.change", moment - dt.timedelta(hours=1)), ("quota.change", moment),
                          ("node.cordon", moment - dt.timedelta(hours=1)), ("nothing", moment)]:  # fmt: skip
        expected = list(AuditEntry.objects.filter(action=action, at__gte=start))
        got = since.objects(action, start)
        assert [fields_of(o) for o in got] == [fields_of(o) for o in expected]  # the model's order, JSON decoded
        assert all(o._state.db == "default" and not o._state.adding for o in got)
    assert since.objects("quota.change", moment)[0].before == {"n": 0}  # a JSON field comes back decoded


def test_a_token_comes_with_its_account_in_one_query(django_assert_num_queries):
    ada, bob = UserFactory(username="ada"), UserFactory(username="bob")
    keys = {token_issue(user=ada): ada, token_issue(user=bob): bob}
    for key, owner in keys.items():
        with django_assert_num_queries(1):
            token = token_find(key)
            assert token.user == owner and token.user.username == owner.username
        assert fields_of(token) == fields_of(ApiToken.objects.get(pk=token.pk))
    assert token_find("glp_" + "x" * 43) is None and token_find("") is None


def test_a_revoked_token_is_still_refused_with_its_sentence():
    ada = UserFactory(username="ada")
    key = token_issue(user=ada)
    ApiToken.objects.filter(user=ada).update(revoked_at=timezone.now())
    response = Client().get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {key}", HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 401 and "revoked" in response.json()["detail"]


def test_the_account_a_session_names_must_exist_be_active_and_be_a_number():
    ada = UserFactory(username="ada")
    assert user_signed_in(ada.pk) == ada and user_signed_in(str(ada.pk)) == ada
    assert user_signed_in("ada") is None and user_signed_in(ada.pk + 1000) is None
    User.objects.filter(pk=ada.pk).update(is_active=False)
    assert user_signed_in(ada.pk) is None


@pytest.mark.parametrize("language,signin", [("en", "Sign in"), ("pt-br", "Entrar")])
def test_a_page_knows_a_live_session_and_forgets_an_expired_one_or_a_switched_off_account(language, signin):
    ada = UserFactory(username="ada", role="teacher")
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(ada)
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert client.get("/lab/reservations/").status_code == 200
    Session.objects.filter(session_key=key).update(expire_date=timezone.now() - dt.timedelta(seconds=1))
    response = client.get("/lab/reservations/", follow=True)
    assert response.redirect_chain[0][0].startswith("/login/") and signin in response.content.decode()
    # A live session whose account was switched off meanwhile signs nobody in.
    client.force_login(ada)
    User.objects.filter(pk=ada.pk).update(is_active=False)
    assert client.get("/lab/reservations/").status_code == 302


def test_the_session_store_loads_only_a_live_sessions_data():
    store = SessionStore()
    store["seen"] = 1
    store.create()
    assert SessionStore(store.session_key).load() == {"seen": 1}
    Session.objects.filter(session_key=store.session_key).update(expire_date=timezone.now())
    late = SessionStore(store.session_key)
    assert late.load() == {} and late.session_key is None  # forgotten: the next save makes a new key


def test_a_shape_it_cannot_run_safely_is_refused_before_it_runs():
    with pytest.raises(TypeError, match="JSONField"):
        Prepared(lambda v: AuditEntry.objects.filter(before=v), v=AuditEntry._meta.get_field("before"))
    moment = timezone.now()
    # A value the build changes on its way into the query would run stale with the next call's values.
    day_before = Prepared(lambda at: AuditEntry.objects.filter(at__gte=at - dt.timedelta(days=1)), at=AT)
    with pytest.raises(ValueError, match="changes with its values but is none of them"):
        day_before.objects(moment)
    # One written into the SQL's text, or not used at all, cannot be given as a parameter.
    folded = Prepared(lambda a: AuditEntry.objects.extra(where=[f"action = '{a}'"]), a=ACTION)
    with pytest.raises(ValueError, match="folded into its SQL"):
        folded.objects("quota.change")
    unused = Prepared(lambda a: AuditEntry.objects.filter(action="quota.change"), a=ACTION)
    with pytest.raises(ValueError, match="a must be a parameter"):
        unused.objects("node.cordon")
    values = Prepared(lambda a: AuditEntry.objects.filter(action=a).values("pk"), a=ACTION)
    with pytest.raises(TypeError, match="model instances"):
        values.objects("quota.change")
    named = Prepared(lambda a: AuditEntry.objects.filter(action=a).values_list("pk", named=True), a=ACTION)
    with pytest.raises(TypeError, match="not named"):
        named.rows("quota.change")
    with pytest.raises(TypeError, match="1 values expected"):
        Prepared(lambda a: AuditEntry.objects.filter(action=a), a=ACTION).objects("x", "y")


def test_counts_deferred_columns_and_two_levels_of_related_rows_come_back_as_the_orms(django_assert_num_queries):
    from labs.models import HOLDING_STATUSES, Reservation, ReservationNode
    from labs.reservations.services import NodeRequest, reservation_create
    from tests.factories import CourseFactory, NodeFactory

    for n in range(1, 5):
        NodeFactory(name=f"gpu{n:02d}")
    ada, grace = UserFactory(username="ada", role="teacher"), UserFactory(username="grace", role="teacher")
    course = CourseFactory(code="ML-101")
    course.teachers.add(ada)
    start = timezone.now().replace(microsecond=0) + dt.timedelta(hours=2)
    for owner, names, hours, with_course in [(ada, ["gpu01"], 0, False), (ada, ["gpu02", "gpu03"], 3, True),
                                            (grace, ["gpu04"], 1, False)]:  # fmt: skip
        reservation_create(
            by=owner, title=f"{owner.username} {hours}", starts_at=start + dt.timedelta(hours=hours),
            ends_at=start + dt.timedelta(hours=hours + 1), nodes=NodeRequest(names=tuple(names)),
            course=course if with_course else None,
        )  # fmt: skip
    mine = Prepared(
        lambda owner, now: Reservation.objects.filter(owner=owner, ends_at__gt=now, status__in=HOLDING_STATUSES)
        .select_related("course").annotate(node_count=Count("nodes")).order_by("starts_at"),
        owner=Reservation._meta.get_field("owner"), now=Reservation._meta.get_field("ends_at"),
    )  # fmt: skip
    for user in (ada, grace):
        expected = list(
            Reservation.objects.filter(owner=user, ends_at__gt=timezone.now(), status__in=HOLDING_STATUSES)
            .select_related("course").annotate(node_count=Count("nodes")).order_by("starts_at")
        )  # fmt: skip
        with django_assert_num_queries(1):
            got = mine.objects(user.pk, timezone.now())
            assert [(r.title, r.node_count, r.course and r.course.code) for r in got] == [
                (r.title, r.node_count, r.course and r.course.code) for r in expected
            ]
    assert [r.node_count for r in mine.objects(ada.pk, timezone.now())] == [1, 2]
    rows = Prepared(
        lambda: (
            ReservationNode.objects.select_related("reservation__owner", "reservation__course")
            .only("starts_at", "reservation__title", "reservation__owner__username", "reservation__course__code")
            .order_by("starts_at", "node__name")
        )
    ).objects()
    with django_assert_num_queries(0):  # what only() and select_related() name is there, without a query
        seen = [(r.reservation.title, r.reservation.owner.username, r.reservation.course and r.reservation.course.code)
                for r in rows]  # fmt: skip
    assert seen == [("ada 0", "ada", None), ("grace 1", "grace", None), ("ada 3", "ada", "ML-101"),
                    ("ada 3", "ada", "ML-101")]  # fmt: skip
    with django_assert_num_queries(1):  # a deferred column is loaded when read, as the ORM's would be
        assert rows[0].reservation.ends_at == start + dt.timedelta(hours=1)


def test_a_values_list_gives_the_orms_tuples_through_rows_and_nothing_else():
    moment = timezone.now().replace(microsecond=0)
    for i, action in enumerate(["quota.change", "node.cordon", "quota.change"]):
        AuditEntry.objects.create(at=moment - dt.timedelta(minutes=i), action=action, target_type="user")
    pairs = Prepared(lambda at: AuditEntry.objects.filter(at__gte=at).values_list("action", "at"), at=AT)
    for start in (moment - dt.timedelta(hours=1), moment - dt.timedelta(minutes=1), moment + dt.timedelta(hours=1)):
        assert pairs.rows(start) == list(AuditEntry.objects.filter(at__gte=start).values_list("action", "at"))
    with pytest.raises(TypeError, match="objects\\(\\) is for queries of model instances"):
        pairs.objects(moment)
    with pytest.raises(TypeError, match="rows\\(\\) is for values"):
        Prepared(lambda at: AuditEntry.objects.filter(at__gte=at), at=AT).rows(moment)


def test_a_value_used_twice_dicts_single_values_and_sums_come_back_as_the_orms():
    moment = timezone.now().replace(microsecond=0)
    for i, (action, reason) in enumerate([("quota.change", ""), ("node.cordon", "quota.change"), ("quota.change", "x"),
                                          ("node.cordon", "")]):  # fmt: skip
        AuditEntry.objects.create(at=moment - dt.timedelta(minutes=i), action=action, reason=reason, target_type="u")
    REASON = AuditEntry._meta.get_field("reason")  # noqa: N806

    def either(a):
        return AuditEntry.objects.filter(Q(action=a) | Q(reason=a)).order_by("pk")

    twice = Prepared(either, a=ACTION)
    for action in ("quota.change", "node.cordon", "nothing"):
        assert [fields_of(o) for o in twice.objects(action)] == [fields_of(o) for o in either(action)]

    def per_action(since, reason):
        return (
            AuditEntry.objects.filter(at__gte=since)
            .exclude(reason=reason)
            .values("action")
            .annotate(n=Count("pk"), last=Max("at"))
            .order_by("action")
        )

    counted = Prepared(per_action, since=AT, reason=REASON)
    flat = Prepared(lambda since: AuditEntry.objects.filter(at__gte=since).values_list("pk", flat=True), since=AT)
    summed = Prepared(
        lambda since: AuditEntry.objects.filter(at__gte=since).values_list("action").annotate(n=Count("pk")),
        since=AT,
    )
    for since, reason in [(moment - dt.timedelta(hours=1), ""), (moment - dt.timedelta(minutes=2), "x"),
                          (moment + dt.timedelta(hours=1), "")]:  # fmt: skip
        assert counted.rows(since, reason) == list(per_action(since, reason))
        assert sorted(flat.rows(since)) == sorted(AuditEntry.objects.filter(at__gte=since).values_list("pk", flat=True))
        assert sorted(summed.rows(since)) == sorted(
            AuditEntry.objects.filter(at__gte=since).values_list("action").annotate(n=Count("pk"))
        )
    assert counted.rows(moment - dt.timedelta(hours=1), "") == [
        {"action": "node.cordon", "n": 1, "last": moment - dt.timedelta(minutes=1)},
        {"action": "quota.change", "n": 1, "last": moment - dt.timedelta(minutes=2)},
    ]  # the entries with a reason: "quota.change" one minute ago, "x" two
