"""GET /api/v1/usage/ and /api/v1/usage/efficiency/: per role, JSON and CSV agreeing, bad input refused."""

from __future__ import annotations

import csv
import datetime as dt
import io

import pytest
from rest_framework.test import APIClient

from accounts.services import token_issue
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def now(frozen_now, lab):
    return frozen_now(lab.now)


def client_of(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return client


def window(known, **more):
    return {"from": known["start"].isoformat(), "to": "2026-03-11", **more}


def csv_rows(response) -> list[dict]:
    body = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(body)))


def test_a_student_sees_only_themselves(now, lab, known):
    body = client_of(lab.alice).get("/api/v1/usage/", window(known)).json()
    assert [row["key"] for row in body["rows"]] == ["alice"]
    assert body["total_gpu_seconds"] == pytest.approx(known["alice"])
    assert body["until"] == lab.now.astimezone(dt.UTC).isoformat()


def test_a_teacher_sees_their_courses_and_an_admin_the_lab(now, lab, known):
    """The teacher sees what was booked to DL-101 (alice's 3 h in the window), never the notebooks alice and bob
    booked to no course; the admin sees everything."""
    teacher = client_of(lab.teacher).get("/api/v1/usage/", window(known)).json()
    assert {row["key"] for row in teacher["rows"]} == {"alice"}
    assert teacher["total_gpu_seconds"] == pytest.approx(3 * 3600)
    admin = client_of(UserFactory(username="boss", role="admin")).get("/api/v1/usage/", window(known)).json()
    assert admin["total_gpu_seconds"] == pytest.approx(known["alice"] + known["bob"] + known["carol"])
    by_course = client_of(lab.teacher).get("/api/v1/usage/", window(known, course="DL-101")).json()
    assert by_course["total_gpu_seconds"] == pytest.approx(3 * 3600)
    bobs = client_of(lab.teacher).get("/api/v1/usage/", window(known, user="bob"))
    assert bobs.status_code == 200 and bobs.json()["total_gpu_seconds"] == 0  # bob is in DL-101; his work is his


def test_a_person_is_named_whatever_the_case_typed(now, lab, known):
    teacher = client_of(lab.teacher)
    for typed in ("alice", "ALICE", "Alice"):
        body = teacher.get("/api/v1/usage/", window(known, user=typed)).json()
        assert body["total_gpu_seconds"] == pytest.approx(3 * 3600), typed  # what alice booked to DL-101
    # Still only among the people the teacher may see, whatever the case.
    assert teacher.get("/api/v1/usage/", window(known, user="CAROL")).status_code == 404


@pytest.mark.parametrize("group_by", ["user", "course", "node", "kind", "day", "week", "month", "term"])
def test_json_and_csv_totals_agree(now, lab, known, group_by):
    admin = client_of(UserFactory(username="boss", role="admin"))
    body = admin.get("/api/v1/usage/", window(known, group_by=group_by)).json()
    response = admin.get("/api/v1/usage/", window(known, group_by=group_by, format="csv"))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = csv_rows(response)
    assert list(rows[0]) == ["key", "gpu_hours", "gpu_seconds", "starts_at", "ends_at"]
    assert sum(float(row["gpu_seconds"]) for row in rows) == pytest.approx(body["total_gpu_seconds"], abs=0.01)
    assert body["total_gpu_seconds"] == pytest.approx(known["alice"] + known["bob"] + known["carol"], abs=1e-3)


def test_accept_text_csv_streams_every_entry(now, lab, known):
    response = client_of(lab.alice).get("/api/v1/usage/", window(known, group_by="entry"), HTTP_ACCEPT="text/csv")
    assert response.status_code == 200 and response.streaming
    rows = csv_rows(response)
    assert {row["user"] for row in rows} == {"alice"} and len(rows) == 2
    assert client_of(lab.alice).get("/api/v1/usage/", window(known, group_by="entry")).status_code == 400


@pytest.mark.parametrize(
    "params,field",
    [
        ({"from": "2026-03-10", "to": "2026-03-01"}, "to"),
        ({"from": "2020-01-01", "to": "2026-03-01"}, "to"),
        ({"group_by": "planet"}, "group_by"),
        ({"from": "yesterday"}, "from"),
        ({"from": "0001-01-01"}, "from"),
        ({"kind": "holiday"}, "kind"),
    ],
)
def test_bad_input_is_a_clear_400(now, lab, params, field):
    response = client_of(lab.alice).get("/api/v1/usage/", params)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "invalid" and field in body["fields"]


