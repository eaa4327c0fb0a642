"""check_ledger names each broken invariant of the ledger and exits non-zero; the reconciler's ledger steps close
entries whose holder is gone at the last known time and alert the admins of a GPU held twice, changing no row."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.utils import timezone

from accounts.models import Notice
from labs.ledger import GpuShare, Ref, allocation_open
from labs.ledger_check import DAY_SUMS, FINISHED_OPEN, NO_HOLDER, OVER_SHARE, ledger_violations
from labs.models import (
    Allocation,
    NotebookProfile,
    NotebookSession,
    NotebookStatus,
    Reservation,
    ReservationStatus,
)
from labs.reconcile import reconcile
from tests.factories import NodeFactory, UserFactory

pytestmark = pytest.mark.django_db
HOUR = dt.timedelta(hours=1)


@pytest.fixture(autouse=True)
def _no_backends(settings, tmp_path):
    """No job runs here and the hub does not answer: the backend steps find nothing or are skipped."""
    settings.JOBS_BACKEND = "local"
    settings.JOBS_LOCAL_DIR = tmp_path / "jobs"
    settings.NOTEBOOKS_HUB_API_URL = "http://127.0.0.1:9/hub/api"


@pytest.fixture
def now():
    return timezone.now().replace(microsecond=0)


@pytest.fixture
def gpu():
    return NodeFactory(name="gpu01").gpus.get()


@pytest.fixture
def ada():
    return UserFactory(username="ada", role="student")


def session(user, status, **fields) -> NotebookSession:
    profile, _ = NotebookProfile.objects.get_or_create(
        slug="quarter", defaults={"name": "Quarter", "image": "quay.io/jupyter/base-notebook:latest"}
    )
    return NotebookSession.objects.create(user=user, profile=profile, hub_user=user.username, status=status, **fields)


def reservation(owner, *, starts_at, ends_at, status=ReservationStatus.ACTIVE) -> Reservation:
    return Reservation.objects.create(
        owner=owner, created_by=owner, title="DL-101 lab", starts_at=starts_at, ends_at=ends_at, status=status
    )


def run_check(*args) -> tuple[int, str]:
    """check_ledger as an admin runs it: its exit status and what it printed."""
    from io import StringIO

    out = StringIO()
    try:
        call_command("check_ledger", *args, stdout=out)
    except SystemExit as exit_:
        return int(exit_.code), out.getvalue()
    return 0, out.getvalue()


def test_a_sound_ledger_passes(gpu, ada, now):
    live = session(ada, NotebookStatus.READY)
    allocation_open(ref=Ref.notebook(live.pk), user_id=ada.pk, shares=[GpuShare(gpu.pk, Decimal("0.5"))], at=now)
    other = session(UserFactory(username="bob"), NotebookStatus.READY)
    allocation_open(
        ref=Ref.notebook(other.pk), user_id=other.user_id, shares=[GpuShare(gpu.pk, Decimal("0.5"))], at=now
    )
    teacher = UserFactory(username="tess", role="teacher")
    booked = reservation(teacher, starts_at=now - HOUR, ends_at=now + HOUR)
    allocation_open(ref=Ref.reservation(booked.pk), user_id=teacher.pk, shares=[GpuShare(gpu.pk)], at=now - HOUR)

    assert ledger_violations() == []
    code, out = run_check()
    assert code == 0
    assert "0 violations." in out and "FAIL" not in out


def test_a_gpu_held_one_and_a_half_times_fails_with_a_sentence(gpu, ada, now):
    first = session(ada, NotebookStatus.STOPPED, stopped_at=now - HOUR)
    allocation_open(ref=Ref.notebook(first.pk), user_id=ada.pk, shares=[GpuShare(gpu.pk)], at=now - 3 * HOUR)
    Allocation.objects.filter(ref=first.ref).update(ends_at=now - HOUR)  # the test writes history directly
    second = session(ada, NotebookStatus.STOPPED, stopped_at=now)
    allocation_open(
        ref=Ref.notebook(second.pk), user_id=ada.pk, shares=[GpuShare(gpu.pk, Decimal("0.5"))], at=now - 2 * HOUR
    )
    Allocation.objects.filter(ref=second.ref).update(
        starts_at=now - 2 * HOUR, ends_at=now
    )  # an overlap only history can hold now

    (violation,) = ledger_violations()
    assert violation.code == OVER_SHARE and violation.gpu == "gpu01/0" and violation.share == Decimal("1.5")
    assert violation.at == now - 2 * HOUR and violation.until == now - HOUR
    code, out = run_check()
    assert code == 1
    assert "FAIL gpu_over_share" in out
    assert "GPU gpu01/0 was held 1.5 times over by notebooks and jobs from" in out
    assert f"{first.ref} (1)" in out and f"{second.ref} (0.5)" in out
    # An entry that ends when the next begins does not overlap it.
    Allocation.objects.filter(ref=second.ref).update(starts_at=now - HOUR)
    assert ledger_violations() == []


def test_an_open_entry_without_a_live_holder_and_a_finished_holder_left_open(gpu, ada, now):
    queued = session(ada, NotebookStatus.QUEUED)
    allocation_open(ref=Ref.notebook(queued.pk), user_id=ada.pk, shares=[GpuShare(gpu.pk, Decimal("0.25"))], at=now)
    allocation_open(ref=Ref.notebook(9999), user_id=ada.pk, shares=[GpuShare(gpu.pk, Decimal("0.25"))], at=now)
    ended = session(ada, NotebookStatus.STOPPED, stopped_at=now - HOUR)
    allocation_open(
        ref=Ref.notebook(ended.pk), user_id=ada.pk, shares=[GpuShare(gpu.pk, Decimal("0.25"))], at=now - 2 * HOUR
    )
    teacher = UserFactory(username="tess", role="teacher")
    past = reservation(teacher, starts_at=now - 3 * HOUR, ends_at=now - 2 * HOUR)  # the tick has not ended it yet
    allocation_open(ref=Ref.reservation(past.pk), user_id=teacher.pk, shares=[GpuShare(gpu.pk)], at=now - 3 * HOUR)

    found = {(v.code, v.ref) for v in ledger_violations()}
    assert found == {
        (NO_HOLDER, queued.ref),
        (NO_HOLDER, "notebook:9999"),
        (FINISHED_OPEN, ended.ref),
        (FINISHED_OPEN, past.ref),
    }
    code, out = run_check("--json")
    assert code == 1
    result = json.loads(out)
    assert result["ok"] is False and set(result["invariants"]) == {OVER_SHARE, NO_HOLDER, FINISHED_OPEN, DAY_SUMS}
    sentences = {v["ref"]: v["sentence"] for v in result["violations"]}
    assert sentences["notebook:9999"] == "notebook:9999 has 1 open ledger entry but no live holder: no such holder."
    assert sentences[ended.ref].startswith(f"notebook {ended.pk} of ada (stopped) ended at ")
    assert "still has 1 open ledger entry" in sentences[ended.ref]


def test_the_reconciler_closes_orphans_at_the_last_known_time_once(gpu, ada, now):
    ended = session(ada, NotebookStatus.STOPPED, stopped_at=now - HOUR)
    allocation_open(
        ref=Ref.notebook(ended.pk), user_id=ada.pk, shares=[GpuShare(gpu.pk, Decimal("0.25"))], at=now - 2 * HOUR
    )
    allocation_open(ref=Ref.notebook(9999), user_id=ada.pk, shares=[GpuShare(gpu.pk, Decimal("0.25"))], at=now - HOUR)
    teacher = UserFactory(username="tess", role="teacher")
    past = reservation(teacher, starts_at=now - 3 * HOUR, ends_at=now - 2 * HOUR)
    allocation_open(ref=Ref.reservation(past.pk), user_id=teacher.pk, shares=[GpuShare(gpu.pk)], at=now - 3 * HOUR)

    dry = reconcile(now=now, dry_run=True)
    assert {(a.kind, a.target, a.done) for a in dry.actions} == {
        ("orphan_entry", ended.ref, False),
        ("orphan_entry", "notebook:9999", False),
        ("orphan_entry", past.ref, False),
    }
    assert Allocation.objects.filter(ends_at__isnull=True).count() == 3  # the dry run changed nothing

    report = reconcile(now=now)
    assert {(a.kind, a.target) for a in report.actions} == {
        ("orphan_entry", ended.ref),
        ("orphan_entry", "notebook:9999"),
        ("orphan_entry", past.ref),
    }
    assert Allocation.objects.get(ref=ended.ref).ends_at == now - HOUR  # when the session stopped
    assert Allocation.objects.get(ref=past.ref).ends_at == now - 2 * HOUR  # when the window ended
    assert Allocation.objects.get(ref="notebook:9999").ends_at == now  # nothing says: now
    assert reconcile(now=now).actions == []  # twice: nothing more to do
    assert ledger_violations() == []


def test_a_gpu_over_share_alerts_the_admins_once_and_changes_nothing(gpu, ada, now):
    admin = UserFactory(username="root", role="admin")
    for user in (ada, UserFactory(username="bob")):
        live = session(user, NotebookStatus.READY)
        allocation_open(ref=Ref.notebook(live.pk), user_id=user.pk, shares=[GpuShare(gpu.pk, Decimal("0.75"))], at=now)
    rows = list(Allocation.objects.values_list("id", "ends_at"))

    assert [a.kind for a in reconcile(now=now, dry_run=True).actions] == ["gpu_over_share"]
    assert not Notice.objects.exists()
    report = reconcile(now=now)
    assert [a.kind for a in report.actions] == ["gpu_over_share"]
    (notice,) = Notice.objects.filter(user=admin)
    assert notice.text.startswith("Ledger check: GPU gpu01/0 was held 1.5 times over") and notice.level == "warning"
    assert not Notice.objects.exclude(user=admin).exists()
    assert reconcile(now=now).actions == []  # told once
    assert list(Allocation.objects.values_list("id", "ends_at")) == rows  # no row deleted or closed
    assert run_check()[0] == 1


def test_two_passes_at_once_run_one(now):
    from django.core.cache import cache

    from labs.reconcile import LOCK

    cache.add(LOCK, 1, timeout=60)
    try:
        assert reconcile(now=now).skipped == "another reconcile pass is running"
    finally:
        cache.delete(LOCK)


def test_the_commands_and_the_embedded_beat_run_the_reconciler(gpu, ada, now, capsys):
    from io import StringIO

    allocation_open(ref=Ref.notebook(9999), user_id=ada.pk, shares=[GpuShare(gpu.pk, Decimal("0.25"))], at=now)
    out = StringIO()
    call_command("reconcile", "--dry-run", stdout=out)
    assert "would: orphan_entry: closed 1 ledger entries of notebook:9999" in out.getvalue()
    assert "dry run: orphan_entry 1" in out.getvalue()
    assert Allocation.objects.filter(ends_at__isnull=True).count() == 1

    call_command("run_periodic", "--once")  # the embedded setup's beat: the same task as Celery beat's
    assert "reconcile: orphan_entry 1" in capsys.readouterr().out
    assert not Allocation.objects.filter(ends_at__isnull=True).exists()
    assert run_check()[0] == 0
