"""Budget alerts: a notice and an e-mail (through a real SMTP server on loopback) at each threshold, once each per
budget and period, however many checks run, one after the other or at the same time."""

from __future__ import annotations

import datetime as dt
import threading
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Notice
from labs.budgets.alerts import budgets_check
from labs.budgets.services import budgets_guard
from labs.ledger import Ref, allocations_close
from labs.models import Budget, BudgetAlert, GpuMinute
from tests.labs.budgets.conftest import held, local
from tests.mail import SmtpServer

pytestmark = pytest.mark.django_db


def dl101_budget(people, **kw) -> Budget:
    course = people["course"]
    fields = {
        "name": "DL-101 winter term",
        "course": course,
        "starts_on": course.term_start,
        "ends_on": course.term_end,
        "gpu_hours": Decimal("10"),
        "on_exceed": "block",
    }
    return Budget.objects.create(**(fields | kw))


def use(people, gpu, hours: float, *, day: int = 2) -> None:
    held(people["student"], gpu, course=people["course"], start=local(f"2026-11-{day:02d} 08:00"), hours=hours)


def subjects(messages) -> list[str]:
    return sorted(" ".join(str(message["Subject"]).split()) for message in messages)


def test_each_threshold_arrives_once_as_a_notice_and_an_email(people, gpu, now, smtp_server):
    budget = dl101_budget(people, price_per_gpu_hour=Decimal("1.50"))
    assert budgets_check(now=now) == {"budgets": 1, "alerts": 0, "failed": 0}  # nothing used yet
    use(people, gpu, 5.5)
    assert budgets_check(now=now)["alerts"] == 1
    assert budgets_check(now=now)["alerts"] == 0  # the second check tells nobody
    use(people, gpu, 3, day=3)
    budgets_check(now=now)
    budgets_check(now=now)
    use(people, gpu, 2, day=4)
    budgets_check(now=now)
    budgets_check(now=now)
    for address in ("tess@lab.example", "root@lab.example"):  # the course's teacher and the lab's admin
        assert subjects(smtp_server.to(address)) == [
            "[GPU Lab] Budget “DL-101 winter term” at 100 %",
            "[GPU Lab] Budget “DL-101 winter term” at 50 %",
            "[GPU Lab] Budget “DL-101 winter term” at 80 %",
        ]
    assert not smtp_server.to("ada@lab.example")  # a course budget's alerts go to its teachers and the admins
    assert len(smtp_server.messages) == 6
    last = [m for m in smtp_server.to("tess@lab.example") if "100 %" in str(m["Subject"])][0]
    body = last.get_content()
    assert "10.5 of 10.0 GPU-hours from 2026-10-01 to 2027-01-31" in body
    assert "Cost so far: 15.75 EUR." in body
    assert "New notebooks and jobs that count against it are refused until 2027-02-01." in body
    notices = Notice.objects.filter(user=people["teacher"]).order_by("created_at", "id")
    assert [n.text.split(":")[0] for n in notices] == [
        "Budget “DL-101 winter term” (course DL-101) has reached 50 %",
        "Budget “DL-101 winter term” (course DL-101) has reached 80 %",
        "Budget “DL-101 winter term” (course DL-101) has reached 100 %",
    ]
    assert Notice.objects.filter(user=people["admin"]).count() == 3
    assert not Notice.objects.filter(user=people["student"]).exists()
    assert sorted(BudgetAlert.objects.filter(budget=budget).values_list("threshold", "emails")) == [
        (50, 2),
        (80, 2),
        (100, 2),
    ]


def test_the_check_reads_energy_only_for_an_alert_it_tells(people, gpu, now, smtp_server):
    dl101_budget(people, price_per_gpu_hour=Decimal("1.00"), price_per_kwh=Decimal("0.50"))
    start = local("2026-11-17 08:00")
    use(people, gpu, 1, day=17)  # 10 % (no alert), 08:00 to 09:00 on the 17th
    for minute in range(60):
        GpuMinute.objects.create(gpu=gpu, minute=start + dt.timedelta(minutes=minute), samples=60, power_avg_w=600)
    telemetry = GpuMinute._meta.db_table
    with CaptureQueriesContext(connection) as quiet:
        assert budgets_check(now=now)["alerts"] == 0
    assert not [query for query in quiet.captured_queries if telemetry in query["sql"]]
    use(people, gpu, 5)  # 60 %: told, with the energy in its cost
    assert budgets_check(now=now)["alerts"] == 1
    body = smtp_server.to("tess@lab.example")[0].get_content()
    assert "6.0 of 10.0 GPU-hours" in body and "Cost so far: 6.30 EUR." in body  # 6 GPU-h + 0.6 kWh at 0.50


def test_just_under_100_percent_is_not_told_as_100_while_work_still_starts(people, gpu, now, smtp_server):
    budget = dl101_budget(people, gpu_hours=Decimal("1000"), thresholds="100")
    start = local("2026-10-02 00:00").astimezone(dt.UTC)  # in UTC: 999.96 hours of real time across the DST change
    held(people["student"], gpu, course=people["course"], start=start, hours=999.96)
    budgets_guard(user=people["student"], course=people["course"], now=now)  # not refused: 0.04 GPU-hours left
    assert budgets_check(now=now)["alerts"] == 0
    assert not smtp_server.messages and not BudgetAlert.objects.exists()
    held(people["student"], gpu, course=people["course"], start=local("2026-11-17 08:00"), hours=0.04)  # 1000.00
    assert budgets_check(now=now)["alerts"] == 1
    assert subjects(smtp_server.to("tess@lab.example")) == ["[GPU Lab] Budget “DL-101 winter term” at 100 %"]
    assert list(BudgetAlert.objects.filter(budget=budget).values_list("threshold", flat=True)) == [100]


