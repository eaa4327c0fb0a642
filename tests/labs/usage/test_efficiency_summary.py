"""Each person's weekly efficiency summary: idle GPU-hours and one hint, as a notice and an e-mail in their
language, once per week (labs.usage.summary)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core import mail
from django.utils import timezone

from accounts.models import Notice
from labs.models import HolderEfficiency
from labs.usage.summary import efficiency_summaries_send
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def local(text: str) -> dt.datetime:
    return timezone.make_aware(dt.datetime.fromisoformat(text))


MONDAY_8 = local("2026-11-23 08:00")  # the week of 16-22 November is summarised from 07:00 on
TUESDAY = local("2026-11-17 09:00")


def held(user, kind: str, *, hours: float, idle: float, start=TUESDAY) -> None:
    number = HolderEfficiency.objects.count() + 1
    HolderEfficiency.objects.create(
        holder_kind=kind,
        holder_ref=f"{kind}:{number}" + ("#1" if kind == "job" else ""),
        holder_id=number,
        user=user,
        started_at=start,
        ended_at=start + dt.timedelta(hours=hours),
        gpu_hours=hours,
        idle_gpu_hours=idle,
        computed_at=start + dt.timedelta(hours=hours),
    )


@pytest.fixture(autouse=True)
def locmem(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.USAGE_REPORT_HOUR = 7


def test_each_person_is_told_their_idle_gpu_hours_and_one_hint_once():
    idle_jobs = UserFactory(username="ida", email="ida@uni.example")
    notebooks = UserFactory(username="nia", email="nia@uni.example")
    busy = UserFactory(username="bo", email="")
    held(idle_jobs, "job", hours=4, idle=3)
    held(notebooks, "notebook", hours=6, idle=5)
    held(busy, "job", hours=10, idle=0.5)
    held(busy, "job", hours=5, idle=5, start=local("2026-11-23 06:00"))  # this week: not in last week's summary
    nobody = UserFactory(username="none", email="none@uni.example")
    counts = efficiency_summaries_send(now=MONDAY_8)
    assert counts == {"told": 3, "mailed": 2, "failed": 0}
    ida = Notice.objects.get(user=idle_jobs).text
    assert "4.0 GPU-hours, of which 3.0 idle (75 %)" in ida and "model.to('cuda')" in ida
    assert "stop a notebook when you step away" in Notice.objects.get(user=notebooks).text
    bo = Notice.objects.get(user=busy).text
    assert "10.0 GPU-hours, of which 0.5 idle (5 %)" in bo and "kept busy" in bo
    assert not Notice.objects.filter(user=nobody).exists()
    assert sorted(m.to[0] for m in mail.outbox) == ["ida@uni.example", "nia@uni.example"]
    assert "How your GPUs were used" in mail.outbox[0].subject
    # Once a week: a second run sends nothing.
    assert efficiency_summaries_send(now=MONDAY_8 + dt.timedelta(hours=1)) == {"told": 0, "mailed": 0, "failed": 0}
    assert len(mail.outbox) == 2


def test_nothing_before_the_report_hour_and_none_to_who_turned_mails_off():
    quiet = UserFactory(email="q@uni.example", usage_report_email=False)
    held(quiet, "job", hours=2, idle=0.5)
    assert efficiency_summaries_send(now=local("2026-11-23 06:00"))["told"] == 0
    assert efficiency_summaries_send(now=MONDAY_8) == {"told": 1, "mailed": 0, "failed": 0}
    assert "data" in Notice.objects.get(user=quiet).text  # 25 % idle: the DataLoader hint
    assert not mail.outbox


def test_the_summary_speaks_the_persons_language():
    person = UserFactory(email="p@uni.example", language="pt-br")
    held(person, "job", hours=2, idle=0)
    efficiency_summaries_send(now=MONDAY_8)
    assert mail.outbox[0].body.strip() == Notice.objects.get(user=person).text
    assert "2,0" in mail.outbox[0].body  # the person's number format (the catalogue is translated after merging)
