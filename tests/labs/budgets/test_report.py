"""The weekly usage summary: to each teacher (their courses) and admin (the lab) through a real SMTP server on
loopback, once per week, never to whoever turned it off on the account page."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from labs.budgets.report import usage_weekly_report
from labs.models import Allocation, Budget, UsageReportSent
from tests.factories import PASSWORD, CourseFactory, UserFactory
from tests.labs.budgets.conftest import held, local

pytestmark = pytest.mark.django_db
MONDAY_8 = "2026-11-23 08:00"  # the week of 16-22 November is reported from 07:00 (USAGE_REPORT_HOUR) on


@pytest.fixture
def week(people, gpu, frozen_now):
    now = frozen_now(MONDAY_8)
    course = people["course"]
    held(people["student"], gpu, course=course, start=local("2026-11-17 09:00"), hours=3)
    held(people["student"], gpu, course=course, start=local("2026-11-23 06:00"), hours=1)  # this week: not in it
    Budget.objects.create(
        name="DL-101 term", course=course, starts_on=course.term_start, ends_on=course.term_end, gpu_hours=Decimal("40")
    )
    return now


def test_teachers_and_admins_get_last_weeks_summary_once(people, week, smtp_server):
    quiet = UserFactory(username="quinn", role="teacher", email="quinn@lab.example")  # teaches nothing in term
    old = CourseFactory(code="OLD-1", term_start=dt.date(2025, 1, 1), term_end=dt.date(2025, 6, 30))
    old.teachers.add(quiet)
    UserFactory(username="nomail", role="admin", email="")
    assert usage_weekly_report(now=week) == {"sent": 2, "failed": 0}
    assert usage_weekly_report(now=week) == {"sent": 0, "failed": 0}  # once per week
    (teacher_mail,) = smtp_server.to("tess@lab.example")
    assert " ".join(str(teacher_mail["Subject"]).split()) == "[GPU Lab] GPU usage, week of 2026-11-16"
    body = teacher_mail.get_content()
    assert "GPU usage of GPU Lab in the week 2026-11-16 to 2026-11-22:" in body
    assert "DL-101 — Deep learning: 3.0 GPU-hours" in body
    assert "    ada: 3.0 GPU-hours (booked to DL-101)" in body
    assert "Budget “DL-101 term”: 4.0 of 40.0 GPU-hours (10.0 %) from 2026-10-01 to 2027-01-31" in body
    assert "Turn these e-mails off on your account page" in body
    (admin_mail,) = smtp_server.to("root@lab.example")
    assert "The lab: 3.0 GPU-hours of notebooks and jobs." in admin_mail.get_content()
    assert "  DL-101: 3.0 GPU-hours" in admin_mail.get_content()
    assert not smtp_server.to("ada@lab.example") and not smtp_server.to(quiet.email)
    assert UsageReportSent.objects.count() == 2


def test_the_lab_part_is_read_once_a_run_however_many_admins_and_courses(people, week, smtp_server):
    def ledger_reads() -> int:
        UsageReportSent.objects.all().delete()
        with CaptureQueriesContext(connection) as queries:
            usage_weekly_report(now=week)
        return sum(Allocation._meta.db_table in query["sql"] for query in queries.captured_queries)

    alone = ledger_reads()
    for number in range(2):
        UserFactory(username=f"admin{number}", role="admin", email=f"admin{number}@lab.example")
        CourseFactory(code=f"ML-{number}", term_start=dt.date(2026, 10, 1), term_end=dt.date(2027, 1, 31))
    assert ledger_reads() == alone
    bodies = [mail.get_content() for mail in smtp_server.to("admin1@lab.example")]
    assert "  DL-101: 3.0 GPU-hours" in bodies[0] and "  ML-1: 0.0 GPU-hours" in bodies[0]


def test_nothing_goes_out_before_the_report_hour_on_monday(people, gpu, frozen_now, smtp_server):
    assert usage_weekly_report(now=frozen_now("2026-11-23 06:59")) == {"sent": 0, "failed": 0}
    assert not smtp_server.messages


def test_the_account_page_turns_the_summary_off_and_on(people, week, smtp_server, client):
    assert client.login(username="tess", password=PASSWORD)
    page = client.get("/account/").content.decode()
    assert "Weekly usage e-mail" in page and "It goes to <strong>tess@lab.example</strong>" in page
    response = client.post("/account/", {"action": "reports"})  # the box unticked
    assert response.status_code == 302
    assert "no longer get the weekly usage summary" in client.get("/account/").content.decode()
    usage_weekly_report(now=week)
    assert not smtp_server.to("tess@lab.example") and len(smtp_server.to("root@lab.example")) == 1
    client.post("/account/", {"action": "reports", "usage_report_email": "yes"})
    usage_weekly_report(now=week)
    assert len(smtp_server.to("tess@lab.example")) == 1 and len(smtp_server.to("root@lab.example")) == 1


def test_students_have_no_weekly_summary_to_turn_off(people, client):
    assert client.login(username="ada", password=PASSWORD)
    assert "Weekly usage e-mail" not in client.get("/account/").content.decode()


def test_beat_runs_the_budget_check_and_the_weekly_report_by_name():
    from portal.celery import app

    app.loader.import_default_modules()
    tasks = {entry["task"] for entry in django_settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"labs.tasks.budgets_check", "labs.tasks.usage_weekly_report"} <= tasks
    assert {"labs.tasks.budgets_check", "labs.tasks.usage_weekly_report"} <= set(app.tasks)
