"""Sign-in through the university's OpenID Connect provider: a real provider process on loopback
(oidc-provider-mock, PKCE enforced in front of it), the portal's pages driven with the test client.

The authorization code + PKCE flow end to end; people matched by issuer and subject, never by e-mail; the groups
mapped to a role and courses at every sign-in; and what a person sees when it goes wrong: the IdP down or slow, a
replayed or expired state, the IdP saying no."""

from __future__ import annotations

import socket
from urllib.parse import parse_qs, urlsplit

import pytest

from accounts.models import Enrollment, ExternalIdentity, MembershipSource, Role, RoleSource, User
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, UserFactory
from tests.fakes.oidc_idp import MockIdP

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def mock_idp():
    idp = MockIdP()
    yield idp
    idp.close()


@pytest.fixture
def idp(mock_idp, settings):
    settings.OIDC_PROVIDER_URL = mock_idp.url
    settings.OIDC_PROVIDER_NAME = "Example University"
    settings.OIDC_RP_CLIENT_ID = "gpu-portal"
    settings.OIDC_RP_CLIENT_SECRET = "portal-secret"
    settings.OIDC_DISCOVERY_CACHE_S = 0
    settings.SIGNIN_ROLE_GROUPS = "lab-teachers=teacher,lab-admins=admin"
    return mock_idp


def start(client, idp, next_url: str = "") -> str:
    response = client.get("/login/oidc/" + (f"?next={next_url}" if next_url else ""))
    assert response.status_code == 302
    authorize = response["Location"]
    assert authorize.startswith(idp.url + "/oauth2/authorize?")
    query = parse_qs(urlsplit(authorize).query)
    assert query["code_challenge_method"] == ["S256"] and query["code_challenge"][0]
    assert query["nonce"][0] and query["state"][0]
    assert query["redirect_uri"] == ["http://testserver/login/oidc/callback/"]
    return authorize


def sign_in(client, idp, sub: str, next_url: str = ""):
    back = idp.sign_in(start(client, idp, next_url), sub)
    assert back.startswith("http://testserver/login/oidc/callback/?")
    return client.get(back.removeprefix("http://testserver"))


def test_the_login_page_offers_the_university_first(client, idp):
    page = client.get("/login/").content.decode()
    assert "Sign in with Example University" in page
    assert page.index("Sign in with Example University") < page.index('name="password"')


def test_a_new_student_signs_in_and_gets_her_course(client, idp):
    dl101 = CourseFactory(code="DL-101", name="Deep learning", term="2026W")
    CourseFactory(code="DL-101-OLD", term="2025W")
    idp.set_user(
        "ada-0001",
        {
            "preferred_username": "ada",
            "email": "ada@uni.example",
            "groups": ["course-dl101-2026w-students", "course-dl101-2025w-students", "library"],
        },
    )

    response = sign_in(client, idp, "ada-0001")

    assert response.status_code == 302 and response["Location"] == "/"
    ada = User.objects.get(username="ada")
    assert ada.role == Role.STUDENT and ada.role_source == RoleSource.IDP and not ada.has_usable_password()
    identity = ExternalIdentity.objects.get(user=ada)
    assert (identity.kind, identity.issuer, identity.subject) == ("oidc", idp.url, "ada-0001")
    assert list(Enrollment.objects.filter(user=ada).values_list("course__code", "source")) == [("DL-101", "idp")]
    dashboard = client.get("/").content.decode()
    assert "DL-101" in dashboard and "Deep learning" in dashboard
    assert dl101.students.filter(pk=ada.pk).exists()


def test_next_is_kept_through_the_idp(client, idp):
    idp.set_user("nina-1", {"preferred_username": "nina"})
    response = sign_in(client, idp, "nina-1", next_url="/jobs/")
    assert response.status_code == 302 and response["Location"] == "/jobs/"


def test_teachers_group_makes_a_teacher_of_the_course(client, idp):
    course = CourseFactory(code="DL-101", term="2026W")
    idp.set_user("tom-7", {"preferred_username": "tom", "groups": ["lab-teachers", "course-dl101-2026w-teachers"]})
    sign_in(client, idp, "tom-7")
    tom = User.objects.get(username="tom")
    assert tom.role == Role.TEACHER
    assert course.teachers.filter(pk=tom.pk).exists()
    assert "Courses you teach" in client.get("/").content.decode()


