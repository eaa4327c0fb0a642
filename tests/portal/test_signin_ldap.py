"""Sign-in through LDAP against a real slapd on loopback with a test directory (tests/portal/ldap/directory.ldif):
the directory checks the password, its groups give the role and the courses, a group change takes the course away
at the next sign-in, and the nightly sync does it for people who do not sign in."""

from __future__ import annotations

import json
import socket
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from accounts.models import Enrollment, ExternalIdentity, MembershipSource, Role, RoleSource, User
from accounts.tasks import signin_sync
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, UserFactory
from tests.fakes.slapd import ADMIN_DN, ADMIN_PASSWORD, SUFFIX, Slapd

pytestmark = pytest.mark.django_db
LDIF = Path(__file__).parent / "ldap" / "directory.ldif"
LENA = f"uid=lena,ou=people,{SUFFIX}"
LDAP_BACKEND = "accounts.signin.ldap.PortalLDAPBackend"


@pytest.fixture
def slapd(tmp_path, settings):
    server = Slapd(tmp_path / "slapd", LDIF)
    settings.LDAP_SERVER_URI = server.uri
    settings.LDAP_PROVIDER_NAME = "department"
    settings.LDAP_BIND_DN = ADMIN_DN
    settings.LDAP_BIND_PASSWORD = ADMIN_PASSWORD
    settings.LDAP_USER_SEARCH_BASE = f"ou=people,{SUFFIX}"
    settings.LDAP_USER_FILTER = "(uid=%(user)s)"
    settings.LDAP_GROUP_SEARCH_BASE = f"ou=groups,{SUFFIX}"
    settings.LDAP_GROUP_TYPE = "groupofnames"
    settings.SIGNIN_ROLE_GROUPS = "lab-teachers=teacher"
    # As portal/settings/signin.py lists the backends with LDAP_SERVER_URI: the directory's after local passwords.
    backends = list(settings.AUTHENTICATION_BACKENDS)
    backends.insert(backends.index("accounts.signin.backends.LocalPasswordBackend") + 1, LDAP_BACKEND)
    settings.AUTHENTICATION_BACKENDS = backends
    yield server
    server.close()


@pytest.fixture
def dl101(db):
    return CourseFactory(code="DL-101", name="Deep learning", term="2026W")


def sign_in(client, username, password):
    return client.post("/login/", {"username": username, "password": password})


def test_a_student_signs_in_with_the_directory_password_and_gets_her_course(client, slapd, dl101):
    response = sign_in(client, "lena", "lena-password")

    assert response.status_code == 302 and response["Location"] == "/"
    lena = User.objects.get(username="lena")
    assert (lena.role, lena.role_source) == (Role.STUDENT, RoleSource.IDP)
    assert (lena.first_name, lena.email) == ("Lena", "lena@uni.example") and not lena.has_usable_password()
    identity = ExternalIdentity.objects.get(user=lena)
    assert (identity.kind, identity.issuer, identity.subject) == ("ldap", slapd.uri, LENA)
    assert identity.groups == ["course-dl101-2026w-students"]
    assert list(lena.enrollments.values_list("course__code", "source")) == [("DL-101", MembershipSource.IDP)]
    assert "Deep learning" in client.get("/").content.decode()
    client.logout()
    assert "Your department user name and password." in client.get("/login/").content.decode()


def test_a_teacher_from_the_directory_teaches_the_course(client, slapd, dl101):
    assert sign_in(client, "theo", "theo-password").status_code == 302
    theo = User.objects.get(username="theo")
    assert theo.role == Role.TEACHER and dl101.teachers.filter(pk=theo.pk).exists()


def test_a_wrong_directory_password_signs_nobody_in(client, slapd, dl101):
    response = sign_in(client, "lena", "not-her-password")
    assert response.status_code == 400 and "_auth_user_id" not in client.session
    assert not User.objects.filter(username="lena").exists()


def test_a_group_change_removes_the_course_at_the_next_sign_in(client, slapd, dl101):
    sign_in(client, "lena", "lena-password")
    lena = User.objects.get(username="lena")
    hand = CourseFactory(code="HAND-1")
    EnrollmentFactory(user=lena, course=hand)  # by hand: stays
    client.logout()

    slapd.remove_member("course-dl101-2026w-students", LENA)
    assert sign_in(client, "lena", "lena-password").status_code == 302

    assert list(lena.enrollments.values_list("course__code", flat=True)) == ["HAND-1"]
    assert ExternalIdentity.objects.get(user=lena).groups == []


