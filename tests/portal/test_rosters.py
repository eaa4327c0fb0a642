"""Course rosters: upload → preview → confirm on the pages and in the API, bad lines, export, invitations.

DL-101 is taught by ada; al (kept), bea (removed) and cas (made an assistant) are in it. The file lists al, cas as
assistant, dot (a known student: asked to join, enrolled only when dot accepts; an admin's import enrols dot) and eli
(unknown: an account and an invitation e-mail). The requests to join: tests/portal/test_roster_consent.py.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import re

import pytest
from django.core import mail
from django.core.files.uploadhandler import MemoryFileUploadHandler
from django.utils import timezone
from django.utils.html import escape
from rest_framework.test import APIClient

from accounts.invitations import invitation_create
from accounts.models import CourseRole, Enrollment, Notice, RosterInvitation, User
from accounts.services import token_issue
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, UserFactory

pytestmark = pytest.mark.django_db

ROSTER = (
    "username,email,first_name,last_name,role\n"
    "al,al@uni.example,Al,Ang,student\n"
    "cas,,Cas,Co,assistant\n"
    "dot,,,,\n"
    "eli,eli@uni.example,Eli,Eck,student\n"
)


@pytest.fixture
def dl():
    ada = UserFactory(username="ada", role="teacher")
    course = CourseFactory(code="DL-101", name="Deep Learning")
    course.teachers.add(ada)
    for name in ("al", "bea", "cas"):
        EnrollmentFactory(user=UserFactory(username=name, role="student", email=f"{name}@uni.example"), course=course)
    UserFactory(username="dot", role="student", email="dot@uni.example")
    return course


def roster_now(course) -> dict[str, str]:
    return dict(Enrollment.objects.filter(course=course).values_list("user__username", "role"))


BEFORE = {"al": "student", "bea": "student", "cas": "student"}
AFTER = {"al": "student", "cas": "assistant", "eli": "student"}  # dot is asked, not enrolled


def api(username: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(user=User.objects.get(username=username))}")
    return client


def upload(client, code: str, text: str | bytes, name: str = "roster.csv"):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = text.encode() if isinstance(text, str) else text
    return client.post(f"/courses/{code}/roster/preview/", {"file": SimpleUploadedFile(name, data, "text/csv")})


def link_in(body: str) -> str:
    return re.search(r"https?://\S+/invite/[\w-]+/", body).group(0)


# --- Preview and import on the pages ----------------------------------------------------------------------------


def test_the_preview_names_who_is_added_invited_changed_and_removed_and_writes_nothing(client, dl):
    assert client.login(username="ada", password=PASSWORD)
    page = upload(client, "DL-101", ROSTER)
    assert page.status_code == 200
    html = page.content.decode()
    assert "<strong>1</strong> enrolled at once (0 added · 1 invited by e-mail)" in html
    assert "<strong>1</strong> wait for their consent · <strong>1</strong> changed" in html
    assert "<strong>1</strong> removed · 1 unchanged" in html
    assert "<li>Line 4: dot</li>" in html and "Line 5: eli &lt;eli@uni.example&gt;" in html
    assert "cas becomes a teaching assistant" in html and "<li>bea</li>" in html
    assert roster_now(dl) == BEFORE and not User.objects.filter(username="eli").exists()


def test_confirming_imports_everything_and_invites_the_unknown(client, dl, django_capture_on_commit_callbacks):
    assert client.login(username="ada", password=PASSWORD)
    page = upload(client, "DL-101", ROSTER).content.decode()
    fingerprint = re.search(r'name="fingerprint" value="(\w+)"', page).group(1)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/courses/DL-101/roster/import/", {"roster": ROSTER, "fingerprint": fingerprint})
    assert response.status_code == 302 and response["Location"] == "/courses/DL-101/roster/"
    assert roster_now(dl) == AFTER
    html = client.get("/courses/DL-101/roster/").content.decode()
    assert "0 added, 1 invited by e-mail, 1 asked to join (enrolled when they accept), 1 changed, 1 removed" in html
    assert "invited, no password yet" in html and "Send the invitation again" in html
    assert "1 person asked to join, not enrolled yet" in html and '<tr data-username="dot">' in html
    eli = User.objects.get(username="eli")
    assert eli.role == "student" and not eli.has_usable_password() and eli.email == "eli@uni.example"
    message, asked = sorted(mail.outbox, key=lambda m: m.to)[::-1]
    assert asked.to == ["dot@uni.example"] and asked.subject == "GPU Lab: ada asks you to join DL-101"
    assert message.to == ["eli@uni.example"] and "DL-101" in message.subject
    token = link_in(message.body).rstrip("/").rsplit("/", 1)[1]
    invitation = RosterInvitation.objects.get(user=eli)
    assert invitation.token_hash == hashlib.sha256(token.encode()).hexdigest() and token not in invitation.token_hash
    assert abs(invitation.expires_at - invitation.created_at - dt.timedelta(hours=72)) < dt.timedelta(seconds=5)


def test_bad_lines_are_each_named_and_nothing_is_imported(client, dl):
    ada = User.objects.get(username="ada")
    bad = (
        "username,email,role\n"
        "al,,student\n"
        ",x@uni.example,student\n"  # 3: no username
        "fay,not-an-address,student\n"  # 4
        "gus,gus@uni.example,professor\n"  # 5
        "al,,student\n"  # 6: twice
        "hal,,student\n"  # 7: unknown, no e-mail
        "ada,,student\n"  # 8: a teacher
        "ivy,ivy@uni.example\n"  # 9: a cell short
        "jo,bea@uni.example,student\n"  # 10: someone else's e-mail
        "new,new@uni.example,student\n"  # fine on its own
    )
    assert client.login(username="ada", password=PASSWORD)
    page = upload(client, "DL-101", bad)
    assert page.status_code == 400
    html = page.content.decode()
    expected = [
        "Line 3: the username is empty.",
        "Line 4: &#x27;not-an-address&#x27; is not an e-mail address.",
        "Line 5: the role &#x27;professor&#x27; is neither student nor assistant.",
        "Line 6: al is listed twice (first on line 2).",
        "Line 7: hal is not known to the portal and has no e-mail to invite.",
        "Line 8: ada teaches DL-101; a roster lists students and teaching assistants.",
        "Line 9: 2 cells where the header names 3 columns.",
        "Line 10: bea@uni.example belongs to the account bea; list that username instead.",
    ]
    for line in expected:
        assert line in html, line
    assert "roster-confirm" not in html  # no Import button
    # The import itself refuses the same file whole, even when posted directly.
    response = client.post("/courses/DL-101/roster/import/", {"roster": bad})
    assert response.status_code == 400 and "8 bad lines; nothing was imported" in response.content.decode()
    response = api("ada").post("/api/v1/courses/DL-101/roster/", {"csv": bad}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid" and [p["line"] for p in body["problems"]] == [3, 4, 5, 6, 7, 8, 9, 10]
    assert roster_now(dl) == BEFORE
    assert not User.objects.filter(username="new").exists() and not RosterInvitation.objects.exists()
    assert ada.role == "teacher"


@pytest.mark.parametrize(
    "content,sentence",
    [
        (b"\xff\xfeu\x00s\x00", "is not UTF-8 text"),
        (b"", "Line 1: the file is empty"),
        (b"name,mail\nal,al@uni.example\n", "Line 1: unknown column &#x27;name&#x27;, &#x27;mail&#x27;"),
        (b'username\n"al\n', "cannot be read as CSV"),
    ],
)
def test_files_that_are_no_roster_are_refused_with_a_sentence(client, dl, content, sentence):
    assert client.login(username="ada", password=PASSWORD)
    response = upload(client, "DL-101", content)
    assert response.status_code == 400 and sentence in response.content.decode()
    assert roster_now(dl) == BEFORE


def test_a_file_too_large_is_refused(client, dl, settings):
    settings.ROSTER_MAX_BYTES = 1024
    assert client.login(username="ada", password=PASSWORD)
    response = upload(client, "DL-101", "username\n" + "x\n" * 1000)
    assert response.status_code == 400 and "larger than 1 KiB" in response.content.decode()


class Unread(io.BytesIO):
    def read(self, *args):
        raise AssertionError("the upload was read before its size was checked")


class UnreadUploads(MemoryFileUploadHandler):
    """Django's in-memory upload handler, whose files refuse to be read: a view may ask their size only."""

    def file_complete(self, file_size):
        uploaded = super().file_complete(file_size)
        uploaded.file = Unread(uploaded.file.getvalue())
        return uploaded


