"""A roster cannot capture people: a teacher's import asks someone who already has an account, and only their answer
enrols them (accounts/rosters.py, invitations.py; the page /invitations/<id>/).

DL-101 is taught by ada. dot is a student of CV-201 (taught by eve) with an account of her own; cy is another student;
root is an admin. eli is not known to the portal yet.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.invitations import invitation_accept, invitation_create
from accounts.models import Enrollment, Notice, RosterInvitation, User
from accounts.services import token_issue
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, UserFactory

pytestmark = pytest.mark.django_db

ROSTER = "username,email,role\ndot,,assistant\neli,eli@uni.example,student\n"


@pytest.fixture
def courses():
    ada, eve = UserFactory(username="ada", role="teacher"), UserFactory(username="eve", role="teacher")
    dl, cv = CourseFactory(code="DL-101", name="Deep Learning"), CourseFactory(code="CV-201")
    dl.teachers.add(ada)
    cv.teachers.add(eve)
    dot = UserFactory(username="dot", role="student", email="dot@uni.example")
    EnrollmentFactory(user=dot, course=cv)
    UserFactory(username="cy", role="student")
    UserFactory(username="root", role="admin")
    return {"dl": dl, "cv": cv, "ada": ada, "dot": dot}


def api(username: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=User.objects.get(username=username))}")
    return client


def signed_in(username: str) -> Client:
    client = Client()
    assert client.login(username=username, password=PASSWORD)
    return client


def roster_file() -> SimpleUploadedFile:
    return SimpleUploadedFile("roster.csv", ROSTER.encode(), "text/csv")


def places(course) -> dict[str, tuple[str, str]]:
    return {e.user.username: (e.role, e.source) for e in Enrollment.objects.filter(course=course)}


def ask_dot(django_capture_on_commit_callbacks) -> RosterInvitation:
    """ada imports the roster through the API; dot is asked, eli gets an account (and is enrolled)."""
    with django_capture_on_commit_callbacks(execute=True):
        response = api("ada").post("/api/v1/courses/DL-101/roster/", {"csv": ROSTER}, format="json")
    assert response.status_code == 200, response.json()
    return RosterInvitation.objects.get(user__username="dot", consent=True)


def test_a_teachers_import_asks_an_existing_student_and_enrols_nobody_until_they_answer(
    courses, django_capture_on_commit_callbacks
):
    invitation = ask_dot(django_capture_on_commit_callbacks)
    assert places(courses["dl"]) == {"eli": ("student", "roster")}  # the new account only: dot is not in DL-101
    assert invitation.role == "assistant" and invitation.answer == "" and invitation.used_at is None
    assert invitation.token_hash is None and invitation.sent_by == courses["ada"]
    # Told by e-mail, with the page's link ...
    (asked,) = [message for message in mail.outbox if message.to == ["dot@uni.example"]]
    assert asked.subject == "GPU Lab: ada asks you to join DL-101"
    assert "You are not in the course unless you accept" in asked.body
    assert f"http://testserver/invitations/{invitation.pk}/" in asked.body
    assert "/invite/" not in asked.body  # no sign-in link: dot signs in as herself
    # ... by a notice, and on her dashboard.
    notice = Notice.objects.get(user=courses["dot"])
    assert notice.text.startswith("ada asks you to join DL-101 (Deep Learning). You are not in it unless you accept")
    dashboard = signed_in("dot").get("/").content.decode()
    assert 'data-testid="invitations"' in dashboard and f'href="/invitations/{invitation.pk}/"' in dashboard
    # The roster page shows dot as waiting, not as a member.
    roster = signed_in("ada").get("/courses/DL-101/roster/").content.decode()
    assert "1 person asked to join, not enrolled yet" in roster
    assert 'data-testid="roster-waiting"' in roster and '<tr data-username="dot">' in roster
    # dot sees nothing of DL-101 yet: not among her courses.
    assert [c["code"] for c in api("dot").get("/api/v1/me/").json()["courses"]] == ["CV-201"]


def test_the_preview_says_who_is_enrolled_at_once_and_who_waits_for_consent(courses):
    page = signed_in("ada").post("/courses/DL-101/roster/preview/", {"file": roster_file()})
    assert page.status_code == 200
    html = page.content.decode()
    assert "<strong>1</strong> enrolled at once (0 added · 1 invited by e-mail)" in html
    assert "<strong>1</strong> wait for their consent" in html
    enrolled = html[html.index("<h2>Enrolled at once</h2>") : html.index("<h2>Waiting for their consent</h2>")]
    waiting = html[html.index("<h2>Waiting for their consent</h2>") :]
    assert "Line 3: eli" in enrolled and "dot" not in enrolled
    assert "<li>Line 2: dot (teaching assistant)</li>" in waiting
    assert "they are not enrolled now" in waiting and "joins DL-101 only if they accept" in waiting
    preview = api("ada").post("/api/v1/courses/DL-101/roster/preview/", {"csv": ROSTER}, format="json").json()
    assert preview["add"] == [] and [row["username"] for row in preview["invite"]] == ["eli"]
    assert preview["consent"] == [{"line": 2, "username": "dot", "email": "", "role": "assistant", "waiting": False}]
    assert places(courses["dl"]) == {} and not RosterInvitation.objects.exists()  # a preview writes nothing


def test_accepting_enrols_them_as_the_roster_said(courses, django_capture_on_commit_callbacks):
    invitation = ask_dot(django_capture_on_commit_callbacks)
    dot = signed_in("dot")
    page = dot.get(f"/invitations/{invitation.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Join DL-101?" in html and "You would be its teaching assistant." in html
    assert 'data-testid="invitation-accept"' in html and 'data-testid="invitation-decline"' in html
    response = dot.post(f"/invitations/{invitation.pk}/", {"decision": "accept"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert "You are now in DL-101." in dot.get("/").content.decode()
    assert places(courses["dl"]) == {"dot": ("assistant", "roster"), "eli": ("student", "roster")}
    invitation.refresh_from_db()
    assert invitation.answer == "accepted" and invitation.used_at is not None
    assert Notice.objects.filter(user=courses["ada"], text="dot accepted your invitation and is now in DL-101.")
    assert not Notice.objects.filter(user=courses["dot"], read_at__isnull=True).exists()  # the request's notice
    # Answered: the page says so, and a second answer changes nothing (409).
    assert "This invitation is closed: accepted." in dot.get(f"/invitations/{invitation.pk}/").content.decode()
    again = dot.post(f"/invitations/{invitation.pk}/", {"decision": "decline"})
    assert again.status_code == 409 and "already answered" in again.content.decode()
    assert places(courses["dl"])["dot"] == ("assistant", "roster")


def test_declining_enrols_nobody(courses, django_capture_on_commit_callbacks):
    invitation = ask_dot(django_capture_on_commit_callbacks)
    dot = signed_in("dot")
    response = dot.post(f"/invitations/{invitation.pk}/", {"decision": "decline"})
    assert response.status_code == 302
    assert "You declined to join DL-101; nothing changed." in dot.get("/").content.decode()
    assert "dot" not in places(courses["dl"])
    invitation.refresh_from_db()
    assert invitation.answer == "declined"
    assert Notice.objects.filter(user=courses["ada"], text="dot declined your invitation to DL-101.")
    assert 'data-testid="invitations"' not in dot.get("/").content.decode()
    assert dot.post(f"/invitations/{invitation.pk}/", {"decision": "accept"}).status_code == 409
    assert "dot" not in places(courses["dl"])


def test_a_request_left_to_expire_enrols_nobody(courses, django_capture_on_commit_callbacks, frozen_now, settings):
    settings.ROSTER_CONSENT_TTL_HOURS = 48
    invitation = ask_dot(django_capture_on_commit_callbacks)
    frozen_now(invitation.created_at + dt.timedelta(hours=48, seconds=1))
    dot = signed_in("dot")
    assert 'data-testid="invitations"' not in dot.get("/").content.decode()
    page = dot.get(f"/invitations/{invitation.pk}/")
    assert page.status_code == 200 and 'data-testid="invitation-expired"' in page.content.decode()
    refused = dot.post(f"/invitations/{invitation.pk}/", {"decision": "accept"})
    assert refused.status_code == 409 and "expired" in refused.content.decode()
    assert "dot" not in places(courses["dl"])
    invitation.refresh_from_db()
    assert invitation.answer == "" and invitation.used_at is None
    # The roster page no longer counts it as waiting; a new import asks again.
    assert 'data-testid="roster-waiting"' not in signed_in("ada").get("/courses/DL-101/roster/").content.decode()


def test_an_answer_that_is_neither_is_400_and_changes_nothing(courses, django_capture_on_commit_callbacks):
    invitation = ask_dot(django_capture_on_commit_callbacks)
    response = signed_in("dot").post(f"/invitations/{invitation.pk}/", {"decision": "maybe"})
    assert response.status_code == 400 and "Choose Accept or Decline." in response.content.decode()
    invitation.refresh_from_db()
    assert invitation.used_at is None and "dot" not in places(courses["dl"])


@pytest.mark.parametrize("who", ["anonymous", "cy", "ada", "eve", "root", "unknown-id"])
def test_only_the_person_asked_may_see_or_answer(courses, django_capture_on_commit_callbacks, who):
    """Anyone but dot (another student, the teacher who asked, another teacher, an admin) gets 404 on her request,
    as on one that does not exist; the signed-out are sent to sign in."""
    invitation = ask_dot(django_capture_on_commit_callbacks)
    path = f"/invitations/{invitation.pk}/"
    if who == "anonymous":
        client = Client()
        for response in (client.get(path), client.post(path, {"decision": "accept"})):
            assert response.status_code == 302 and response["Location"].startswith("/login/")
    else:
        client = signed_in("dot" if who == "unknown-id" else who)
        path = "/invitations/999999/" if who == "unknown-id" else path
        assert client.get(path).status_code == 404
        assert client.post(path, {"decision": "accept"}).status_code == 404
    invitation.refresh_from_db()
    assert invitation.used_at is None and places(courses["dl"]) == {"eli": ("student", "roster")}


def test_an_admins_import_enrols_people_with_an_account_at_once(courses, django_capture_on_commit_callbacks):
    preview = api("root").post("/api/v1/courses/DL-101/roster/preview/", {"csv": ROSTER}, format="json").json()
    assert [row["username"] for row in preview["add"]] == ["dot"] and preview["consent"] == []
    with django_capture_on_commit_callbacks(execute=True):
        done = api("root").post("/api/v1/courses/DL-101/roster/", {"csv": ROSTER}, format="json")
    assert done.status_code == 200
    assert places(courses["dl"]) == {"dot": ("assistant", "roster"), "eli": ("student", "roster")}
    assert not RosterInvitation.objects.filter(consent=True).exists()
    assert [message.to for message in mail.outbox] == [["eli@uni.example"]]  # only the new account's link


def test_a_later_import_that_leaves_them_out_withdraws_the_request(courses, django_capture_on_commit_callbacks):
    invitation = ask_dot(django_capture_on_commit_callbacks)
    ada = api("ada")
    preview = ada.post("/api/v1/courses/DL-101/roster/preview/", {"csv": "username\neli\n"}, format="json").json()
    assert preview["withdraw"] == [{"username": "dot"}] and preview["consent"] == []
    assert ada.post("/api/v1/courses/DL-101/roster/", {"csv": "username\neli\n"}, format="json").status_code == 200
    invitation.refresh_from_db()
    assert invitation.answer == "withdrawn"
    dot = signed_in("dot")
    assert 'data-testid="invitations"' not in dot.get("/").content.decode()
    assert dot.post(f"/invitations/{invitation.pk}/", {"decision": "accept"}).status_code == 409
    assert "dot" not in places(courses["dl"])


def test_an_admin_enrolling_someone_asked_closes_the_request(courses, django_capture_on_commit_callbacks):
    invitation = ask_dot(django_capture_on_commit_callbacks)
    assert api("root").post("/api/v1/courses/DL-101/roster/", {"csv": ROSTER}, format="json").status_code == 200
    invitation.refresh_from_db()
    assert invitation.answer == "withdrawn" and places(courses["dl"])["dot"] == ("assistant", "roster")


def test_a_new_accounts_sign_in_link_leaves_its_requests_to_join_waiting(courses, django_capture_on_commit_callbacks):
    """eli got an account (and a sign-in link) from CV-201's roster; DL-101's roster then asks eli. Choosing a
    password with the link ends eli's other links, never the request to join."""
    eli = UserFactory(username="eli", role="student", email="eli@uni.example")
    eli.set_unusable_password()
    eli.save()
    EnrollmentFactory(user=eli, course=courses["cv"])
    _, link = invitation_create(user=eli, course=courses["cv"], by=None, link_base="http://testserver")
    with django_capture_on_commit_callbacks(execute=True):
        api("ada").post("/api/v1/courses/DL-101/roster/", {"csv": "username\neli\n"}, format="json")
    request = RosterInvitation.objects.get(user=eli, consent=True)
    token = re.search(r"/invite/([\w-]+)/", link).group(1)
    assert invitation_accept(token=token, password="long-enough-pass-1") is not None
    request.refresh_from_db()
    assert request.used_at is None
    client = Client()
    assert client.login(username="eli", password="long-enough-pass-1")
    assert client.post(f"/invitations/{request.pk}/", {"decision": "accept"}).status_code == 302
    assert places(courses["dl"]) == {"eli": ("student", "roster")}


def test_asking_again_while_a_request_waits_asks_once(courses, django_capture_on_commit_callbacks):
    first = ask_dot(django_capture_on_commit_callbacks)
    outbox, ada = len(mail.outbox), api("ada")
    same = ada.post("/api/v1/courses/DL-101/roster/preview/", {"csv": ROSTER}, format="json").json()
    assert same["consent"] == [{"line": 2, "username": "dot", "email": "", "role": "assistant", "waiting": True}]
    page = signed_in("ada").post("/courses/DL-101/roster/preview/", {"file": roster_file()})
    assert "already asked, not answered yet" in page.content.decode() and "nothing to import" in page.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        again = ada.post("/api/v1/courses/DL-101/roster/", {"csv": "username\ndot\neli\n"}, format="json")
    assert again.json()["consent"] == [{"line": 2, "username": "dot", "email": "", "role": "student", "waiting": False}]
    assert RosterInvitation.objects.filter(user__username="dot").count() == 1 and len(mail.outbox) == outbox
    first.refresh_from_db()
    assert first.role == "student" and first.used_at is None  # the latest file's role, still waiting for dot
    assert timezone.now() < first.expires_at
