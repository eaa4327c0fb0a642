"""Headless Chromium (Debian's) driven by Playwright, as a person would use the pages."""

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


@pytest.fixture(scope="module")
def browser():
    """One Chromium per test module: Playwright's event loop must not outlive the browser tests."""
    if not shutil.which(CHROMIUM):
        pytest.fail("Chromium is missing: scripts/test.sh installs Debian's chromium and chromium-driver")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in the test thread; Django's ORM calls there are fine.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True)
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


# Every page of every browser test is watched for Content-Security-Policy violations: Chromium's console message
# ("Refused to ... because it violates the following Content Security Policy directive") and the DOM's
# securitypolicyviolation event, reported to the console by a script Playwright injects (injected scripts are not
# subject to the page's policy). One violation fails the test that caused it.
CSP_PROBE = """
document.addEventListener("securitypolicyviolation", (event) => {
  console.error("CSP violation: " + event.effectiveDirective + " blocked " + (event.blockedURI || "inline")
    + " on " + event.documentURI + " line " + event.lineNumber);
});
"""


def watch_csp(context) -> list[str]:
    """Collect the CSP violations of every page of a Playwright browser context into the returned list."""
    found: list[str] = []
    context.add_init_script(CSP_PROBE)

    def on_console(message):
        text = message.text
        if "Content Security Policy" in text or text.startswith("CSP violation:"):
            found.append(f"{message.page.url if message.page else '?'}: {text}")

    context.on("console", on_console)
    return found


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    violations = watch_csp(context)
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()
    if violations:
        pytest.fail("Content-Security-Policy violations:\n" + "\n".join(violations), pytrace=False)
