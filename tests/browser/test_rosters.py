"""A teacher imports a course roster in the browser: upload, read the preview, confirm, see the roster."""

import pytest
from django.core import mail
from playwright.sync_api import expect

from accounts.models import Enrollment
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_upload_preview_and_confirm_a_roster(live_server, page):
    ada = UserFactory(username="ada", role="teacher")
    course = CourseFactory(code="DL-101", name="Deep Learning")
    course.teachers.add(ada)
    EnrollmentFactory(user=UserFactory(username="bea", role="student"), course=course)
    UserFactory(username="dot", role="student")
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))

    page.goto(live_server.url + "/login/")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_test_id("roster-link").click()
    expect(page.get_by_role("heading", name="Roster of DL-101")).to_be_visible()
    expect(page.locator("tr[data-username=bea]")).to_contain_text("student")

    roster = b"username,email,role\ndot,,assistant\neli,eli@uni.example,student\n"
    page.get_by_test_id("roster-file").set_input_files(
        files=[{"name": "dl101.csv", "mimeType": "text/csv", "buffer": roster}]
    )
    page.get_by_test_id("roster-preview").click()
    expect(page.get_by_role("heading", name="Import this roster into DL-101?")).to_be_visible()
    expect(page.get_by_test_id("summary")).to_contain_text(
        "1 enrolled at once (0 added · 1 invited by e-mail) · 1 wait for their consent · 0 changed · 1 removed"
    )
    expect(page.get_by_test_id("invited")).to_have_text("Line 3: eli <eli@uni.example>")
    expect(page.get_by_test_id("consent")).to_have_text("Line 2: dot (teaching assistant)")
    expect(page.get_by_test_id("consent-why")).to_contain_text("joins DL-101 only if they accept")
    expect(page.get_by_test_id("removed")).to_have_text("bea")
    assert set(Enrollment.objects.values_list("user__username", flat=True)) == {"bea"}  # nothing yet

    page.get_by_test_id("roster-confirm").click()
    expect(page.get_by_role("status")).to_contain_text(
        "Roster of DL-101 imported: 0 added, 1 invited by e-mail, 1 asked to join (enrolled when they accept), "
        "0 changed, 1 removed."
    )
    expect(page.locator("[data-testid=roster-waiting] tr[data-username=dot]")).to_contain_text("teaching assistant")
    expect(page.locator("[data-testid=roster] tr[data-username=dot]")).to_have_count(0)
    expect(page.locator("tr[data-username=eli]")).to_contain_text("invited, no password yet")
    expect(page.locator("tr[data-username=bea]")).to_have_count(0)
    assert [m.to for m in mail.outbox] == [["eli@uni.example"]]  # dot has no address: her dashboard asks her
    assert set(Enrollment.objects.values_list("user__username", flat=True)) == {"eli"}

    # dot answers on her dashboard, signed in as herself.
    page.context.clear_cookies()
    page.goto(live_server.url + "/login/")
    page.get_by_label("Username").fill("dot")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_test_id("invitations")).to_contain_text("DL-101, asked by ada")
    page.get_by_role("link", name="Accept or decline").click()
    expect(page.get_by_role("heading", name="Join DL-101?")).to_be_visible()
    page.get_by_test_id("invitation-accept").click()
    expect(page.get_by_role("status")).to_contain_text("You are now in DL-101.")
    expect(page.get_by_test_id("invitations")).to_have_count(0)
    assert Enrollment.objects.get(user__username="dot").role == "assistant"
    assert errors == []


def test_bad_lines_are_shown_and_nothing_changes(live_server, page):
    ada = UserFactory(username="ada", role="teacher")
    course = CourseFactory(code="DL-101")
    course.teachers.add(ada)
    page.goto(live_server.url + "/login/")
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.goto(live_server.url + "/courses/DL-101/roster/")
    page.get_by_test_id("roster-file").set_input_files(
        files=[{"name": "r.csv", "mimeType": "text/csv", "buffer": b"username,role\nfay,professor\n,student\n"}]
    )
    page.get_by_test_id("roster-preview").click()
    expect(page.get_by_role("heading", name="The roster has bad lines")).to_be_visible()
    expect(page.get_by_test_id("problems")).to_contain_text("Line 2: the role 'professor' is neither")
    expect(page.get_by_test_id("problems")).to_contain_text("Line 3: the username is empty.")
    expect(page.get_by_test_id("roster-confirm")).to_have_count(0)
    assert not Enrollment.objects.exists()
