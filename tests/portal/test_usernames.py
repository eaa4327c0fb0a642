"""One person, one name: user names are the same whatever their case (accounts/usernames.py, the constraint of
migration 0008), on every path that names a person: the database, the model's validation, the migration that adds
the rule, password sign-in and its lockout, `portal_user`, the admin console's forms and rosters.

(The university's sign-in: tests/portal/test_signin_oidc.py and test_signin_ldap.py; the API's user fields: the
usage, budget and reservation API tests; the hub's identity: tests/portal/test_oauth.py and
tests/notebooks/test_hub_identity.py.)"""

from __future__ import annotations

import datetime as dt
import secrets

import pytest
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from rest_framework.test import APIClient

from accounts import audit
from accounts.models import Enrollment, RosterInvitation, User
from accounts.services import token_issue
from accounts.usernames import username_taken_sentence
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, UserFactory

pytestmark = pytest.mark.django_db

BEFORE = [("accounts", "0008_roster_requests_to_join")]
AFTER = [("accounts", "0009_usernames_unique_ignoring_case")]


def same_name(name: str) -> list[str]:
    return sorted(User.objects.filter(username__iexact=name).values_list("username", flat=True))


# --- The database and the model ---------------------------------------------------------------------------------------


def test_two_accounts_differing_only_in_case_cannot_exist_in_the_database():
    UserFactory(username="student2")
    with pytest.raises(IntegrityError), transaction.atomic():
        User.objects.create(username="Student2")
    with pytest.raises(IntegrityError), transaction.atomic():
        User.objects.filter(username="student2").update(username="student2-x")
        User.objects.create(username="Student2-X")
    assert same_name("student2") == ["student2"]


def test_validation_names_the_account_that_has_the_name_and_a_name_keeps_its_case():
    mine = UserFactory(username="student2")
    with pytest.raises(ValidationError) as refused:
        User(username="STUDENT2").full_clean(exclude=["password"])
    assert refused.value.message_dict == {"username": [username_taken_sentence("student2")]}
    assert "“student2” already has this name" in username_taken_sentence("student2")
    # Its own name in another case is still its own.
    mine.username = "Student2"
    mine.full_clean(exclude=["password"])
    mine.save()
    assert same_name("student2") == ["Student2"]


@pytest.mark.postgresql_only
def test_the_migration_refuses_while_two_accounts_differ_only_in_case_and_says_what_to_do(capsys, monkeypatch):
    # A process started on the old schema: it has not seen the audit trail's table (accounts.audit remembers it
    # once seen, and earlier tests in this process did).
    monkeypatch.setattr(audit, "_ready", False)
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)  # the database as it was: no rule yet
    old = executor.loader.project_state(BEFORE).apps.get_model("accounts", "User")
    kept = old.objects.create(username="student2")
    twin = old.objects.create(username="Student2")
    other = old.objects.create(username="ADMIN")
    admin = old.objects.create(username="admin")
    old.objects.create(username="ada")

    executor.loader.build_graph()
    with pytest.raises(CommandError) as refused:
        executor.migrate(AFTER)
    message = str(refused.value)
    assert f"“student2” (id {kept.pk}), “Student2” (id {twin.pk})" in message
    assert f"“ADMIN” (id {other.pk}), “admin” (id {admin.pk})" in message
    assert "ada" not in message
    assert "python manage.py portal_user <exact name> --rename <new name>" in message
    assert "Nothing was changed" in message
    assert old.objects.count() == 5  # nothing renamed, nothing merged

    # What the sentence says to do works before the rule is in: the exact name picks the account.
    call_command("portal_user", "Student2", "--rename", "student2-b")
    call_command("portal_user", "ADMIN", "--rename", "admin-old")
    assert "Updated student student2-b (was Student2)" in capsys.readouterr().out
    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    call_command("migrate", "accounts", verbosity=0)  # and the later ones, as an upgrade runs them
    with pytest.raises(IntegrityError), transaction.atomic():
        User.objects.create(username="STUDENT2")
    assert same_name("student2") == ["student2"] and same_name("student2-b") == ["student2-b"]


