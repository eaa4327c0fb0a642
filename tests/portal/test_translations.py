"""Issue 28: the portal speaks Brazilian Portuguese and English.

The catalogue (locale/pt_BR) is complete and current: every msgid has a msgstr, none is fuzzy, and its msgids are the
ones the code marks today (a new string, marked or changed, fails here until it is translated). Each role's pages
under Accept-Language pt-BR show none of a list of English UI words, and under English none of a list of
Portuguese ones; a person's chosen language beats the browser's; the API's sentences follow Accept-Language.
(E-mails in the recipient's language: tests/labs/budgets/test_mail_language.py; time formats: test_timefmt.py.)
"""

from __future__ import annotations

import ast
import re
import shutil
from html import unescape
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse

from accounts.permissions import RESERVATIONS_STAFF_ONLY
from tests.factories import CourseFactory, EnrollmentFactory, NodeFactory, UserFactory
from tests.ui_words import ENGLISH_UI, PORTUGUESE_UI, found

LOCALE = Path(settings.BASE_DIR) / "locale"
DOMAINS = ("django", "djangojs")
# What scripts/makemessages.sh reads (it ignores tests, sdk, deploy, bench and what is built).
MARKED = ("accounts", "labs", "jobs", "portal", "templates", "static", "manage.py")
needs_gettext = pytest.mark.skipif(
    not shutil.which("xgettext"), reason="Debian's gettext (scripts/test.sh installs it)"
)


def catalogue(path: Path) -> list[dict]:
    """The entries of a .po file: ctxt, id, plural, strs (a list), flags. The header (msgid "") is left out."""
    entries, entry, field = [], None, None
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if not line.strip():
            if entry and entry["id"]:
                entries.append(entry)
            entry, field = None, None
            continue
        entry = entry or {"ctxt": None, "id": "", "plural": None, "strs": [], "flags": ""}
        if line.startswith("#,"):
            entry["flags"] += line
        elif line.startswith("#"):
            continue
        elif match := re.match(r'^(msgctxt|msgid_plural|msgid|msgstr(?:\[\d+\])?) (".*")$', line):
            name, value = match[1], ast.literal_eval(match[2])
            if name.startswith("msgstr"):
                entry["strs"].append(value)
                field = ("strs", len(entry["strs"]) - 1)
            else:
                key = {"msgctxt": "ctxt", "msgid": "id", "msgid_plural": "plural"}[name]
                entry[key] = value
                field = (key, None)
        elif line.startswith('"'):
            key, index = field
            if index is None:
                entry[key] += ast.literal_eval(line)
            else:
                entry[key][index] += ast.literal_eval(line)
    return entries


def keys(entries) -> set[tuple]:
    return {(e["ctxt"], e["id"], e["plural"]) for e in entries}


@pytest.mark.parametrize("domain", DOMAINS)
def test_every_msgid_has_its_portuguese_and_none_is_fuzzy(domain):
    entries = catalogue(LOCALE / "pt_BR" / "LC_MESSAGES" / f"{domain}.po")
    assert len(entries) > (500 if domain == "django" else 30)
    assert [e["id"] for e in entries if "fuzzy" in e["flags"]] == []
    assert [e["id"] for e in entries if not e["strs"] or not all(s.strip() for s in e["strs"])] == []
    assert "fuzzy" not in (LOCALE / "pt_BR" / "LC_MESSAGES" / f"{domain}.po").read_text(encoding="utf-8")


@needs_gettext
def test_the_catalogue_holds_exactly_what_the_code_marks(tmp_path, settings, monkeypatch):
    """makemessages over the code, as scripts/makemessages.sh runs it, into a scratch directory: the same msgids, or
    a string was marked (or changed) in the code and not translated, or a translation outlived its string. (It runs
    in a directory of links to the code, so the checkout's own locale/ is neither read nor written.)"""
    code = tmp_path / "code"
    code.mkdir()
    for entry in Path(settings.BASE_DIR).iterdir():
        if entry.name in MARKED:
            (code / entry.name).symlink_to(entry)
    settings.LOCALE_PATHS = [tmp_path / "fresh"]
    monkeypatch.chdir(code)
    for domain in DOMAINS:
        call_command("makemessages", locale=["pt_BR"], domain=domain, symlinks=True, no_location=True, verbosity=0)
        fresh = keys(catalogue(tmp_path / "fresh" / "pt_BR" / "LC_MESSAGES" / f"{domain}.po"))
        kept = keys(catalogue(LOCALE / "pt_BR" / "LC_MESSAGES" / f"{domain}.po"))
        assert sorted(fresh - kept, key=str) == [], f"{domain}: marked in the code, missing from the catalogue"
        assert sorted(kept - fresh, key=str) == [], f"{domain}: in the catalogue, no longer in the code"


# --- Pages, per role, in each language ------------------------------------------------------------------------------

PAGES = {
    "student": ["dashboard", "nodes", "gpus", "reservations", "jobs", "job-new", "notebooks", "usage-mine", "account"],
    "teacher": [
        "dashboard", "reservations", "reservation-new", "jobs", "job-new", "notebooks", "notebooks-course",
        "notebook-profiles", "usage-mine", "usage-courses", "account",
    ],
    "admin": [
        "dashboard", "nodes", "gpus", "reservations", "reservation-new", "reservation-approvals", "jobs",
        "notebooks", "notebooks-course", "notebook-profiles", "usage-courses", "usage-lab", "account",
    ],
}  # fmt: skip


