"""{% main_nav %}: the main menu on top of every page, built in Python and kept per process.

It is the same for everyone of one kind (their language, whether they teach, look after courses or run the lab) on
one page, so it is made once per such key and process, not per answer: through the template language its sixteen
links, with their translations, URLs and "this page" marks, were a good part of a light page's CPU."""

from __future__ import annotations

import functools
from html import escape

from django import template
from django.core.signals import setting_changed
from django.urls import get_script_prefix, reverse
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import get_language, gettext, gettext_noop

register = template.Library()

# (URL name, label, who sees it: everyone, those who look after courses, teachers, admins), in the menu's order.
ITEMS = (
    ("dashboard", gettext_noop("Dashboard"), "everyone"),
    ("nodes", gettext_noop("Nodes"), "everyone"),
    ("gpus", gettext_noop("Live GPUs"), "everyone"),
    ("reservations", gettext_noop("Reservations"), "everyone"),
    ("jobs", gettext_noop("Jobs"), "everyone"),
    ("notebooks", gettext_noop("Notebooks"), "everyone"),
    ("notebooks-course", gettext_noop("My courses' notebooks"), "courses"),
    ("usage-mine", gettext_noop("My usage"), "everyone"),
    ("usage-courses", gettext_noop("Course usage"), "courses"),
    ("requests", gettext_noop("Requests"), "everyone"),
    ("courses-audit", gettext_noop("Course audit"), "teacher"),
    ("usage-lab", gettext_noop("Lab usage"), "admin"),
    ("api:docs", "API", "everyone"),
    ("help", gettext_noop("Help"), "everyone"),
    ("console", gettext_noop("Operations"), "admin"),
    ("admin:index", gettext_noop("Admin console"), "admin"),
)
NEVER_CURRENT = {"api:docs", "admin:index"}  # other apps' pages: nothing of the menu is marked there


def _current(name: str, page: str | None) -> bool:
    if name in NEVER_CURRENT or not page:
        return False
    if name == "console":  # every page of the operations console
        return page[:7] == "console"
    return page == name


@functools.lru_cache(maxsize=1024)
def _menu(language: str, prefix: str, page: str | None, sees: frozenset[str]) -> str:
    links = []
    for name, label, who in ITEMS:
        if who not in sees:
            continue
        current = ' aria-current="page"' if _current(name, page) else ""
        text = label if name == "api:docs" else gettext(label)
        links.append(f'<a href="{escape(reverse(name))}"{current}>{escape(text, quote=False)}</a>')
    return "\n      ".join(links)


@setting_changed.connect
def _forget(**_kwargs) -> None:  # a test's other URLs, languages or prefix
    _menu.cache_clear()


@register.simple_tag(takes_context=True)
def main_nav(context) -> SafeString:
    """The links of the main menu for the signed-in person reading this page."""
    user, request = context.get("user"), context.get("request")
    sees = {"everyone"}
    asks = context.get("looks_after_courses")
    if callable(asks) and asks():
        sees.add("courses")
    if user.is_teacher:
        sees.add("teacher")
    if user.is_lab_admin:
        sees.add("admin")
    match = getattr(request, "resolver_match", None)
    page = match.url_name if match is not None else None
    return mark_safe(_menu(get_language(), get_script_prefix(), page, frozenset(sees)))  # noqa: S308 - escaped above
