"""/api/v1/reservations/ and /api/v1/availability/ as scripts see them, for every role."""

import datetime as dt
import threading

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import Quota
from accounts.services import token_issue
from labs.models import Reservation, ReservationNode
from tests.factories import CourseFactory, NodeFactory, UserFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/reservations/"


def local(day_offset: int, hour: int) -> str:
    day = timezone.localdate() + dt.timedelta(days=day_offset)
    return dt.datetime.combine(day, dt.time(hour)).isoformat()  # naive: read in the lab's time zone


@pytest.fixture
def lab():
    return [NodeFactory(name=f"gpu{n:02d}") for n in range(1, 9)]


def client_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return client


@pytest.fixture
def ada():
    return UserFactory(username="ada", role="teacher")


def body(**overrides):
    return {"title": "DL-101 lab", "starts_at": local(1, 14), "ends_at": local(1, 16), "node_count": 4, **overrides}


def test_teacher_reserves_and_gets_the_contracts_answer(lab, ada):
    course = CourseFactory(code="DL-101")
    course.teachers.add(ada)
    response = client_for(ada).post(URL, body(course="DL-101"), format="json")
    assert response.status_code == 201, response.json()
    data = response.json()
    assert data["status"] == "approved" and data["owner"] == "ada" and data["course"] == "DL-101"
    assert data["nodes"] == ["gpu01", "gpu02", "gpu03", "gpu04"]
    starts = dt.datetime.fromisoformat(data["starts_at"])
    assert starts.utcoffset() is not None  # ISO 8601 with an offset
    assert timezone.localtime(starts).hour == 14
    assert data["occurrences"] == [data["id"]]


