"""WCAG 2.1 AA, measured: axe-core (npm, pinned in package.json) runs on every page the header links to and on the
main detail pages, for each role, in English and in Brazilian Portuguese, on a desktop and on a 390 px phone. Any
serious or critical violation fails the test, listed with the page, the rule and the elements.

The same visit reads what the page shows (its rendered text and spoken labels): a page in Brazilian Portuguese that
shows an English UI word, or one in English that shows a Portuguese one, fails too (issue 28; the words are
tests/ui_words.py's, which the test client's check in tests/portal/test_translations.py uses as well).
"""

from __future__ import annotations

import json

import pytest

from tests.browser.conftest import ARTIFACTS
from tests.browser.sweep import (  # noqa: F401
    LANGUAGES,
    ROLES,
    VIEWPORTS,
    chromium,
    close_test_connections,
    pages_of,
    portal,
    shown_text,
    signed_in,
)
from tests.ui_words import FOREIGN, found

# django_db, not transactional: the module's portal seeds and flushes once (tests/browser/sweep.py); the tests write
# nothing through the ORM themselves.
pytestmark = [pytest.mark.browser, pytest.mark.django_db]

BLOCKING = ("serious", "critical")
AXE_RUN = """async () => {
  // Swagger UI's own widget (drf-spectacular-sidecar, third-party) is left out, and with it a race: the page's
  // shell (lang, title, header) is checked, the widget's markup is upstream's (its contrast and nested controls are
  // known issues there).
  const result = await axe.run({ exclude: [["#swagger-ui"]] }, { resultTypes: ["violations"] });
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({ target: n.target.join(" "), summary: n.failureSummary || "" })),
  }));
}"""


def axe_violations(page) -> list[dict]:
    page.wait_for_load_state("load")
    return [v for v in page.evaluate(AXE_RUN) if v["impact"] in BLOCKING]


def describe(path: str, violation: dict) -> str:
    targets = "; ".join(node["target"] for node in violation["nodes"][:4])
    more = f" (+{len(violation['nodes']) - 4} more)" if len(violation["nodes"]) > 4 else ""
    first = violation["nodes"][0]["summary"].replace("\n", " ")[:160]
    return (
        f"{path}: {violation['id']} ({violation['impact']}, {len(violation['nodes'])} elements) {violation['help']}"
        f" — {targets}{more} — {first}"
    )


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
@pytest.mark.parametrize("language", list(LANGUAGES))
@pytest.mark.parametrize("role", ROLES)
def test_no_serious_or_critical_axe_violation_on_any_page(portal, signed_in, role, language, viewport):  # noqa: F811
    page = signed_in(role, language)
    page.set_viewport_size(VIEWPORTS[viewport])
    findings, counts, foreign = [], {}, []
    for path in pages_of(page, portal, role):
        response = page.goto(portal.url + path)
        assert response is not None and response.ok, f"{path} answered {response and response.status}"
        violations = axe_violations(page)
        counts[path] = sum(len(v["nodes"]) for v in violations)
        findings += [describe(path, v) for v in violations]
        if words := found(FOREIGN[language], shown_text(page)):
            foreign.append(f"{path}: {', '.join(words)}")
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"axe-{role}-{language}-{viewport}.json").write_text(json.dumps(counts, indent=1))
    assert not findings, f"{sum(counts.values())} serious or critical axe-core findings as {role}:\n" + "\n".join(
        findings
    )
    assert not foreign, f"words of the other language on {role}'s pages in {language}:\n" + "\n".join(foreign)


def test_the_first_tab_stop_skips_to_the_content_and_every_focus_is_visible(portal, signed_in):  # noqa: F811
    page = signed_in("student")
    page.set_viewport_size(VIEWPORTS["desktop"])
    page.goto(portal.url + "/jobs/")
    page.keyboard.press("Tab")
    skip = page.locator(":focus")
    assert skip.inner_text() == "Skip to content"
    assert skip.is_visible() and skip.bounding_box()["y"] >= 0  # on screen once focused, off it before
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "content"
    page.keyboard.press("Tab")  # the next stop is in the page, past the 13-16 links of the header
    assert page.evaluate("document.activeElement.closest('main') !== null")
    # Every tab stop of the dashboard shows a focus ring (an outline), the header's included.
    page.goto(portal.url + "/")
    stops = 0
    for _ in range(60):
        page.keyboard.press("Tab")
        focused, outline, width = page.evaluate(
            "(() => { const e = document.activeElement, s = getComputedStyle(e);"
            " return [e === document.body ? null : e.outerHTML.slice(0, 80), s.outlineStyle, s.outlineWidth]; })()"
        )
        if focused is None:  # past the last stop
            break
        stops += 1
        assert outline != "none" and width != "0px", f"no visible focus on {focused}"
    assert stops > 10