def test_the_nightly_sync_catches_people_who_do_not_sign_in(client, slapd, dl101):
    for name in ("lena", "max"):
        assert sign_in(client, name, f"{name}-password").status_code == 302
        client.logout()
    assert Enrollment.objects.filter(course=dl101).count() == 2

    slapd.remove_member("course-dl101-2026w-students", LENA)
    slapd.delete(f"uid=max,ou=people,{SUFFIX}")
    out = StringIO()
    call_command("signin_sync", "--json", stdout=out)

    assert json.loads(out.getvalue()) == {"synced": 1, "gone": 1, "failed": 0}
    assert not Enrollment.objects.filter(course=dl101).exists()
    assert User.objects.filter(username="max").exists()  # the account stays (the ledger refers to it)
    # Beat's task does the same, and a second run changes nothing.
    slapd.add_member("course-dl101-2026w-students", LENA)
    assert signin_sync.delay().get() == {"synced": 1, "gone": 1, "failed": 0}
    assert list(Enrollment.objects.filter(course=dl101).values_list("user__username", flat=True)) == ["lena"]
    assert signin_sync.delay().get() == {"synced": 1, "gone": 1, "failed": 0}
    assert Enrollment.objects.filter(course=dl101).count() == 1


def test_a_local_account_of_the_same_name_is_never_taken_over(client, slapd, dl101):
    local = UserFactory(username="lena", role=Role.ADMIN)

    response = sign_in(client, "lena", "lena-password")

    assert response.status_code == 400 and "_auth_user_id" not in client.session
    local.refresh_from_db()
    assert local.role == Role.ADMIN and not local.external_identities.exists() and not local.enrollments.exists()
    # Her own password still works: the local account is hers.
    assert sign_in(client, "lena", PASSWORD).status_code == 302


def test_a_directory_that_is_down_refuses_politely_and_staff_still_sign_in(client, slapd, settings):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        settings.LDAP_SERVER_URI = f"ldap://127.0.0.1:{probe.getsockname()[1]}"
    UserFactory(username="root", role=Role.ADMIN)

    assert sign_in(client, "lena", "lena-password").status_code == 400
    assert sign_in(client, "root", PASSWORD).status_code == 302


def test_without_ldap_the_backend_stays_out_of_the_way(client, settings):
    settings.LDAP_SERVER_URI = ""
    assert sign_in(client, "lena", "lena-password").status_code == 400
    out = StringIO()
    call_command("signin_sync", "--json", stdout=out, stderr=StringIO())
    assert json.loads(out.getvalue()) == {"synced": 0, "gone": 0, "failed": 0}


def test_a_stable_id_attribute_names_the_entry(client, slapd, dl101, settings):
    settings.LDAP_USER_ID_ATTR = "entryUUID"
    assert sign_in(client, "lena", "lena-password").status_code == 302
    subject = ExternalIdentity.objects.get(user__username="lena").subject
    import uuid

    assert str(uuid.UUID(subject)) == subject  # the entry's entryUUID, not its DN
    client.logout()
    assert sign_in(client, "lena", "lena-password").status_code == 302  # found again by it
    assert ExternalIdentity.objects.count() == 1 and User.objects.filter(username__startswith="lena").count() == 1


def test_a_local_account_whose_name_differs_only_in_case_is_never_taken_over(client, slapd, dl101):
    local = UserFactory(username="LENA", role=Role.ADMIN)

    response = sign_in(client, "lena", "lena-password")

    assert response.status_code == 400 and "_auth_user_id" not in client.session
    assert not ExternalIdentity.objects.exists() and list(User.objects.values_list("username", flat=True)) == ["LENA"]
    local.refresh_from_db()
    assert local.role == Role.ADMIN and not local.enrollments.exists()


def test_an_account_made_in_another_case_during_the_first_sign_in_is_refused_not_doubled(
    client, slapd, dl101, monkeypatch
):
    from accounts.signin.ldap import PortalLDAPBackend

    UserFactory(username="Lena")  # made by a roster import just after the sign-in looked for the name

    def looked_before(self, username, ldap_user):  # what that look found: nobody, so a new account is built
        return User(username=username.lower(), role=Role.STUDENT, role_source=RoleSource.IDP), True

    monkeypatch.setattr(PortalLDAPBackend, "get_or_build_user", looked_before)

    response = sign_in(client, "lena", "lena-password")

    # The database refused "lena" beside "Lena": a refused sign-in (as for a local account of the name), not a 500.
    assert response.status_code == 400 and "_auth_user_id" not in client.session
    assert list(User.objects.values_list("username", flat=True)) == ["Lena"] and not ExternalIdentity.objects.exists()
