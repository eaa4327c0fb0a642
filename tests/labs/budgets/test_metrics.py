"""/metrics gains GPU-hours per course (this week, and GPUs held now) and each budget's use, for the Grafana board."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from labs.models import Budget
from tests.labs.budgets.conftest import held, local

pytestmark = pytest.mark.django_db


def test_metrics_say_gpu_hours_per_course_and_budget_use(client, settings, people, gpu, now):
    settings.DEBUG = True  # /metrics is open in development
    course, ada = people["course"], people["student"]
    held(ada, gpu, course=course, start=local("2026-11-16 06:00"), hours=3)  # this week (Monday 16th): 3 h
    held(ada, gpu, course=course, start=local("2026-11-13 06:00"), hours=5)  # last week: term only
    held(ada, gpu, course=course, start=now - dt.timedelta(hours=1), hours=None, share="0.5")  # open: 0.5 h, 0.5 GPU
    Budget.objects.create(
        name="DL-101 term", course=course, starts_on=course.term_start, ends_on=course.term_end, gpu_hours=Decimal("17")
    )
    text = client.get("/metrics").content.decode()
    assert 'portal_course_gpu_hours_week{course="DL-101"} 3.5' in text
    assert 'portal_course_gpus_held{course="DL-101"} 0.5' in text
    labels = '{budget="' + str(Budget.objects.get().pk) + '",name="DL-101 term",scope="course DL-101"}'
    assert f"portal_budget_gpu_hours{labels} 17.0" in text
    assert f"portal_budget_used_gpu_hours{labels} 8.5" in text
    assert f"portal_budget_used_ratio{labels} 0.5" in text