def test_what_one_may_not_see_is_refused_and_nothing_leaks(now, lab, known):
    student = client_of(lab.alice)
    refused = student.get("/api/v1/usage/", {"course": "DL-101"})
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
    for params in ({"user": "bob"}, {"user": "nobody-at-all"}):
        response = student.get("/api/v1/usage/", params)
        assert response.status_code == 404 and "bob" not in response.content.decode()
    teacher = client_of(lab.teacher)
    assert teacher.get("/api/v1/usage/", {"course": "CV-201"}).status_code == 404
    assert teacher.get("/api/v1/usage/", {"course": "NO-SUCH"}).status_code == 404
    assert teacher.get("/api/v1/usage/", {"user": "carol"}).status_code == 404
    assert teacher.get("/api/v1/usage/", {"user": "bob"}).status_code == 200
    csv_refused = student.get("/api/v1/usage/", {"course": "DL-101", "format": "csv"})
    assert csv_refused.status_code == 403 and csv_refused.json()["code"] == "permission_denied"


def test_efficiency_rows_by_role(now, lab, known):
    from labs.ledger import Ref
    from labs.usage.efficiency import efficiency_compute

    for allocation in __import__("labs.models", fromlist=["Allocation"]).Allocation.objects.exclude(kind="reservation"):
        efficiency_compute(ref=Ref.parse(allocation.ref), now=lab.now)
    mine = client_of(lab.alice).get("/api/v1/usage/efficiency/", window(known)).json()
    assert {row["user"] for row in mine} == {"alice"} and len(mine) == 2
    taught = client_of(lab.teacher).get("/api/v1/usage/efficiency/", window(known)).json()
    assert [(row["user"], row["course"]) for row in taught] == [("alice", "DL-101")]  # not the unbooked notebooks
    csv_body = client_of(lab.teacher).get("/api/v1/usage/efficiency/", window(known, format="csv"))
    assert len(csv_rows(csv_body)) == len(taught)
    assert client_of(lab.alice).get("/api/v1/usage/efficiency/", {"user": "carol"}).status_code == 404


def test_a_teaching_assistant_sees_the_students_and_not_another_assistant(now, lab, known):
    from tests.factories import EnrollmentFactory
    from tests.labs.usage.conftest import HOUR, entry

    tara, tom = UserFactory(username="tara"), UserFactory(username="tom")
    for assistant in (tara, tom):
        EnrollmentFactory(user=assistant, course=lab.course, role="assistant")
    entry(tom, lab.gpus[1], known["start"] + 2 * HOUR, known["start"] + 4 * HOUR)  # his own work, booked to no course
    entry(tom, lab.gpus[2], known["start"] + 4 * HOUR, known["start"] + 5 * HOUR, course=lab.course)  # to DL-101
    assistant = client_of(tara)
    response = assistant.get("/api/v1/usage/", window(known, user="tom"))
    assert response.status_code == 404 and "tom" not in response.content.decode()
    assert assistant.get("/api/v1/usage/", window(known, user="alice")).status_code == 200
    by_user = assistant.get("/api/v1/usage/", window(known, group_by="user")).json()
    assert {row["key"] for row in by_user["rows"]} == {"alice"}  # what the students booked to DL-101
    course = assistant.get("/api/v1/usage/", window(known, course="DL-101", group_by="user")).json()
    assert {row["key"] for row in course["rows"]} == {"alice"}
    assert course["total_gpu_seconds"] == pytest.approx(3 * 3600)
    teacher = client_of(lab.teacher).get("/api/v1/usage/", window(known, course="DL-101", group_by="user")).json()
    assert {row["key"] for row in teacher["rows"]} == {"alice", "tom"}
    # The teacher sees what the course's assistants book to it too; tom's own unbooked work is his.
    toms = client_of(lab.teacher).get("/api/v1/usage/", window(known, user="tom"))
    assert toms.status_code == 200 and toms.json()["total_gpu_seconds"] == pytest.approx(3600)


def test_efficiency_reads_only_the_window_and_whose(now, lab, known):
    from labs.ledger import Ref
    from labs.usage.efficiency import efficiency_compute

    efficiency_compute(ref=Ref.parse("notebook:2"), now=lab.now)  # alice's quarter-GPU notebook
    alice = client_of(lab.alice)
    plain = alice.get("/api/v1/usage/efficiency/", window(known)).json()
    assert [row["holder"] for row in plain] == ["notebook:2"]
    for ignored in ({"group_by": "entry"}, {"group_by": "planet"}, {"kind": "holiday"}):
        response = alice.get("/api/v1/usage/efficiency/", window(known, **ignored))
        assert response.status_code == 200 and response.json() == plain, ignored
    bad = alice.get("/api/v1/usage/efficiency/", {"from": "2026-03-10", "to": "2026-03-01"})
    assert bad.status_code == 400 and "to" in bad.json()["fields"]