def test_an_admin_books_for_a_teacher_named_whatever_the_case_typed(lab, ada):
    admin = UserFactory(username="root", role="admin")
    response = client_for(admin).post(URL, body(owner="ADA"), format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["owner"] == "ada" and Reservation.objects.get().owner == ada
    unknown = client_for(admin).post(URL, body(owner="nobody"), format="json")
    assert unknown.status_code == 400 and "No user nobody." in unknown.json()["fields"]["owner"]


def test_students_get_403_and_anonymous_401_and_nothing_is_written(lab):
    response = client_for(UserFactory(username="sam")).post(URL, body(), format="json")
    assert response.status_code == 403 and response.json()["code"] == "permission_denied"
    assert APIClient().post(URL, body(), format="json").status_code == 401
    assert not Reservation.objects.exists()


def test_a_collision_answers_409_with_conflicts_and_the_earliest_fit(lab, ada):
    client_for(ada).post(URL, body(nodes=["gpu01", "gpu02"], node_count=None), format="json")
    grace = UserFactory(username="grace", role="teacher")
    response = client_for(grace).post(
        URL,
        body(nodes=["gpu02", "gpu03"], node_count=None, starts_at=local(1, 15), ends_at=local(1, 17)),
        format="json",
    )
    assert response.status_code == 409
    data = response.json()
    assert data["code"] == "conflict" and "already booked" in data["detail"]
    assert data["conflicts"] == [
        {
            "node": "gpu02",
            "starts_at": timezone.localtime(timezone.make_aware(dt.datetime.fromisoformat(local(1, 14)))).isoformat(),
            "ends_at": timezone.localtime(timezone.make_aware(dt.datetime.fromisoformat(local(1, 16)))).isoformat(),
        }
    ]
    assert timezone.localtime(dt.datetime.fromisoformat(data["earliest_fit"]["starts_at"])).hour == 16
    assert Reservation.objects.count() == 1


@pytest.mark.parametrize(
    "overrides,field",
    [
        ({"title": ""}, "title"),
        ({"starts_at": "tomorrow at two"}, "starts_at"),
        ({"node_count": "four"}, "node_count"),
        ({"nodes": ["gpu01"]}, "nodes"),  # both nodes and node_count
        ({"node_count": None}, "nodes"),  # neither
        ({"node_count": 0}, "node_count"),
        ({"nodes": "gpu01", "node_count": None}, "nodes"),
        ({"ends_at": local(1, 13)}, "ends_at"),
        ({"starts_at": local(-1, 14), "ends_at": local(-1, 16)}, "starts_at"),
        ({"starts_at": local(400, 14), "ends_at": local(400, 16)}, "ends_at"),
        ({"nodes": ["gpu01", "gpu99"], "node_count": None}, "nodes"),
        ({"node_count": 9}, "node_count"),
        ({"course": "NOPE-1"}, "course"),
        ({"title": "x" * 121}, "title"),
        ({"repeat_weekly_until": "someday"}, "repeat_weekly_until"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_nothing_is_written(lab, ada, overrides, field):
    response = client_for(ada).post(URL, body(**overrides), format="json")
    assert response.status_code == 400, response.json()
    data = response.json()
    assert data["code"] == "invalid" and field in data["fields"], data
    assert not Reservation.objects.exists() and not ReservationNode.objects.exists()


def test_malformed_json_and_wrong_types_of_body_are_400(lab, ada):
    client = client_for(ada)
    response = client.post(URL, "{not json", content_type="application/json")
    assert response.status_code == 400 and response.json()["code"] == "parse_error"
    response = client.post(URL, ["a", "list"], format="json")
    assert response.status_code == 400


def test_over_the_quota_is_403_quota_exceeded_with_the_limit(lab, ada):
    Quota.objects.create(user=ada, reservation_max_nodes=2)
    response = client_for(ada).post(URL, body(node_count=3), format="json")
    assert response.status_code == 403
    assert response.json() == {
        "detail": "You may reserve at most 2 nodes at once; you asked for 3.",
        "code": "quota_exceeded",
        "limit": "reservation_max_nodes",
        "used": 3,
        "allowed": 2,
        "help": "/help/#limit-reservation_max_nodes",
    }


def test_big_requests_wait_for_an_admin_who_approves_through_the_api(lab, ada):
    Quota.objects.create(user=ada, reservation_approval_nodes=4)
    created = client_for(ada).post(URL, body(node_count=6), format="json").json()
    assert created["status"] == "pending"
    assert client_for(ada).post(f"{URL}{created['id']}/approve/", {}, format="json").status_code == 403
    admin = UserFactory(username="root", role="admin")
    response = client_for(admin).post(f"{URL}{created['id']}/approve/", {}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "approved"
    again = client_for(admin).post(f"{URL}{created['id']}/reject/", {"reason": "too late"}, format="json")
    assert again.status_code == 409


def test_list_detail_and_cancel_follow_who_owns_what(lab, ada):
    grace = UserFactory(username="grace", role="teacher")
    admin = UserFactory(username="root", role="admin")
    mine = client_for(ada).post(URL, body(node_count=2), format="json").json()

    listed = client_for(grace).get(URL, {"from": local(1, 0), "to": local(2, 0)}).json()
    assert [r["id"] for r in listed] == [mine["id"]]  # colleagues see the lab's bookings
    assert client_for(grace).get(URL, {"from": local(3, 0)}).json() == []
    bad = client_for(grace).get(URL, {"from": "yesterday"})
    assert bad.status_code == 400 and "from" in bad.json()["fields"]
    assert client_for(grace).get(URL, {"from": local(2, 0), "to": local(1, 0)}).status_code == 400

    detail = f"{URL}{mine['id']}/"
    assert client_for(ada).get(detail).status_code == 200
    assert client_for(admin).get(detail).status_code == 200
    assert client_for(grace).get(detail).status_code == 403
    refused = client_for(grace).delete(detail)
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
    assert Reservation.objects.get().status == "approved"

    cancelled = client_for(ada).delete(detail)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert client_for(ada).delete(detail).status_code == 409
    assert client_for(ada).delete(f"{URL}999999/").status_code == 404


def test_availability_lists_free_nodes_and_refuses_bad_windows(lab, ada):
    client_for(ada).post(URL, body(nodes=["gpu01", "gpu02"], node_count=None), format="json")
    student = client_for(UserFactory(username="sam"))
    response = student.get("/api/v1/availability/", {"starts_at": local(1, 15), "ends_at": local(1, 18)})
    assert response.status_code == 200
    data = response.json()
    assert data["free_nodes"] == [f"gpu{n:02d}" for n in range(3, 9)] and data["free_count"] == 6
    assert data["ready_count"] == 8
    later = student.get("/api/v1/availability/", {"starts_at": local(1, 16), "ends_at": local(1, 18)}).json()
    assert later["free_count"] == 8
    for params in (
        {},
        {"starts_at": local(1, 16)},
        {"starts_at": local(1, 16), "ends_at": local(1, 15)},
        {"starts_at": "garbage", "ends_at": local(1, 15)},
        {"starts_at": local(1, 16), "ends_at": local(90, 15)},
    ):
        response = student.get("/api/v1/availability/", params)
        assert response.status_code == 400 and response.json()["code"] == "invalid", params


def test_availability_leaves_out_nodes_in_maintenance_and_bookings_each_for_its_own_window(lab, ada):
    from labs.maintenance.services import maintenance_create

    def at(day, hour):
        return timezone.make_aware(dt.datetime.fromisoformat(local(day, hour)))

    client_for(ada).post(URL, body(nodes=["gpu01"], node_count=None), format="json")  # tomorrow 14:00-16:00
    admin = UserFactory(username="root", role="admin")
    maintenance_create(by=admin, starts_at=at(1, 15), ends_at=at(1, 17), reason="Fans", nodes=["gpu02", "gpu03"])
    maintenance_create(by=admin, starts_at=at(2, 8), ends_at=at(2, 12), reason="Power", all_nodes=True)
    student = client_for(UserFactory(username="sam"))

    def free(day, start, end):
        got = student.get("/api/v1/availability/", {"starts_at": local(day, start), "ends_at": local(day, end)})
        assert got.status_code == 200
        return got.json()["free_nodes"]

    everything = [f"gpu{n:02d}" for n in range(1, 9)]
    assert free(1, 14, 15) == everything[1:]  # the booking only
    assert free(1, 15, 16) == everything[3:]  # the booking and the two nodes' maintenance
    assert free(1, 16, 18) == [everything[0], *everything[3:]]  # the maintenance only
    assert free(1, 18, 20) == everything
    assert free(2, 11, 13) == [] and free(2, 12, 13) == everything  # the whole lab's window, then none


def test_a_booking_made_between_the_lists_two_reads_waits_for_the_next_list(lab, ada, monkeypatch):
    # The list reads the bookings, then their nodes' names: each its own snapshot. A booking committed in between
    # is not in the first read; the second must not trip over its nodes (a 500), only leave them for the next list.
    from labs.reservations import selectors

    client_for(ada).post(URL, body(nodes=["gpu01"], node_count=None), format="json")
    names = selectors._LISTED_NODE_NAMES

    class BookedMeanwhile:
        def rows(self, *values):
            client_for(ada).post(URL, body(nodes=["gpu02"], node_count=None, starts_at=local(1, 17),
                                           ends_at=local(1, 18)), format="json")  # fmt: skip
            return names.rows(*values)

    monkeypatch.setattr(selectors, "_LISTED_NODE_NAMES", BookedMeanwhile())
    reader = client_for(UserFactory(username="grace", role="teacher"))
    response = reader.get(URL, {"from": local(1, 0), "to": local(3, 0)})
    assert response.status_code == 200 and [r["nodes"] for r in response.json()] == [["gpu01"]]
    monkeypatch.undo()
    assert [r["nodes"] for r in reader.get(URL, {"from": local(1, 0), "to": local(3, 0)}).json()] == [
        ["gpu01"],
        ["gpu02"],
    ]


def test_nodes_show_the_current_and_next_reservation_as_far_as_the_caller_may_know(lab, ada):
    client_for(ada).post(URL, body(nodes=["gpu01"], node_count=None), format="json")
    student = client_for(UserFactory(username="sam")).get("/api/v1/nodes/").json()
    teacher = client_for(UserFactory(username="grace", role="teacher")).get("/api/v1/nodes/").json()
    assert student[0]["reservation"] is None
    assert student[0]["next_reservation"]["title"] == "Reserved" and student[0]["next_reservation"]["owner"] is None
    assert teacher[0]["next_reservation"]["title"] == "DL-101 lab" and teacher[0]["next_reservation"]["owner"] == "ada"
    assert student[1]["next_reservation"] is None


@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_api_requests_make_exactly_one_reservation(lab):
    clients = [client_for(UserFactory(username=f"t{n:02d}", role="teacher")) for n in range(50)]
    barrier = threading.Barrier(50)
    answers: list = [None] * 50

    def press(n: int) -> None:
        try:
            barrier.wait()
            answers[n] = clients[n].post(
                URL, body(node_count=None, nodes=["gpu01", "gpu02", "gpu03", "gpu04"]), format="json"
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=press, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    codes = sorted(answer.status_code for answer in answers)
    assert codes == [201] + [409] * 49
    assert Reservation.objects.count() == 1
    for answer in answers:
        if answer.status_code == 409:
            data = answer.json()
            assert data["code"] == "conflict" and len(data["conflicts"]) == 4
            assert data["earliest_fit"]["nodes"] == ["gpu01", "gpu02", "gpu03", "gpu04"]


def test_the_list_names_each_bookings_nodes_in_the_same_few_queries_however_many(
    lab, ada, django_assert_max_num_queries
):
    # Every teacher's browsing asks for the list: its reads must not grow with the bookings (a manager per row).
    grace = UserFactory(username="grace", role="teacher")
    admin = UserFactory(username="root", role="admin")
    first = client_for(ada).post(URL, body(nodes=["gpu03", "gpu01"], node_count=None), format="json").json()
    window = {"from": local(1, 0), "to": local(3, 0)}
    reader = client_for(grace)
    with django_assert_max_num_queries(4) as few:  # token, bookings, their nodes
        assert reader.get(URL, window).json()[0]["nodes"] == ["gpu01", "gpu03"]
    queries = len(few)  # now: the bookings' requests below reset the query log
    for hour in range(8, 20):
        made = client_for(ada).post(
            URL, body(starts_at=local(2, hour), ends_at=local(2, hour + 1), node_count=hour % 3 + 1), format="json"
        )
        assert made.status_code == 201, made.json()
    with django_assert_max_num_queries(queries):
        listed = reader.get(URL, window).json()
    assert [r["id"] for r in listed][0] == first["id"] and len(listed) == 13
    assert [len(r["nodes"]) for r in listed[1:]] == [hour % 3 + 1 for hour in range(8, 20)]
    assert all(r["nodes"] == sorted(r["nodes"]) for r in listed)
    # The same rows as the detail answers (its nodes read through the reservation's own relation).
    for row in listed:
        assert client_for(admin).get(f"{URL}{row['id']}/").json() == row
    # A student is refused the list, as before.
    student = client_for(UserFactory(username="sam", role="student"))
    assert student.get(URL, window).status_code == 403