def test_losing_the_group_loses_the_course_but_never_what_an_admin_gave(client, idp):
    dl101, ml201, hand = (CourseFactory(code=c, term="2026W") for c in ("DL-101", "ML-201", "HAND-1"))
    idp.set_user(
        "bo-1", {"preferred_username": "bo", "groups": ["course-dl101-2026w-students", "course-ml201-2026w-teachers"]}
    )
    sign_in(client, idp, "bo-1")
    bo = User.objects.get(username="bo")
    EnrollmentFactory(user=bo, course=hand)  # by hand: source manual
    hand.teachers.add(bo)  # by hand
    assert set(bo.enrollments.values_list("course__code", flat=True)) == {"DL-101", "HAND-1"}

    client.logout()
    idp.set_user("bo-1", {"preferred_username": "bo", "groups": []})
    sign_in(client, idp, "bo-1")

    assert list(bo.enrollments.values_list("course__code", "source")) == [("HAND-1", MembershipSource.MANUAL)]
    assert not ml201.teachers.filter(pk=bo.pk).exists() and hand.teachers.filter(pk=bo.pk).exists()
    assert not dl101.students.filter(pk=bo.pk).exists()


def test_a_role_set_by_hand_stays(client, idp):
    boss = UserFactory(username="boss", role=Role.ADMIN)
    ExternalIdentity.objects.create(user=boss, kind="oidc", issuer=idp.url, subject="boss-9")
    idp.set_user("boss-9", {"preferred_username": "boss", "groups": []})
    sign_in(client, idp, "boss-9")
    boss.refresh_from_db()
    assert boss.role == Role.ADMIN and boss.role_source == RoleSource.MANUAL


def test_people_are_matched_by_subject_never_by_email_or_name(client, idp):
    local = UserFactory(username="sam", email="sam@uni.example", role=Role.ADMIN)
    idp.set_user("sam-other", {"preferred_username": "sam", "email": "sam@uni.example", "groups": ["lab-admins"]})

    sign_in(client, idp, "sam-other")

    newcomer = ExternalIdentity.objects.get(subject="sam-other").user
    assert newcomer.pk != local.pk and newcomer.username == "sam-2"
    assert client.get("/api/v1/me/").json()["username"] == "sam-2"
    local.refresh_from_db()
    assert not local.external_identities.exists() and local.check_password(PASSWORD)


def test_groups_of_two_roles_give_the_highest_and_say_so(client, idp, caplog):
    idp.set_user("kim-3", {"preferred_username": "kim", "groups": ["lab-teachers", "lab-admins"]})
    with caplog.at_level("WARNING", logger="portal.signin"):
        sign_in(client, idp, "kim-3")
    assert User.objects.get(username="kim").role == Role.ADMIN
    assert "kim is in groups of 2 roles (admin, teacher): the highest, admin, wins" in caplog.text


def test_a_replayed_callback_is_refused_with_a_page(client, idp):
    idp.set_user("rey-1", {"preferred_username": "rey"})
    back = idp.sign_in(start(client, idp), "rey-1")
    assert client.get(back.removeprefix("http://testserver")).status_code == 302
    client.logout()

    replay = client.get(back.removeprefix("http://testserver"))

    assert replay.status_code == 400
    assert "used already or did not start in this browser" in replay.content.decode()
    assert "_auth_user_id" not in client.session


def test_a_callback_from_another_browser_is_refused(client, idp):
    from django.test import Client

    idp.set_user("eve-1", {"preferred_username": "eve"})
    back = idp.sign_in(start(client, idp), "eve-1")
    other = Client()
    response = other.get(back.removeprefix("http://testserver"))
    assert response.status_code == 400 and "_auth_user_id" not in other.session
    assert not User.objects.filter(username="eve").exists()


def test_an_expired_state_is_refused(client, idp, settings):
    idp.set_user("old-1", {"preferred_username": "old"})
    back = idp.sign_in(start(client, idp), "old-1")
    session = client.session
    state = parse_qs(urlsplit(back).query)["state"][0]
    states = session["oidc_states"]
    states[state]["added_on"] -= settings.OIDC_STATE_TTL_S + 1  # the person took longer than the limit
    session["oidc_states"] = states
    session.save()

    response = client.get(back.removeprefix("http://testserver"))

    assert response.status_code == 400 and "took too long and expired" in response.content.decode()
    assert not User.objects.filter(username="old").exists()


def test_the_idp_saying_no_is_a_page(client, idp):
    authorize = start(client, idp)
    import requests

    denied = requests.post(authorize, data={"action": "deny"}, allow_redirects=False, timeout=10)
    assert denied.status_code == 302
    response = client.get(denied.headers["Location"].removeprefix("http://testserver"))
    assert response.status_code == 400
    assert "Example University did not sign you in" in response.content.decode()


def test_an_idp_that_is_down_gives_a_clear_page_and_staff_still_sign_in(client, idp, settings):
    with socket.socket() as probe:  # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.OIDC_PROVIDER_URL = f"http://127.0.0.1:{port}"
    UserFactory(username="root", role=Role.ADMIN)

    response = client.get("/login/oidc/")

    assert response.status_code == 503
    text = response.content.decode()
    assert "Example University is not answering right now" in text and "password" in text
    assert client.get("/login/").status_code == 200
    signed_in = client.post("/login/", {"username": "root", "password": PASSWORD})
    assert signed_in.status_code == 302 and signed_in["Location"] == "/"


