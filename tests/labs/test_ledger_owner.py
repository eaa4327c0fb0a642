"""One owner of the ledger: only labs/ledger.py creates, updates or deletes Allocation rows.

Read from the source, so a new writer anywhere in the product fails here before it can drift from the rules
(closing at the holder's end, never touching closed rows, discarding only what never ran)."""

from __future__ import annotations

import ast
import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest
from django.utils import timezone

from labs.ledger import (
    GpuShare,
    Ref,
    allocation_open,
    allocations_close,
    allocations_discard,
    is_entered,
    refs_of,
    week_gpu_hours,
    week_gpu_hours_by_user,
    week_start,
)
from labs.models import Allocation
from tests.factories import NodeFactory, UserFactory

ROOT = Path(__file__).resolve().parents[2]
OWNER = ROOT / "labs" / "ledger.py"
WRITES = {"create", "bulk_create", "update", "delete", "get_or_create", "update_or_create", "bulk_update", "save"}


def _mentions_allocation(node: ast.AST) -> bool:
    """Whether an expression chain (`Allocation.objects.filter(...)`, `user.allocations.exclude(...)`, ...) starts at
    the Allocation model or a relation to it."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            if node.attr == "allocations":
                return True
            node = node.value
        elif isinstance(node, ast.Name):
            return node.id == "Allocation"
        else:
            return False


def ledger_writes(source: str) -> list[int]:
    """Line numbers of writes to Allocation rows in the module's source."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITES:
            if _mentions_allocation(node.func.value):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Allocation":
            lines.append(node.lineno)  # Allocation(...): a row about to be saved
    return sorted(lines)


def product_modules() -> list[Path]:
    found = []
    for package in ("portal", "labs", "jobs"):
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts and path != OWNER:
                found.append(path)
    return found


def test_only_the_ledger_module_writes_allocation_rows():
    offenders = {
        str(path.relative_to(ROOT)): lines
        for path in product_modules()
        if (lines := ledger_writes(path.read_text(encoding="utf-8")))
    }
    assert not offenders, f"write to the ledger through labs/ledger.py, not here: {offenders}"


def test_the_check_sees_every_shape_of_write():
    source = """
Allocation.objects.filter(ref=r, ends_at__isnull=True).update(ends_at=now)
Allocation.objects.bulk_create(Allocation(user=u) for g in gpus)
user.allocations.filter(kind="job").delete()
Allocation.objects.filter(
    pk__in=ids
).update(ends_at=now)
Allocation.objects.filter(ref=r).count()
rows = Allocation.objects.filter(ref=r)
"""
    assert ledger_writes(source) == [2, 3, 3, 4, 5]
    assert ledger_writes((ROOT / "labs" / "placement.py").read_text()) == []
    assert ledger_writes(OWNER.read_text()) != []  # the owner itself is what the check would catch elsewhere


@pytest.mark.django_db
def test_open_close_and_discard_keep_history_and_run_twice_safely():
    at = week_start(timezone.now()) + dt.timedelta(days=1, hours=10)  # a Tuesday 10:00, whatever today is
    gpus = list(NodeFactory(name="gpu01").gpus.values_list("id", flat=True)) + list(
        NodeFactory(name="gpu02").gpus.values_list("id", flat=True)
    )
    ada, sam = UserFactory(username="ada"), UserFactory(username="sam")
    job = Ref.job(7, 2)
    notebook = Ref.notebook(3)
    rows = allocation_open(ref=job, user_id=ada.pk, shares=[GpuShare(g) for g in gpus], at=at, reason="x" * 300)
    allocation_open(ref=notebook, user_id=sam.pk, shares=[GpuShare(gpus[0], Decimal("0.25"))], at=at)
    assert len(rows) == 2 and is_entered(job) and refs_of([r.pk for r in rows], kind="job") == {job}
    assert {r.reason for r in rows} == {"x" * 200}

    assert allocations_close(ref=job, at=at + dt.timedelta(hours=1), reason="job succeeded") == 2
    assert allocations_close(ref=job, at=at + dt.timedelta(hours=2)) == 0  # closed rows stay as they were
    assert set(Allocation.objects.filter(ref=job.key).values_list("ends_at", flat=True)) == {at + dt.timedelta(hours=1)}
    assert allocations_discard(ref=job) == 0  # history is never discarded
    # Two whole GPUs for an hour, and a quarter GPU still open two hours on: read for both in one query.
    assert week_gpu_hours_by_user([ada.pk, sam.pk], now=at + dt.timedelta(hours=2)) == {
        ada.pk: Decimal("2.00"),
        sam.pk: Decimal("0.50"),
    }
    # One person's week alone (every job submission's quota check) reads the same, by its compiled query.
    assert week_gpu_hours(ada, now=at + dt.timedelta(hours=2)) == Decimal("2.00")
    assert week_gpu_hours(sam, now=at + dt.timedelta(hours=2)) == Decimal("0.50")
    assert week_gpu_hours(sam, now=at + dt.timedelta(hours=1)) == Decimal("0.25")

    assert allocations_discard(ref=notebook) == 1 and not is_entered(notebook)
    with pytest.raises(ValueError):
        allocations_close(at=at)  # neither a holder nor rows: refuse rather than close everything
    with pytest.raises(ValueError):
        Ref("job", "notebook:1")
