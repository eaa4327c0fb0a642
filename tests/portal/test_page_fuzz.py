"""Every form of the pages, fuzzed as each role: hostile values in every field, never a 5xx, never half a write.

The pages come from the URL configuration (the role matrix's route discovery); each one a role may GET is read
for its <form>s and its links with a query (?week=), and each is sent ROUNDS times with values from a fixed
seed: NUL characters, 10k-character strings, deep unicode, dates at the calendar's edges, negative and huge
numbers, wrong types, missing fields. A refused request (4xx) changes no row.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from html.parser import HTMLParser
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.utils import timezone

from accounts.models import Notice, User
from jobs.models import Job
from labs.models import NotebookProfile, NotebookSession, Reservation
from tests.conftest import ROLES
from tests.factories import UserFactory
from tests.jobs.factories import ImageRuleFactory, JobFactory, lab
from tests.test_role_matrix import client_for, routes

pytestmark = pytest.mark.django_db

SEED = 20240611
ROUNDS = 12  # posts per form and role
SKIP_ACTIONS = ("/logout/",)  # posting it signs the client out, ending the round
HOSTILE = [
    "\x00",
    "a\x00b",
    "x" * 10_000,
    "𝕏\u0301\u0302\u0303" * 500,
    "\u202e\ufeff\ud7ff",
    "9999-12-31",
    "0001-01-01",
    "2030-02-30",
    "23:59",
    "25:61",
    "-1",
    "0",
    "99999999999999999999999999",
    "-99999999999999999999999999",
    "1e400",
    "NaN",
    "",
    " ",
    "null",
    "[]",
    '{"a": [[[[]]]]}',
    "<script>alert(1)</script>",
    "yes",
    "approve",
]
ROWS = (Reservation, Job, NotebookSession, NotebookProfile, Notice, User)


class FormReader(HTMLParser):
    """The forms of a page: action, method and field names, with the values of options, checkboxes and buttons."""

    def __init__(self):
        super().__init__()
        self.forms: list[dict] = []
        self._form: dict | None = None
        self._select: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and "?" in (attrs.get("href") or ""):
            # A link with a query (?week=, ?status=) is a GET form with those fields.
            url = urlsplit(attrs["href"])
            fields = {name: [value] for name, value in parse_qsl(url.query, keep_blank_values=True)}
            self.forms.append({"action": url.path, "method": "get", "fields": fields})
        elif tag == "form":
            self._form = {"action": attrs.get("action") or "", "method": (attrs.get("method") or "get").lower()}
            self._form["fields"] = {}
            self.forms.append(self._form)
        elif self._form is None:
            return
        elif tag in ("input", "textarea", "select", "button") and attrs.get("name"):
            options = self._form["fields"].setdefault(attrs["name"], [])
            if attrs.get("value") is not None:
                options.append(attrs["value"])
            self._select = attrs["name"] if tag == "select" else None
        elif tag == "option" and self._select and attrs.get("value") is not None:
            self._form["fields"][self._select].append(attrs["value"])

    def handle_endtag(self, tag):
        if tag == "form":
            self._form = None
        elif tag == "select":
            self._select = None


def page_forms(html: str, page: str) -> list[dict]:
    reader = FormReader()
    reader.feed(html)
    for form in reader.forms:
        form["action"] = form["action"] or page
    unique = {(form["action"], form["method"], tuple(sorted(form["fields"]))): form for form in reader.forms}
    return [form for form in unique.values() if not form["action"].startswith(SKIP_ACTIONS)]


def hostile_post(rng: random.Random, fields: dict[str, list[str]]) -> dict:
    data = {}
    for name, options in fields.items():
        if name == "csrfmiddlewaretoken" or rng.random() < 0.15:
            continue  # a missing field
        pick = rng.random()
        if options and pick < 0.35:
            data[name] = rng.choice(options)  # a value the page offers, so the post gets past the first field
        elif pick < 0.45:
            data[name] = [rng.choice(HOSTILE), rng.choice(HOSTILE)]  # two values for one field
        else:
            data[name] = rng.choice(HOSTILE)
    return data


def counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in ROWS}


@pytest.fixture
def objects():
    """Things whose pages have forms: a pending reservation and a queued job of the teacher's."""
    ImageRuleFactory()
    lab(3)
    teacher = UserFactory(username="teacher-matrix", role="teacher")
    start = timezone.now() + dt.timedelta(days=2)
    reservation = Reservation.objects.create(
        owner=teacher, created_by=teacher, title="DL", starts_at=start, ends_at=start + dt.timedelta(hours=2),
        status="pending",
    )  # fmt: skip
    job = JobFactory(owner=teacher)
    return {"reservation_id": reservation.pk, "job_id": job.pk, "notice_id": 1, "notebook_id": 1}


def page_paths(objects: dict) -> list[str]:
    paths = []
    for route in routes():
        if route.startswith(("api/", "o/")) or route in ("healthz", "readyz", "metrics"):
            continue
        path = re.sub(r"<int:(\w+)>", lambda m: str(objects.get(m.group(1), 999999)), route)
        path = re.sub(r"<(?:str|slug):\w+>", "no-such", path)
        paths.append("/" + path)
    return paths


@pytest.mark.parametrize("role", ROLES)
def test_every_form_takes_hostile_input_without_a_5xx_or_half_a_write(role, objects):
    client = client_for(role, api=False)
    rng = random.Random(f"{SEED}-{role}")
    posted = 0
    for page in page_paths(objects):
        response = client.get(page)
        assert response.status_code < 500, (role, page)
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            continue
        for form in page_forms(response.content.decode(), page):
            for _ in range(ROUNDS):
                data = hostile_post(rng, form["fields"])
                before = counts()
                answer = getattr(client, "post" if form["method"] == "post" else "get")(form["action"], data)
                posted += 1
                assert answer.status_code < 500, (role, form["action"], data)
                if 400 <= answer.status_code < 500:
                    assert counts() == before, (role, form["action"], data)
    print(f"page fuzzer: {role}: {posted} posts")
    if role != "anonymous":
        assert posted >= ROUNDS * 3, "the fuzzer found too few forms to mean anything"