def test_an_idp_that_does_not_answer_times_out_into_the_same_page(client, idp, settings):
    silent = socket.socket()  # accepts connections (the kernel's backlog) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        settings.OIDC_PROVIDER_URL = f"http://127.0.0.1:{silent.getsockname()[1]}"
        settings.OIDC_TIMEOUT = 1
        response = client.get("/login/oidc/")
    finally:
        silent.close()
    assert response.status_code == 503 and "not answering right now" in response.content.decode()


def test_without_a_provider_the_routes_are_not_there(client, settings):
    settings.OIDC_PROVIDER_URL = ""
    assert client.get("/login/oidc/").status_code == 404
    assert client.get("/login/oidc/callback/?code=x&state=y").status_code == 404
    assert "Sign in with" not in client.get("/login/").content.decode()


@pytest.mark.parametrize("local_login", ["staff", "off"])
def test_local_passwords_can_be_kept_for_staff_or_switched_off(client, idp, settings, local_login):
    settings.LOCAL_LOGIN = local_login
    UserFactory(username="stu", role=Role.STUDENT)
    UserFactory(username="root", role=Role.ADMIN)

    student = client.post("/login/", {"username": "stu", "password": PASSWORD})
    assert student.status_code == 400 and "_auth_user_id" not in client.session
    admin = client.post("/login/", {"username": "root", "password": PASSWORD})
    assert admin.status_code == (302 if local_login == "staff" else 400)
    token = client.post("/api/v1/token/", {"username": "stu", "password": PASSWORD}, content_type="application/json")
    assert token.status_code == 401  # as a wrong password
    page = client.get("/login/").content.decode() if local_login == "off" else ""
    if local_login == "off":
        assert 'name="password"' not in page and "Sign in with Example University" in page


def test_a_wrong_password_with_code_and_state_in_the_address_is_a_wrong_password(client, idp, caplog):
    """A password sign-in whose address happens to carry ?code=&state= is not the IdP's callback: nothing is sent to
    the IdP and each door gives its usual wrong-password answer."""
    UserFactory(username="root", role=Role.ADMIN)
    wrong = {"username": "root", "password": "not-the-password"}

    with caplog.at_level("WARNING", logger="portal.signin"):
        form = client.post("/login/?code=x&state=y", wrong)
        admin = client.post("/admin/login/?code=x&state=y", wrong)
        token = client.post("/api/v1/token/?code=x&state=y", wrong, content_type="application/json")

    assert form.status_code == 400 and 'name="password"' in form.content.decode()
    assert admin.status_code == 200 and "correct username and password" in admin.content.decode()
    assert token.status_code == 401 and token.json()["detail"] == "Wrong username or password."
    assert "_auth_user_id" not in client.session
    assert "OIDC" not in caplog.text  # the token endpoint was never asked


# --- Names the IdP proposes: one name whatever its case ---------------------------------------------------------------


def test_a_claim_differing_only_in_case_from_an_account_gets_a_name_of_its_own(client, idp):
    local = UserFactory(username="student2", role=Role.ADMIN)
    idp.set_user("s2-other", {"preferred_username": "Student2"})

    assert sign_in(client, idp, "s2-other").status_code == 302

    newcomer = ExternalIdentity.objects.get(subject="s2-other").user
    assert newcomer.pk != local.pk and newcomer.username == "student2-2" and newcomer.role == Role.STUDENT
    assert client.get("/api/v1/me/").json()["username"] == "student2-2"
    assert sorted(User.objects.filter(username__istartswith="student2").values_list("username", flat=True)) == [
        "student2",
        "student2-2",
    ]


def test_a_full_width_claim_is_the_plain_name_and_never_a_look_alike_account(client, idp):
    UserFactory(username="student2")
    idp.set_user("s2-wide", {"preferred_username": "Ｓｔｕｄｅｎｔ２"})  # full-width letters: NFKC makes them student2

    assert sign_in(client, idp, "s2-wide").status_code == 302

    assert ExternalIdentity.objects.get(subject="s2-wide").user.username == "student2-2"


def test_a_name_taken_in_another_case_between_the_check_and_the_save_gets_the_next_free_one(client, idp, monkeypatch):
    from accounts.signin import services

    UserFactory(username="STUDENT2")  # made by a roster import just after the sign-in looked for a free name
    stale = ["student2"]  # what that look found

    def checked_before(proposed: str) -> str:
        return stale.pop() if stale else real(proposed)

    real = services._free_username
    monkeypatch.setattr(services, "_free_username", checked_before)
    idp.set_user("s2-race", {"preferred_username": "student2"})

    assert sign_in(client, idp, "s2-race").status_code == 302

    # The database refused "student2" beside "STUDENT2"; the sign-in looked again.
    assert ExternalIdentity.objects.get(subject="s2-race").user.username == "student2-2"
    assert sorted(User.objects.filter(username__istartswith="student2").values_list("username", flat=True)) == [
        "STUDENT2",
        "student2-2",
    ]
