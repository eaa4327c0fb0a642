"""Numbers follow the page's language (issue 28): 1.234,5 in Brazilian Portuguese, 1,234.5 in English — GPU-hours,
costs in the lab's currency and percentages on the usage pages, and the `num` filter the usage tables use."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pytest
from django.template import Context, Template
from django.test import Client
from django.utils import translation

from labs.models import Budget
from tests.factories import PASSWORD
from tests.labs.usage.conftest import entry

pytestmark = pytest.mark.django_db
HOURS = 1234.5


@pytest.fixture
def busy(frozen_now, lab, settings):
    """Alice used 1,234.5 GPU-hours for DL-101, whose budget prices a GPU-hour at 1.50 BRL."""
    settings.LAB_CURRENCY = settings.USAGE_CURRENCY = "BRL"
    frozen_now(lab.now)
    entry(lab.alice, lab.gpus[0], lab.now - dt.timedelta(hours=HOURS), lab.now, course=lab.course)
    Budget.objects.create(
        name="DL-101 term",
        course=lab.course,
        period="term",
        starts_on=dt.date(2026, 1, 1),
        ends_on=lab.course.term_end,
        gpu_hours=Decimal("2000"),
        price_per_gpu_hour=Decimal("1.50"),
    )
    return lab


def page(user, path: str, language: str, **query) -> str:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    response = client.get(path, query, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize(
    ("language", "total", "cost", "pct"),
    [
        ("pt-BR", "1.234,50", ["1.234,5", "2.000,0", "1.851,75 BRL"], "61,7 %"),
        ("en", "1,234.50", ["1,234.5", "2,000.0", "1,851.75 BRL"], "61.7 %"),
    ],
)
def test_gpu_hours_costs_and_percentages_follow_the_language(busy, language, total, cost, pct):
    mine = page(busy.alice, "/usage/", language)
    assert re.search(r'data-testid="total">([^<]+)<', mine).group(1) == total
    course = page(busy.teacher, "/usage/courses/", language, course="DL-101", **{"from": "2026-01-01"})
    cells = re.findall(r'<td class="num">([^<]+)</td>', course[course.index('data-testid="budgets"') :])
    assert cells[:3] == cost  # used GPU-hours, the budget's, the cost in the lab's currency
    assert re.search(r'data-testid="budget-pct">([^<]+?)(?:<| <)', course).group(1) == pct


@pytest.mark.parametrize(
    ("language", "shown"), [("pt-br", "1.234,5 · 12 · 0,25 · ana"), ("en", "1,234.5 · 12 · 0.25 · ana")]
)
def test_the_num_filter_writes_numbers_as_the_language_does(language, shown):
    template = Template("{% load timefmt %}{{ a|num }} · {{ b|num }} · {{ c|num }} · {{ d|num }}")
    with translation.override(language):
        assert template.render(Context({"a": 1234.5, "b": 12, "c": 0.25, "d": "ana"})) == shown
