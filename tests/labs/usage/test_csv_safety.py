"""Every usage CSV is safe to open in a spreadsheet: text that would run as a formula (`=HYPERLINK(...)` in a title,
a username starting with `-`, `+` or `@`) comes with a `'` in front; numbers stay numbers (accounts.csvsafe)."""

from __future__ import annotations

import csv
import io

import pytest
from django.test import Client

from labs.models import Allocation, Node, Reservation
from tests.factories import PASSWORD, UserFactory
from tests.labs.usage.conftest import HOUR, entry

pytestmark = pytest.mark.django_db

FORMULA = '=HYPERLINK("http://x")'


@pytest.fixture
def now(frozen_now, lab):
    return frozen_now(lab.now)


@pytest.fixture
def hostile(lab, known):
    """A user named like a formula (usernames may start with - + @), a node and a ref that are formulas, and a
    reservation titled with one, all on DL-101 in the window of `known`."""
    sum_user = UserFactory(username="@SUM")
    lab.course.students.add(sum_user)
    minus = UserFactory(username="-2+3")
    lab.course.students.add(minus)
    Node.objects.filter(pk=lab.gpus[0].node_id).update(name=FORMULA)
    start = known["start"] + 30 * HOUR
    entry(sum_user, lab.gpus[0], start, start + HOUR, course=lab.course, ref=FORMULA)
    entry(minus, lab.gpus[1], start, start + 2 * HOUR, course=lab.course, kind="notebook")
    Reservation.objects.create(
        owner=lab.teacher,
        created_by=lab.teacher,
        course=lab.course,
        title=FORMULA,
        starts_at=start,
        ends_at=start + 2 * HOUR,
        status="approved",
    )
    return {"users": {"'@SUM", "'-2+3"}}


def rows_of(response) -> list[list[str]]:
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv"), response
    body = b"".join(response.streaming_content).decode() if response.streaming else response.content.decode()
    return list(csv.reader(io.StringIO(body)))


def cells(rows: list[list[str]]) -> set[str]:
    return {cell for row in rows[1:] for cell in row}


def runs_as_formula(cell: str) -> bool:
    return cell[:1] in ("=", "+", "-", "@", "\t", "\r")


def admin_client() -> Client:
    admin = UserFactory(username="boss", role="admin")
    client = Client()
    assert client.login(username=admin.username, password=PASSWORD)
    return client


WINDOW = {"from": "2026-03-09", "to": "2026-03-11"}


@pytest.mark.parametrize("copy", [True, False], ids=["PostgreSQL COPY", "rows written here"])
def test_the_entries_export_escapes_usernames_refs_and_nodes(now, lab, hostile, copy, monkeypatch):
    if not copy:
        monkeypatch.setattr("labs.usage.api.usage_entries_csv", lambda *args, **kwargs: None)
    rows = rows_of(admin_client().get("/api/v1/usage/", {**WINDOW, "group_by": "entry", "format": "csv"}))
    header = rows[0]
    by_user = {row[header.index("user")]: dict(zip(header, row, strict=True)) for row in rows[1:]}
    assert hostile["users"] <= set(by_user)
    assert by_user["'@SUM"]["ref"] == "'" + FORMULA and by_user["'@SUM"]["node"] == "'" + FORMULA
    assert by_user["'-2+3"]["kind"] == "notebook" and by_user["'-2+3"]["node"] == "gpu02"
    assert float(by_user["'-2+3"]["share"]) == 1.0
    assert not any(runs_as_formula(cell) for cell in cells(rows))
    assert Allocation.objects.filter(ref=FORMULA).exists()  # the ledger keeps what was written


@pytest.mark.parametrize("group_by", ["user", "node"])
def test_the_grouped_export_escapes_its_keys(now, lab, hostile, group_by):
    rows = rows_of(admin_client().get("/api/v1/usage/", {**WINDOW, "group_by": group_by, "format": "csv"}))
    keys = {row[0] for row in rows[1:]}
    assert (hostile["users"] <= keys) if group_by == "user" else ("'" + FORMULA in keys)
    assert not any(runs_as_formula(cell) for cell in cells(rows))


def test_the_efficiency_export_escapes_its_text(now, lab, hostile):
    from labs.ledger import Ref
    from labs.usage.efficiency import efficiency_compute

    for allocation in Allocation.objects.exclude(kind="reservation").exclude(ref=FORMULA):
        efficiency_compute(ref=Ref.parse(allocation.ref), now=lab.now)
    rows = rows_of(admin_client().get("/api/v1/usage/efficiency/", {**WINDOW, "format": "csv"}))
    assert "'-2+3" in cells(rows)
    assert not any(runs_as_formula(cell) for cell in cells(rows))


@pytest.mark.parametrize(
    "table,params",
    [
        ("course-reservations", {"course": "DL-101"}),
        ("course-students", {"course": "DL-101"}),
        ("lab-users", {}),
        ("lab-nodes", {}),
    ],
)
def test_the_usage_pages_downloads_escape_titles_and_names(now, lab, hostile, table, params):
    rows = rows_of(admin_client().get(f"/usage/csv/{table}/", {**WINDOW, **params}))
    found = cells(rows)
    if table == "course-reservations" or table == "lab-nodes":
        assert "'" + FORMULA in found
    else:
        assert hostile["users"] <= found
    assert not any(runs_as_formula(cell) for cell in found)
    # Numbers stay numbers: the GPU-hours read as floats.
    hours = rows[0].index("GPU-hours") if "GPU-hours" in rows[0] else rows[0].index("Used GPU-hours")
    assert all(float(row[hours]) >= 0 for row in rows[1:])
