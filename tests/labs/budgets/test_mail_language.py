"""E-mails and notices go out in the recipient's language (issue 28), through the real SMTP server on loopback: the
language they chose on the account page, else the lab's (LANGUAGE_CODE), whoever's request or task sends them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import translation

from accounts.models import Notice
from labs.budgets.alerts import budgets_check
from labs.budgets.report import usage_weekly_report
from labs.models import Budget
from tests.labs.budgets.conftest import held, local

pytestmark = pytest.mark.django_db


def subject(message) -> str:
    return " ".join(str(message["Subject"]).split())


def test_a_budget_alert_reaches_each_person_in_their_language(people, gpu, now, smtp_server):
    people["teacher"].language = "pt-br"
    people["teacher"].save()
    course = people["course"]
    Budget.objects.create(
        name="DL-101", course=course, starts_on=course.term_start, ends_on=course.term_end, gpu_hours=Decimal("10")
    )
    held(people["student"], gpu, course=course, start=local("2026-11-02 08:00"), hours=5.5)
    with translation.override("en"):  # whatever the sender speaks (a task has no request)
        assert budgets_check(now=now)["alerts"] == 1
    (teacher_mail,) = smtp_server.to("tess@lab.example")
    (admin_mail,) = smtp_server.to("root@lab.example")
    assert subject(teacher_mail) == "[GPU Lab] Orçamento “DL-101” em 50 %"
    assert "chegou a 50 %: 5,5 de 10,0 horas de GPU de 01/10/2026 a 31/01/2027." in teacher_mail.get_content()
    assert "entre no portal" in teacher_mail.get_content()
    assert subject(admin_mail) == "[GPU Lab] Budget “DL-101” at 50 %"  # nothing chosen: the lab's language
    assert "5.5 of 10.0 GPU-hours from 2026-10-01 to 2027-01-31." in admin_mail.get_content()
    notices = dict(Notice.objects.values_list("user__username", "text"))
    assert notices["tess"].startswith("O orçamento “DL-101” (disciplina DL-101) chegou a 50 %")
    assert notices["root"].startswith("Budget “DL-101” (course DL-101) has reached 50 %")


def test_the_weekly_report_speaks_each_recipients_language(people, gpu, frozen_now, smtp_server):
    now = frozen_now("2026-11-23 08:00")
    people["admin"].language = "pt-br"
    people["admin"].save()
    held(people["student"], gpu, course=people["course"], start=local("2026-11-17 09:00"), hours=3)
    assert usage_weekly_report(now=now) == {"sent": 2, "failed": 0}
    (admin_mail,) = smtp_server.to("root@lab.example")
    (teacher_mail,) = smtp_server.to("tess@lab.example")
    assert subject(admin_mail) == "[GPU Lab] Uso de GPU, semana de 16/11/2026"
    body = admin_mail.get_content()
    assert "Uso de GPU do GPU Lab na semana de 16/11/2026 a 22/11/2026:" in body
    assert "O laboratório: 3,0 horas de GPU de notebooks e tarefas." in body
    assert "Desative estes e-mails" in body
    assert subject(teacher_mail) == "[GPU Lab] GPU usage, week of 2026-11-16"
    assert "    ada: 3.0 GPU-hours (booked to DL-101)" in teacher_mail.get_content()
    assert dt.date(2026, 11, 16)  # (the week reported: 16-22 November)