def visible_text(html: str) -> str:
    """What a reader sees: no scripts or styles, no tags (their attributes hold class names and addresses), plus the
    words screen readers say (aria-label, title, placeholder)."""
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    said = " ".join(re.findall(r'(?:aria-label|title|placeholder)="([^"]*)"', html))
    return unescape(re.sub(r"<[^>]+>", " ", html) + " " + said)


@pytest.fixture
def lab(db):
    """A lab with a node, a course in term with its teacher and a student: the pages show tables, not only their
    empty states."""
    NodeFactory(name="gpu01")
    course = CourseFactory(code="DL-101", name="Aprendizado profundo")
    teacher = UserFactory(username="tess", role="teacher")
    course.teachers.add(teacher)
    student = UserFactory(username="ada", role="student")
    EnrollmentFactory(user=student, course=course)
    return {"student": student, "teacher": teacher, "admin": UserFactory(username="root", role="admin")}


@pytest.mark.parametrize("role", PAGES)
def test_each_roles_pages_in_portuguese_have_no_english_ui_words(client, lab, role):
    client.force_login(lab[role])
    for name in PAGES[role]:
        response = client.get(reverse(name), HTTP_ACCEPT_LANGUAGE="pt-BR")
        assert response.status_code == 200, name
        html = response.content.decode()
        assert '<html lang="pt-br">' in html, name
        assert found(ENGLISH_UI, visible_text(html)) == [], name


@pytest.mark.parametrize("role", PAGES)
def test_each_roles_pages_in_english_have_no_portuguese_ui_words(client, lab, role):
    client.force_login(lab[role])
    for name in PAGES[role]:
        response = client.get(reverse(name), HTTP_ACCEPT_LANGUAGE="en")
        assert response.status_code == 200, name
        html = response.content.decode()
        assert '<html lang="en">' in html, name
        assert found(PORTUGUESE_UI, visible_text(html)) == [], name


def test_the_sign_in_page_follows_the_browser(client, db):
    assert "Entrar" in visible_text(
        client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE="pt-BR,pt;q=0.9").content.decode()
    )
    assert "Sign in" in visible_text(client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE="en-US").content.decode())
    assert "Sign in" in visible_text(client.get(reverse("login")).content.decode())  # no header: the lab's default


def test_the_javascript_catalog_speaks_the_pages_language(client, db):
    body = client.get(reverse("javascript-catalog"), HTTP_ACCEPT_LANGUAGE="pt-BR").content.decode()
    assert "Verificando a disponibilidade" in body and "conclu\\u00edda" in body or "concluída" in body


# --- A person's choice beats the browser ----------------------------------------------------------------------------


def test_a_chosen_language_beats_accept_language(client, db):
    person = UserFactory(role="student")
    client.force_login(person)
    page = visible_text(client.get(reverse("dashboard"), HTTP_ACCEPT_LANGUAGE="en").content.decode())
    assert "Sign out" in page  # nothing chosen yet: the browser decides
    response = client.post(reverse("account"), {"action": "language", "language": "pt-br"}, HTTP_ACCEPT_LANGUAGE="en")
    assert response.status_code == 302
    person.refresh_from_db()
    assert person.language == "pt-br"
    page = visible_text(client.get(reverse("dashboard"), HTTP_ACCEPT_LANGUAGE="en").content.decode())
    assert "Sair" in page and "Sign out" not in page
    client.post(reverse("account"), {"action": "language", "language": "en"}, HTTP_ACCEPT_LANGUAGE="pt-BR")
    page = visible_text(client.get(reverse("dashboard"), HTTP_ACCEPT_LANGUAGE="pt-BR").content.decode())
    assert "Sign out" in page and "Sair" not in page
    client.post(reverse("account"), {"action": "language", "language": ""})  # back to the browser's
    page = visible_text(client.get(reverse("dashboard"), HTTP_ACCEPT_LANGUAGE="pt-BR").content.decode())
    assert "Sair" in page


def test_a_language_the_portal_does_not_speak_is_refused(client, db):
    person = UserFactory(role="student")
    client.force_login(person)
    response = client.post(reverse("account"), {"action": "language", "language": "xx"})
    assert response.status_code == 400 and "Choose a language from the list." in response.content.decode()
    person.refresh_from_db()
    assert person.language == ""


# --- The API's sentences --------------------------------------------------------------------------------------------


def test_api_error_sentences_follow_accept_language(db):
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(UserFactory(role="student"))
    url = reverse("api:reservations")
    english = api.post(url, {}, format="json", HTTP_ACCEPT_LANGUAGE="en")
    portuguese = api.post(url, {}, format="json", HTTP_ACCEPT_LANGUAGE="pt-BR")
    assert english.status_code == portuguese.status_code == 403
    assert english.json()["detail"] == RESERVATIONS_STAFF_ONLY
    assert portuguese.json()["detail"].startswith("Reservas são para professores e administradores")
    assert portuguese.json()["code"] == english.json()["code"] == "permission_denied"  # codes stay stable
    unknown = api.get("/api/v1/no-such-thing/", HTTP_ACCEPT_LANGUAGE="pt-BR")
    assert unknown.status_code == 404 and unknown.json() == {"detail": "Não encontrado.", "code": "not_found"}
