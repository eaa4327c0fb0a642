"""Requests for more in Chromium: a student asks for more GPU-hours, the course's teacher approves, the student's
weekly GPU-hours grow, and when the override's time is up (the clock moved on, the periodic sweep run) it is over."""

from __future__ import annotations

import datetime as dt

import pytest
from playwright.sync_api import expect

from accounts.more_requests import more_requests_expire
from accounts.quotas import effective_quota
from tests.factories import PASSWORD, CourseFactory, EnrollmentFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sign_in(page, base: str, username: str) -> None:
    page.goto(base + "/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()


def test_student_asks_teacher_approves_and_the_override_expires(live_server, browser, page, frozen_now):
    start = frozen_now("2030-03-04 10:00")
    course = CourseFactory(code="DL101", term_start=dt.date(2030, 2, 1), term_end=dt.date(2030, 7, 1))
    teacher = UserFactory(username="tess", role="teacher")
    course.teachers.add(teacher)
    student = UserFactory(username="sam", role="student")
    EnrollmentFactory(user=student, course=course)
    weekly = effective_quota(student).gpu_hours_week

    # The student asks on the request form.
    sign_in(page, live_server.url, "sam")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Requests").click()
    page.get_by_test_id("ask").click()
    page.get_by_label("What you need").select_option("gpu_hours")
    page.get_by_label("GPU-hours").fill("15")
    page.get_by_label("Until (the last day)").fill("2030-03-06")
    page.get_by_label("For a course's work").select_option("DL101")
    page.get_by_label("Why").fill("Final project training runs.")
    page.get_by_role("button", name="Send the request").click()
    expect(page.get_by_test_id("requests-mine").get_by_test_id("status")).to_have_text("Waiting for a decision")

    # The teacher approves it, after a confirmation page that shows what was asked.
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    teacher_page = context.new_page()
    teacher_page.set_default_timeout(10_000)
    sign_in(teacher_page, live_server.url, "tess")
    teacher_page.goto(live_server.url + "/requests/")
    waiting = teacher_page.get_by_test_id("requests-waiting")
    expect(waiting).to_contain_text("sam")
    waiting.get_by_role("link", name="Approve, change or refuse").click()
    expect(teacher_page.get_by_test_id("request-summary")).to_contain_text("Final project training runs.")
    teacher_page.get_by_test_id("approve").click()
    expect(teacher_page.locator(".msg")).to_contain_text("Approved.")
    context.close()

    page.reload()
    expect(page.get_by_test_id("requests-mine").get_by_test_id("status")).to_have_text("Approved")
    assert effective_quota(student).gpu_hours_week == weekly + 15
    page.goto(live_server.url + "/jobs/new/")
    expect(page.get_by_test_id("quota")).to_contain_text(f"of {weekly + 15:.0f} GPU-hours left this week")

    # Time moves past its end (the last day asked for); the periodic sweep closes it and the student sees it over.
    frozen_now(start + dt.timedelta(days=3))
    assert more_requests_expire()["ended"] == 1
    sign_in(page, live_server.url, "sam")  # days later: a new session
    page.goto(live_server.url + "/requests/")
    expect(page.get_by_test_id("requests-mine").get_by_test_id("status")).to_have_text("Expired")
    page.goto(live_server.url + "/jobs/new/")
    expect(page.get_by_test_id("quota")).to_contain_text(f"of {weekly:.0f} GPU-hours left this week")