def test_a_file_too_large_is_refused_by_its_size_before_it_is_read(client, dl, settings):
    settings.ROSTER_MAX_BYTES = 1024
    settings.FILE_UPLOAD_HANDLERS = [f"{__name__}.UnreadUploads"]
    assert client.login(username="ada", password=PASSWORD)
    response = upload(client, "DL-101", "username\n" + "x\n" * 1000)
    assert response.status_code == 400 and "larger than 1 KiB" in response.content.decode()
    assert roster_now(dl) == BEFORE


def test_a_course_changed_since_the_preview_is_not_imported_blindly(client, dl):
    assert client.login(username="ada", password=PASSWORD)
    page = upload(client, "DL-101", ROSTER).content.decode()
    fingerprint = re.search(r'name="fingerprint" value="(\w+)"', page).group(1)
    EnrollmentFactory(user=UserFactory(username="kim", role="student"), course=dl)  # someone else added kim
    response = client.post("/courses/DL-101/roster/import/", {"roster": ROSTER, "fingerprint": fingerprint})
    assert response.status_code == 409
    html = response.content.decode()
    assert "The course changed since your preview" in html and "<li>kim</li>" in html  # the new preview
    assert roster_now(dl) == {**BEFORE, "kim": "student"}


def test_a_file_that_matches_changes_nothing(client, dl):
    assert client.login(username="ada", password=PASSWORD)
    page = upload(client, "DL-101", client.get("/courses/DL-101/roster.csv").content)
    assert page.status_code == 200 and "nothing to import" in page.content.decode()


