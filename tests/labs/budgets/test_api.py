"""GET /api/v1/budgets/ for every role (what selectors let each see), and the admins' writes: bad amounts are a 400
naming the field, nothing saved; the database refuses them too; the admin console's form says the same."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts.services import token_issue
from labs.models import Allocation, Budget
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, UserFactory
from tests.labs.budgets.conftest import held, local

pytestmark = pytest.mark.django_db
URL = "/api/v1/budgets/"


def api_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=user)}")
    return client


@pytest.fixture
def budgets(people):
    other_course = CourseFactory(code="CV-200", term_start=dt.date(2026, 10, 1), term_end=dt.date(2027, 1, 31))
    stranger = UserFactory(username="bob", role="student")
    made = {
        "course": Budget.objects.create(
            name="DL-101 term",
            course=people["course"],
            starts_on=dt.date(2026, 10, 1),
            ends_on=dt.date(2027, 1, 31),
            gpu_hours=Decimal("100"),
            price_per_gpu_hour=Decimal("0.5"),
        ),
        "other_course": Budget.objects.create(
            name="CV-200 term",
            course=other_course,
            starts_on=dt.date(2026, 10, 1),
            ends_on=dt.date(2027, 1, 31),
            gpu_hours=Decimal("50"),
        ),
        "ada": Budget.objects.create(
            name="Ada monthly",
            user=people["student"],
            period="month",
            starts_on=dt.date(2026, 1, 1),
            gpu_hours=Decimal("20"),
        ),
        "bob": Budget.objects.create(
            name="Bob monthly", user=stranger, period="month", starts_on=dt.date(2026, 1, 1), gpu_hours=Decimal("5")
        ),
        "tess": Budget.objects.create(
            name="Tess monthly",
            user=people["teacher"],
            period="month",
            starts_on=dt.date(2026, 1, 1),
            gpu_hours=Decimal("30"),
        ),
    }
    return made


@pytest.mark.parametrize(
    ("who", "sees"),
    [
        ("student", ["Ada monthly", "DL-101 term"]),
        ("teacher", ["DL-101 term", "Tess monthly"]),
        ("admin", ["Ada monthly", "Bob monthly", "CV-200 term", "DL-101 term", "Tess monthly"]),
    ],
)
def test_each_role_sees_what_selectors_allow(people, budgets, gpu, now, who, sees):
    held(people["student"], gpu, course=people["course"], start=local("2026-11-02 08:00"), hours=25)
    response = api_for(people[who]).get(URL)
    assert response.status_code == 200
    body = {row["name"]: row for row in response.json()}
    assert sorted(body) == sees
    dl101 = body["DL-101 term"]
    assert dl101 | {"id": 0, "note": ""} == {
        "id": 0,
        "name": "DL-101 term",
        "course": "DL-101",
        "user": None,
        "period": "term",
        "starts_on": "2026-10-01",
        "ends_on": "2027-01-31",
        "gpu_hours": 100.0,
        "price_per_gpu_hour": 0.5,
        "price_per_kwh": None,
        "currency": "EUR",
        "thresholds": [50, 80, 100],
        "on_exceed": "warn",
        "note": "",
        "in_force": True,
        "period_start": "2026-10-01",
        "period_end": "2027-01-31",
        "used_gpu_hours": 25.0,
        "used_pct": 25.0,
        "exhausted": False,
        "energy_kwh": None,
        "cost": 12.5,
    }


def test_a_teaching_assistant_sees_the_assisted_courses_budgets_only(people, budgets):
    tara = UserFactory(username="tara", role="student")
    EnrollmentFactory(user=tara, course=people["course"], role="assistant")
    client = api_for(tara)
    response = client.get(URL)
    assert response.status_code == 200 and [row["name"] for row in response.json()] == ["DL-101 term"]
    assert client.get(f"{URL}{budgets['course'].pk}/").status_code == 200
    for hidden in ("ada", "other_course", "tess"):  # a student's, another course's, the teacher's own
        assert client.get(f"{URL}{budgets[hidden].pk}/").status_code == 404
    assert client.patch(f"{URL}{budgets['course'].pk}/", {"gpu_hours": "1"}, format="json").status_code == 403


@pytest.mark.parametrize(("who", "budget"), [("student", "bob"), ("student", "other_course"), ("teacher", "ada")])
def test_a_budget_the_caller_may_not_see_is_404(people, budgets, who, budget):
    response = api_for(people[who]).get(f"{URL}{budgets[budget].pk}/")
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert api_for(people["admin"]).get(f"{URL}{budgets[budget].pk}/").status_code == 200


@pytest.mark.parametrize("who", ["student", "teacher"])
def test_only_admins_write(people, budgets, who):
    client = api_for(people[who])
    body = {"course": "DL-101", "gpu_hours": "10"}
    assert client.post(URL, body, format="json").status_code == 403
    assert client.patch(f"{URL}{budgets['course'].pk}/", {"gpu_hours": "1"}, format="json").status_code == 403
    response = client.delete(f"{URL}{budgets['course'].pk}/")
    assert response.status_code == 403 and response.json() == {
        "detail": "Only admins manage budgets.",
        "code": "permission_denied",
    }
    assert Budget.objects.count() == 5 and Budget.objects.get(pk=budgets["course"].pk).gpu_hours == 100


def test_an_admin_sets_a_course_budget_for_its_term_changes_and_deletes_it(people, now):
    client = api_for(people["admin"])
    body = {"course": "DL-101", "gpu_hours": "400", "price_per_gpu_hour": "0.35", "on_exceed": "block"}
    response = client.post(URL, body, format="json")
    assert response.status_code == 201, response.json()
    made = response.json()
    assert (made["name"], made["starts_on"], made["ends_on"]) == ("DL-101 term budget", "2026-10-01", "2027-01-31")
    assert made["on_exceed"] == "block" and made["used_gpu_hours"] == 0
    response = client.patch(f"{URL}{made['id']}/", {"thresholds": "90, 50", "on_exceed": "warn"}, format="json")
    assert response.status_code == 200 and response.json()["thresholds"] == [50, 90]
    assert response.json()["on_exceed"] == "warn"
    assert client.delete(f"{URL}{made['id']}/").status_code == 204
    assert not Budget.objects.exists()


@pytest.mark.parametrize(
    ("body", "field", "sentence"),
    [
        ({"gpu_hours": "-5"}, "gpu_hours", "The GPU-hours must be a number above 0."),
        ({"gpu_hours": "0"}, "gpu_hours", "The GPU-hours must be a number above 0."),
        ({"gpu_hours": "5000000"}, "gpu_hours", "At most 1,000,000 GPU-hours"),
        ({"gpu_hours": "1e400"}, "gpu_hours", None),
        ({"gpu_hours": "NaN"}, "gpu_hours", None),
        ({"price_per_gpu_hour": "-0.01"}, "price_per_gpu_hour", "A price cannot be negative"),
        ({"price_per_kwh": "250"}, "price_per_kwh", "At most 100"),
        ({"thresholds": "50,eighty"}, "thresholds", "“eighty” is not a whole percentage"),
        ({"thresholds": "0,50"}, "thresholds", "Each percentage must be between 1 and 1000"),
        ({"thresholds": "50,8²"}, "thresholds", "“8²” is not a whole percentage; use e.g. 50,80,100."),
        ({"thresholds": "٥٠"}, "thresholds", "“٥٠” is not a whole percentage; use e.g. 50,80,100."),
        ({"starts_on": "2026-12-01", "ends_on": "2026-11-01"}, "ends_on", "The budget cannot end before it starts."),
        ({"user": "ada"}, "course", "A budget is for one course or for one person"),
        ({"course": None}, "course", "A budget is for one course or for one person"),
        ({"course": "NOPE"}, "course", "No course with code NOPE."),
        ({"course": None, "user": "ada", "starts_on": "2026-10-01"}, "ends_on", "A term budget needs its last day"),
        ({"course": None, "user": "ada"}, "starts_on", "Give the first day the budget counts."),
        ({"period": "fortnight"}, "period", None),
        ({"on_exceed": "explode"}, "on_exceed", None),
    ],
)
def test_bad_budgets_are_a_400_naming_the_field_and_nothing_is_saved(people, now, body, field, sentence):
    response = api_for(people["admin"]).post(URL, {"course": "DL-101", "gpu_hours": "10", **body}, format="json")
    assert response.status_code == 400, response.json()
    answer = response.json()
    assert answer["code"] == "invalid" and field in answer["fields"]
    if sentence:
        assert sentence in " ".join(answer["fields"][field])
    assert not Budget.objects.exists()


@pytest.mark.parametrize(
    ("body", "field", "sentence"),
    [
        ({"course": "DL-101", "gpu_hours": ["10"]}, "gpu_hours", "A valid number is required."),
        ({"course": {"code": "DL-101"}, "gpu_hours": "10"}, "course", "Not a valid string."),
        ({"course": "DL-101", "gpu_hours": "10", "starts_on": "2026-02-30"}, "starts_on", "Date has wrong format."),
        ({"course": "DL-101"}, "gpu_hours", "This field is required."),
    ],
)
def test_malformed_budgets_are_a_400_naming_the_field_and_nothing_is_saved(people, now, body, field, sentence):
    response = api_for(people["admin"]).post(URL, body, format="json")
    assert response.status_code == 400, response.json()
    answer = response.json()
    assert answer["code"] == "invalid" and sentence in " ".join(answer["fields"][field])
    assert not Budget.objects.exists()


def test_a_change_that_is_not_an_object_or_to_no_budget_is_refused_and_nothing_changes(people, budgets):
    client = api_for(people["admin"])
    budget = budgets["course"]
    response = client.patch(f"{URL}{budget.pk}/", [{"gpu_hours": "1"}], format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "invalid" and "Expected a dictionary, but got list" in str(response.json())
    assert Budget.objects.get(pk=budget.pk).gpu_hours == Decimal("100")
    for huge in (2**31, 2**63, 10**30):
        response = client.patch(f"{URL}{huge}/", {"gpu_hours": "1"}, format="json")
        assert response.status_code == 404 and response.json()["code"] == "not_found", huge
        assert client.get(f"{URL}{huge}/").status_code == 404
        assert client.delete(f"{URL}{huge}/").status_code == 404
    assert Budget.objects.count() == len(budgets)


def test_a_bad_change_is_refused_and_the_budget_stays_as_it_was(people, budgets):
    budget = budgets["course"]
    response = api_for(people["admin"]).patch(f"{URL}{budget.pk}/", {"gpu_hours": "-1"}, format="json")
    assert response.status_code == 400 and "gpu_hours" in response.json()["fields"]
    assert Budget.objects.get(pk=budget.pk).gpu_hours == Decimal("100")


@pytest.mark.parametrize(
    "fields",
    [{"gpu_hours": Decimal("-1")}, {"gpu_hours": Decimal("2000000")}, {"price_per_kwh": Decimal("-1")}],
)
def test_the_database_refuses_bad_amounts_whatever_the_code_checked(people, fields):
    values = {
        "name": "x",
        "course": people["course"],
        "starts_on": dt.date(2026, 10, 1),
        "ends_on": dt.date(2027, 1, 1),
    }
    values["gpu_hours"] = Decimal("10")
    with pytest.raises(IntegrityError), transaction.atomic():
        Budget.objects.create(**(values | fields))


def test_the_admin_console_lists_budgets_with_their_use_and_refuses_bad_amounts(people, budgets, client, now):
    assert client.login(username="root", password=PASSWORD)
    page = client.get("/admin/labs/budget/")
    assert page.status_code == 200 and "0.0 GPU-h (0.0 %)" in page.content.decode()
    response = client.post(
        "/admin/labs/budget/add/",
        {"name": "Bad", "course": people["course"].pk, "period": "term", "gpu_hours": "-3", "on_exceed": "warn"},
    )
    assert response.status_code == 200  # the form again, with the error
    assert "The GPU-hours must be a number above 0." in response.content.decode()  # the API's sentence
    assert not Budget.objects.filter(name="Bad").exists()
    response = client.post(
        "/admin/labs/budget/add/",
        {"name": "Good", "course": people["course"].pk, "period": "term", "gpu_hours": "30", "on_exceed": "block"},
    )
    assert response.status_code == 302
    good = Budget.objects.get(name="Good")
    assert (good.starts_on, good.ends_on) == (dt.date(2026, 10, 1), dt.date(2027, 1, 31))  # the course's term


def test_the_admin_console_reads_each_budgets_use_once_for_its_columns(people, budgets, client, now):
    assert client.login(username="root", password=PASSWORD)
    with CaptureQueriesContext(connection) as queries:
        page = client.get("/admin/labs/budget/")
    assert page.status_code == 200 and "0.0 GPU-h (0.0 %)" in page.content.decode()
    ledger = [query for query in queries.captured_queries if Allocation._meta.db_table in query["sql"]]
    assert len(ledger) == len(budgets)  # one reading of the ledger per row, for "used" and "cost" together


def test_a_persons_budget_names_them_whatever_the_case_typed(people, now):
    response = api_for(people["admin"]).post(URL, {"user": "ADA", "period": "month", "gpu_hours": "20"}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["user"] == "ada" and Budget.objects.get().user == people["student"]


def test_a_monthly_budget_without_a_first_day_starts_this_month_in_the_api_and_the_console(people, client, now):
    body = {"user": "ada", "period": "month", "gpu_hours": "20"}
    response = api_for(people["admin"]).post(URL, body, format="json")
    assert response.status_code == 201, response.json()
    assert (response.json()["starts_on"], response.json()["ends_on"]) == ("2026-11-01", None)
    assert client.login(username="root", password=PASSWORD)
    response = client.post(
        "/admin/labs/budget/add/",
        {
            "name": "Tess monthly",
            "user": people["teacher"].pk,
            "period": "month",
            "gpu_hours": "30",
            "on_exceed": "warn",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Budget.objects.get(name="Tess monthly").starts_on == dt.date(2026, 11, 1)
