"""The fair-share usage read of every scheduling pass and job submission: PostgreSQL sums the decayed GPU-seconds per
person in one query (jobs.selectors.decayed_usage_by_person), held here to the policy's own rule
(jobs.policy.priority.decayed_gpu_seconds); the SQLite file of the embedded run sums them in Python."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pytest
from django.db import connection

from jobs.policy.priority import decayed_usage
from jobs.selectors import decayed_usage_by_person
from labs.ledger import without_jit
from tests.factories import AllocationFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.django_db

WEEK = 7 * 24 * 3600.0
NOW = dt.datetime(2026, 11, 27, 23, 30, tzinfo=dt.UTC)


def ago(seconds: float) -> dt.datetime:
    return NOW - dt.timedelta(seconds=seconds)


def test_one_gpu_for_a_half_life_ending_a_half_life_ago_counts_a_quarter_of_its_span_over_ln2():
    gpu = NodeFactory().gpus.first()
    ada = UserFactory(username="ada")
    AllocationFactory(user=ada, gpu=gpu, starts_at=ago(2 * WEEK), ends_at=ago(WEEK))
    usage = decayed_usage_by_person(NOW, WEEK)
    # The integral of 2^-((now - t) / h) from 2h to h before now: h / ln 2 * (2^-1 - 2^-2).
    assert usage == {ada.pk: pytest.approx(WEEK / math.log(2) * 0.25, rel=1e-12)}


def test_the_sum_per_person_is_the_policys_rule_over_every_entry(django_assert_num_queries):
    gpus = [node.gpus.first() for node in NodeFactory.create_batch(3)]
    ada, bob, cy, dee = (UserFactory(username=name) for name in ("ada", "bob", "cy", "dee"))
    entries = [
        # (who, kind, share, started s ago, ended s ago or None while held)
        (ada, "job", "1", 3 * 3600, 3600),
        (ada, "job", "1", 2 * WEEK, WEEK),
        (ada, "notebook", "0.250", 40 * 60, None),  # open: counts up to now
        (bob, "job", "1", 9 * WEEK, 8.5 * WEEK),  # ended before the eight half-lives: left out
        (bob, "job", "1", 8.5 * WEEK, 7.5 * WEEK),  # ended inside them: all of it counts
        (bob, "notebook", "0.100", 26 * 3600, 25 * 3600),
        (cy, "reservation", "1", 5 * 3600, 3600),  # a reservation is not use
        (dee, "job", "1", 600, 600),  # no length
    ]
    for n, (who, kind, share, started, ended) in enumerate(entries):
        AllocationFactory(
            user=who,
            kind=kind,
            share=Decimal(share),
            gpu=gpus[n % len(gpus)],
            starts_at=ago(started),
            ends_at=None if ended is None else ago(ended),
        )
    # One query: the connection was opened with JIT off, so nothing sets it per transaction (no savepoint, no SET).
    with django_assert_num_queries(1) as queries:
        usage = decayed_usage_by_person(NOW, WEEK)
    assert "labs_allocation" in queries.captured_queries[0]["sql"]
    since = NOW.timestamp() - 8 * WEEK
    rule = decayed_usage(
        (
            (who.pk, NOW.timestamp() - started, None if ended is None else NOW.timestamp() - ended, float(share))
            for who, kind, share, started, ended in entries
            if kind != "reservation" and (ended is None or NOW.timestamp() - ended > since)
        ),
        now=NOW.timestamp(),
        half_life_s=WEEK,
    )
    assert sorted(usage) == sorted(rule) == sorted([ada.pk, bob.pk])
    for person, value in rule.items():
        assert usage[person] == pytest.approx(value, rel=1e-9)
    # The open notebook: a quarter of a GPU for 40 minutes, barely decayed.
    assert usage[ada.pk] > 0.25 * 40 * 60 * 0.999


@pytest.mark.skipif(connection.vendor != "postgresql", reason="JIT is PostgreSQL's")
def test_the_portals_connections_run_without_jit_and_a_connection_opened_with_it_gets_it_off_per_transaction(
    monkeypatch, django_assert_num_queries
):
    def jit() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SHOW jit")
            return cursor.fetchone()[0]

    assert jit() == "off"
    # A deployment whose DATABASES options leave JIT on: the reports and the fair-share read turn it off themselves.
    monkeypatch.setitem(connection.settings_dict["OPTIONS"], "options", "")
    with connection.cursor() as cursor:
        cursor.execute("SET jit = on")
    with django_assert_num_queries(4) as queries, without_jit():  # a savepoint, SET LOCAL, SHOW, its release
        inside = jit()
    assert inside == "off" and any("SET LOCAL jit = off" in q["sql"] for q in queries.captured_queries)