def test_a_jump_past_several_thresholds_tells_the_highest_only(people, gpu, now, smtp_server):
    dl101_budget(people)
    use(people, gpu, 9)  # 90 %: past 50 and 80 at once
    budgets_check(now=now)
    assert subjects(smtp_server.to("tess@lab.example")) == ["[GPU Lab] Budget “DL-101 winter term” at 80 %"]
    assert sorted(BudgetAlert.objects.values_list("threshold", "emails")) == [(50, 0), (80, 2)]
    assert Notice.objects.filter(user=people["teacher"]).count() == 1


def test_a_persons_budget_alerts_the_person_and_the_admins_at_its_own_thresholds(people, gpu, now, smtp_server):
    Budget.objects.create(
        name="Ada's November",
        user=people["student"],
        period="month",
        starts_on=dt.date(2026, 1, 1),
        gpu_hours=Decimal("4"),
        thresholds="25,75",
    )
    held(people["student"], gpu, start=local("2026-11-02 08:00"), hours=1.5)  # 37.5 %
    budgets_check(now=now)
    assert subjects(smtp_server.to("ada@lab.example")) == ["[GPU Lab] Budget “Ada's November” at 25 %"]
    assert subjects(smtp_server.to("root@lab.example")) == ["[GPU Lab] Budget “Ada's November” at 25 %"]
    assert not smtp_server.to("tess@lab.example")
    notice = Notice.objects.get(user=people["student"])
    assert "has reached 25 %: 1.5 of 4.0 GPU-hours in November 2026" in notice.text


def test_the_lab_default_thresholds_come_from_the_setting(people, gpu, now, smtp_server, settings):
    settings.BUDGET_ALERT_THRESHOLDS = "10,90"
    dl101_budget(people)
    use(people, gpu, 2)
    budgets_check(now=now)
    assert subjects(smtp_server.to("tess@lab.example")) == ["[GPU Lab] Budget “DL-101 winter term” at 10 %"]


def test_a_mail_server_that_refuses_leaves_nothing_recorded_and_the_next_check_tells(people, gpu, now, settings):
    dl101_budget(people)
    use(people, gpu, 6)
    down = SmtpServer()  # a free port nobody listens on
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_USE_TLS = "127.0.0.1", down.port, False
    assert budgets_check(now=now)["failed"] == 1
    assert not BudgetAlert.objects.exists() and not Notice.objects.exists()
    server = down.start()
    try:
        assert budgets_check(now=now) == {"budgets": 1, "alerts": 1, "failed": 0}
        assert len(server.messages) == 2 and Notice.objects.count() == 2
    finally:
        server.stop()


def test_a_refused_address_costs_only_its_own_email_and_the_others_get_one(people, gpu, now, smtp_server):
    budget = dl101_budget(people)
    use(people, gpu, 6)
    smtp_server.refuse.add("tess@lab.example")  # the admin (root) is mailed first, then the teacher is refused
    assert budgets_check(now=now) == {"budgets": 1, "alerts": 1, "failed": 0}
    assert budgets_check(now=now) == {"budgets": 1, "alerts": 0, "failed": 0}
    assert subjects(smtp_server.to("root@lab.example")) == ["[GPU Lab] Budget “DL-101 winter term” at 50 %"]
    assert not smtp_server.to("tess@lab.example") and len(smtp_server.messages) == 1
    assert Notice.objects.filter(user=people["teacher"], text__contains="has reached 50 %").count() == 1
    assert list(BudgetAlert.objects.filter(budget=budget).values_list("threshold", "notices", "emails")) == [(50, 2, 1)]


def test_a_mail_server_that_refuses_everyone_leaves_nothing_recorded(people, gpu, now, smtp_server):
    dl101_budget(people)
    use(people, gpu, 6)
    smtp_server.refuse.update({"tess@lab.example", "root@lab.example"})
    assert budgets_check(now=now)["failed"] == 1
    assert not BudgetAlert.objects.exists() and not Notice.objects.exists()
    smtp_server.refuse.clear()
    assert budgets_check(now=now) == {"budgets": 1, "alerts": 1, "failed": 0}
    assert len(smtp_server.messages) == 2


def test_work_that_ends_is_checked_at_once(people, gpu, now, smtp_server, django_capture_on_commit_callbacks):
    dl101_budget(people)
    entry = held(people["student"], gpu, course=people["course"], start=now - dt.timedelta(hours=6), hours=None)
    assert not Notice.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        allocations_close(ref=Ref.parse(entry.ref), at=now)  # the job ended: 6 GPU-hours, 60 %
    assert subjects(smtp_server.to("tess@lab.example")) == ["[GPU Lab] Budget “DL-101 winter term” at 50 %"]
    assert Notice.objects.filter(user=people["teacher"], text__contains="has reached 50 %").count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_checks_at_the_same_time_tell_once(people, gpu, now, smtp_server):
    dl101_budget(people)
    use(people, gpu, 8.5)
    start = threading.Barrier(4)
    reports, errors = [], []

    def check():
        try:
            start.wait(timeout=10)
            reports.append(budgets_check(now=now))
        except Exception as exc:  # surfaced below
            errors.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=check) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert not errors and len(reports) == 4
    assert sum(report["alerts"] for report in reports) == 1
    assert subjects(smtp_server.messages) == ["[GPU Lab] Budget “DL-101 winter term” at 80 %"] * 2
    assert Notice.objects.filter(user=people["teacher"]).count() == 1
    assert sorted(BudgetAlert.objects.values_list("threshold", flat=True)) == [50, 80]