# --- Password sign-in and its lockout ---------------------------------------------------------------------------------


def fresh_address() -> str:
    """An address of the test's own: the throttles' counters live in Redis, which outlives the test."""
    ip = f"198.18.{secrets.randbelow(256)}.{secrets.randbelow(254) + 1}"
    for scope in ("login", "token"):
        cache.delete(f"throttle_{scope}_{ip}")
    return ip


def test_the_login_page_the_admin_console_and_the_token_api_find_the_account_whatever_the_case():
    student = UserFactory(username="student2")
    for typed in ("student2", "STUDENT2", "Student2"):
        client = Client(REMOTE_ADDR=fresh_address())
        response = client.post("/login/", {"username": typed, "password": PASSWORD})
        assert response.status_code == 302, typed
        assert client.get("/api/v1/me/").json()["username"] == "student2"

    token = APIClient(REMOTE_ADDR=fresh_address()).post(
        "/api/v1/token/", {"username": "STUDENT2", "password": PASSWORD}, format="json"
    )
    assert token.status_code == 200
    me = APIClient().get("/api/v1/me/", HTTP_AUTHORIZATION=f"Token {token.json()['token']}")
    assert me.json()["username"] == "student2" and student.api_tokens.count() == 1

    UserFactory(username="Root", role="admin")
    console = Client(REMOTE_ADDR=fresh_address())
    response = console.post("/admin/login/?next=/admin/", {"username": "root", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert console.get("/admin/").status_code == 200


def test_failures_under_every_spelling_of_a_name_count_toward_one_lockout(settings):
    settings.AXES_FAILURE_LIMIT = 3
    settings.AXES_COOLOFF_TIME = dt.timedelta(minutes=10)
    UserFactory(username="Student")
    attacker = fresh_address()

    def login(typed: str, password: str):
        return Client(REMOTE_ADDR=attacker).post("/login/", {"username": typed, "password": password})

    assert login("student", "guess-1").status_code == 400
    assert login("STUDENT", "guess-2").status_code == 400
    locked = login("sTuDeNt", "guess-3")
    assert locked.status_code == 429 and "Too many failed sign-ins for student" in locked.content.decode()
    # Locked for every spelling, the right password included, on the page and the token API alike.
    assert login("Student", PASSWORD).status_code == 429
    token = APIClient(REMOTE_ADDR=attacker).post(
        "/api/v1/token/", {"username": "STUDENT", "password": PASSWORD}, format="json"
    )
    assert token.status_code == 429 and token.json()["code"] == "locked_out"


# --- portal_user ------------------------------------------------------------------------------------------------------


def test_portal_user_finds_the_account_whatever_the_case_and_makes_no_second_one(capsys):
    UserFactory(username="student2")
    call_command("portal_user", "Student2", "--role", "teacher")
    assert "Updated teacher student2" in capsys.readouterr().out
    assert list(User.objects.filter(username__iexact="student2").values_list("username", "role")) == [
        ("student2", "teacher")
    ]


def test_portal_user_renames_keeping_the_role_and_refuses_a_name_that_differs_only_in_case(capsys):
    UserFactory(username="student2")
    bob = UserFactory(username="bob", role="teacher")
    with pytest.raises(CommandError, match="“student2” already has this name"):
        call_command("portal_user", "bob", "--rename", "STUDENT2")
    with pytest.raises(CommandError, match="There is no account “nobody” to rename"):
        call_command("portal_user", "nobody", "--rename", "somebody")
    with pytest.raises(CommandError, match="A new account needs a role"):
        call_command("portal_user", "newbie")
    call_command("portal_user", "BOB", "--rename", "Robert")
    bob.refresh_from_db()
    assert (bob.username, bob.role) == ("Robert", "teacher")
    assert "Updated teacher Robert (was BOB)" in capsys.readouterr().out
    assert sorted(User.objects.values_list("username", flat=True)) == ["Robert", "student2"]


# --- The admin console's forms ----------------------------------------------------------------------------------------


CHANGE_FORM = {
    "role": "student",
    "role_source": "manual",
    "first_name": "",
    "last_name": "",
    "email": "",
    "is_active": "on",
    "last_login_0": "",
    "last_login_1": "",
    "quota-TOTAL_FORMS": "0",
    "quota-INITIAL_FORMS": "0",
    "enrollments-TOTAL_FORMS": "0",
    "enrollments-INITIAL_FORMS": "0",
    "external_identities-TOTAL_FORMS": "0",
    "external_identities-INITIAL_FORMS": "0",
}


def test_the_admin_console_refuses_a_name_that_differs_only_in_case_with_a_form_error_naming_the_account(client):
    client.force_login(UserFactory(username="root", role="admin"))
    UserFactory(username="student2")
    bob = UserFactory(username="bob")
    sentence = "The account “student2” already has this name"

    added = client.post(
        "/admin/accounts/user/add/",
        {"username": "Student2", "role": "student", "usable_password": "true", "password1": "Long-enough-9",
         "password2": "Long-enough-9"},
    )  # fmt: skip
    assert added.status_code == 200 and sentence in added.content.decode()

    renamed = client.post(f"/admin/accounts/user/{bob.pk}/change/", {**CHANGE_FORM, "username": "STUDENT2"})
    assert renamed.status_code == 200 and sentence in renamed.content.decode()
    bob.refresh_from_db()
    assert bob.username == "bob" and same_name("student2") == ["student2"]

    # A name of its own in another case, and a free name, are fine.
    assert client.post(f"/admin/accounts/user/{bob.pk}/change/", {**CHANGE_FORM, "username": "Bob"}).status_code == 302
    assert User.objects.get(pk=bob.pk).username == "Bob"


# --- Rosters ----------------------------------------------------------------------------------------------------------


@pytest.fixture
def course():
    teacher = UserFactory(username="tess", role="teacher")
    course = CourseFactory(code="DL-101")
    course.teachers.add(teacher)
    return course


def roster_api():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=User.objects.get(username='tess'))}")
    return client