# --- Export ------------------------------------------------------------------------------------------------------


def test_export_is_the_import_format(client, dl):
    Enrollment.objects.filter(user__username="cas").update(role=CourseRole.ASSISTANT)
    User.objects.filter(username="al").update(first_name="=cmd", last_name="Ang")
    assert client.login(username="ada", password=PASSWORD)
    response = client.get("/courses/DL-101/roster.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert 'filename="DL-101-roster.csv"' in response["Content-Disposition"]
    assert response.content.decode() == (
        "username,email,first_name,last_name,role\n"
        "cas,cas@uni.example,,,assistant\n"
        "al,al@uni.example,'=cmd,Ang,student\n"  # a name a spreadsheet would run as a formula
        "bea,bea@uni.example,,,student\n"
    )
    assert api("ada").get("/api/v1/courses/DL-101/roster/").content == response.content


def test_every_cell_a_spreadsheet_would_run_is_escaped_and_importing_the_export_back_changes_nothing(client, dl):
    """Usernames may start with - + @, e-mail addresses with + or =, names with anything: none reaches a spreadsheet
    as a formula, and the file still imports as the same roster."""
    al = User.objects.get(username="al")
    al.first_name, al.last_name, al.email = '=HYPERLINK("http://x")', "\tTab", "+al@uni.example"
    al.save()
    EnrollmentFactory(user=UserFactory(username="-2+3", role="student", email="=x@uni.example"), course=dl)
    EnrollmentFactory(user=UserFactory(username="@SUM", role="student", email="sum@uni.example"), course=dl)
    assert client.login(username="ada", password=PASSWORD)
    exported = client.get("/courses/DL-101/roster.csv").content.decode()
    assert exported == (
        "username,email,first_name,last_name,role\n"
        "'-2+3,'=x@uni.example,,,student\n"
        "'@SUM,sum@uni.example,,,student\n"
        'al,\'+al@uni.example,"\'=HYPERLINK(""http://x"")",\'\tTab,student\n'
        "bea,bea@uni.example,,,student\n"
        "cas,cas@uni.example,,,student\n"
    )
    preview = api("ada").post("/api/v1/courses/DL-101/roster/preview/", {"csv": exported}, format="json").json()
    assert preview["problems"] == []
    assert preview["add"] == preview["invite"] == preview["change"] == preview["remove"] == []


# --- Who may ------------------------------------------------------------------------------------------------------


def test_another_teacher_gets_404_and_an_admin_any_course(client, dl):
    UserFactory(username="eve", role="teacher")
    assert client.login(username="eve", password=PASSWORD)
    for path in ("/courses/DL-101/roster/", "/courses/DL-101/roster.csv"):
        assert client.get(path).status_code == 404
    assert upload(client, "DL-101", ROSTER).status_code == 404
    assert api("eve").post("/api/v1/courses/DL-101/roster/preview/", {"csv": ROSTER}, format="json").status_code == 404
    UserFactory(username="root", role="admin")
    response = api("root").post("/api/v1/courses/DL-101/roster/preview/", {"csv": ROSTER}, format="json")
    assert response.status_code == 200 and [r["username"] for r in response.json()["invite"]] == ["eli"]
    assert [r["username"] for r in response.json()["add"]] == ["dot"] and response.json()["consent"] == []
    assert roster_now(dl) == BEFORE


def test_the_api_previews_then_imports(dl, django_capture_on_commit_callbacks):
    client = api("ada")
    preview = client.post("/api/v1/courses/DL-101/roster/preview/", {"csv": ROSTER}, format="json").json()
    assert preview["add"] == [] and [r["username"] for r in preview["consent"]] == ["dot"]
    assert [(r["username"], r["role"]) for r in preview["change"]] == [("cas", "assistant")]
    assert preview["remove"] == [{"username": "bea", "role": "student"}] and preview["problems"] == []
    with django_capture_on_commit_callbacks(execute=True):
        done = client.post(
            "/api/v1/courses/DL-101/roster/", {"csv": ROSTER, "fingerprint": preview["fingerprint"]}, format="json"
        )
    assert done.status_code == 200 and done.json()["fingerprint"] == preview["fingerprint"]
    assert roster_now(dl) == AFTER and len(mail.outbox) == 2  # eli's link, dot's request
    # The same file again: nothing to do, nobody invited or asked twice.
    again = client.post("/api/v1/courses/DL-101/roster/", {"csv": ROSTER}, format="json").json()
    assert again["add"] == again["invite"] == again["remove"] == again["change"] == again["withdraw"] == []
    assert again["consent"] == [{"line": 4, "username": "dot", "email": "", "role": "student", "waiting": True}]
    assert len(mail.outbox) == 2 and RosterInvitation.objects.filter(user__username="dot").count() == 1


# --- The one-time link --------------------------------------------------------------------------------------------


def invite(dl, *, now=None) -> tuple[User, str]:
    person = UserFactory(username="eli", role="student", email="eli@uni.example")
    person.set_unusable_password()
    person.save()
    EnrollmentFactory(user=person, course=dl)
    _, link = invitation_create(
        user=person, course=dl, by=User.objects.get(username="ada"), link_base="http://testserver", now=now
    )
    return person, link.removeprefix("http://testserver")


def test_the_link_signs_in_once(client, dl):
    _, path = invite(dl)
    page = client.get(path)
    assert page.status_code == 200 and "You are in <strong>DL-101</strong>" in page.content.decode()
    # A mistyped password keeps the link working.
    response = client.post(path, {"new_password1": "long-enough-pass-1", "new_password2": "other"})
    assert response.status_code == 400 and client.get(path).status_code == 200
    response = client.post(path, {"new_password1": "long-enough-pass-1", "new_password2": "long-enough-pass-1"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert "Welcome, eli" in client.get("/").content.decode()
    # Used: the link is gone, for this browser and any other.
    other = client_class()
    for c in (client, other):
        gone = c.get(path)
        assert gone.status_code == 404 and escape("has been used or has expired") in gone.content.decode()
        assert c.post(path, {"new_password1": "x-9-long-pass", "new_password2": "x-9-long-pass"}).status_code == 404
    assert other.login(username="eli", password="long-enough-pass-1")


def client_class():
    from django.test import Client

    return Client()


def test_the_link_expires(client, dl, settings):
    settings.ROSTER_INVITE_TTL_HOURS = 72
    _, path = invite(dl, now=timezone.now() - dt.timedelta(hours=72, seconds=1))
    response = client.get(path)
    assert response.status_code == 404 and escape("has been used or has expired") in response.content.decode()
    response = client.post(path, {"new_password1": "long-enough-pass-1", "new_password2": "long-enough-pass-1"})
    assert response.status_code == 404
    assert not User.objects.get(username="eli").has_usable_password()


def test_a_second_invitation_ends_the_first(client, dl, django_capture_on_commit_callbacks):
    eli, first = invite(dl)
    assert client.login(username="ada", password=PASSWORD)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/courses/DL-101/roster/eli/invite/")
    assert response.status_code == 302
    assert "A new invitation is on its way to eli@uni.example" in client.get(response["Location"]).content.decode()
    second = link_in(mail.outbox[-1].body).removeprefix("http://testserver")
    client.logout()
    assert second != first and client.get(first).status_code == 404 and client.get(second).status_code == 200
    assert RosterInvitation.objects.filter(user=eli, used_at__isnull=True).count() == 1
    # Nobody waits under another name: 404.
    assert client.login(username="ada", password=PASSWORD)
    assert client.post("/courses/DL-101/roster/al/invite/").status_code == 404


def test_an_invitation_that_cannot_be_sent_tells_the_teacher(dl, settings, django_capture_on_commit_callbacks):
    from tests.mail import free_port

    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", free_port(), 5  # nobody there
    with django_capture_on_commit_callbacks(execute=True):
        done = api("ada").post("/api/v1/courses/DL-101/roster/", {"csv": ROSTER}, format="json")
    assert done.status_code == 200 and roster_now(dl) == AFTER  # the roster is in
    notices = sorted(Notice.objects.filter(user__username="ada").values_list("text", flat=True))
    assert "invitation e-mail to eli <eli@uni.example> for DL-101 could not be sent" in notices[1]
    assert notices[0].startswith("The e-mail asking dot to join DL-101 could not be sent")
    assert "they still find the request on their dashboard" in notices[0]


def test_a_teacher_or_admin_is_no_roster_line(dl):
    UserFactory(username="eve", role="teacher")
    UserFactory(username="root", role="admin")
    plan = api("ada").post(
        "/api/v1/courses/DL-101/roster/preview/", {"csv": "username\nal\neve\nroot\n"}, format="json"
    )
    assert plan.status_code == 200
    assert plan.json()["problems"] == [
        {"line": 3, "reason": "eve is a teacher; a roster lists students and teaching assistants."},
        {"line": 4, "reason": "root is an admin; a roster lists students and teaching assistants."},
    ]


def test_the_link_points_to_the_university_when_local_passwords_are_off(client, settings):
    settings.LOCAL_LOGIN = "off"
    settings.OIDC_PROVIDER_NAME = "Example University"
    course = CourseFactory()
    student = UserFactory(role="student", email="new@uni.example")
    _, link = invitation_create(user=student, course=course, by=None)
    path = link[link.index("/invite/") :]
    answer = client.get(path)
    assert answer.status_code == 403
    assert "Example University account, not a password" in answer.content.decode()
    answer = client.post(path, {"new_password1": "Long-enough-9", "new_password2": "Long-enough-9"})
    assert answer.status_code == 403
    student.refresh_from_db()
    assert not student.has_usable_password() or not student.check_password("Long-enough-9")