def test_a_roster_matches_people_whatever_the_case_of_their_name_and_invites_nobody(course):
    student2 = UserFactory(username="student2", email="s2@uni.example")
    EnrollmentFactory(user=UserFactory(username="Al"), course=course)
    roster = "username,email,role\nStudent2,someone@uni.example,student\nAL,,assistant\n"

    plan = roster_api().post("/api/v1/courses/DL-101/roster/preview/", {"csv": roster}, format="json").json()
    assert plan["problems"] == [] and plan["invite"] == [] and plan["add"] == []
    # The existing student2 is asked (a roster captures nobody), by their stored name; no second account.
    assert [(row["username"], row["role"]) for row in plan["consent"]] == [("student2", "student")]
    assert [(row["username"], row["role"]) for row in plan["change"]] == [("Al", "assistant")]

    done = roster_api().post("/api/v1/courses/DL-101/roster/", {"csv": roster}, format="json")
    assert done.status_code == 200, done.json()
    assert dict(Enrollment.objects.filter(course=course).values_list("user__username", "role")) == {"Al": "assistant"}
    assert same_name("student2") == ["student2"]
    assert list(RosterInvitation.objects.values_list("user__username", "consent")) == [("student2", True)]
    student2.refresh_from_db()
    assert student2.email == "s2@uni.example"  # the roster's e-mail does not change an existing account


def test_a_roster_listing_one_name_in_two_cases_lists_someone_twice(course):
    roster = "username,email\nann,ann@uni.example\nANN,ann2@uni.example\n"
    plan = roster_api().post("/api/v1/courses/DL-101/roster/preview/", {"csv": roster}, format="json").json()
    assert plan["problems"] == [{"line": 3, "reason": "ANN is listed twice (first on line 2)."}]
    assert [row["username"] for row in plan["invite"]] == ["ann"]
