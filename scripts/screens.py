#!/usr/bin/env python
"""Screenshots of the portal's main pages, 1280 px wide, against a running portal with the demo data.

    scripts/run.sh                       # or any portal seeded with `manage.py seed_demo`
    python scripts/screens.py [--base-url http://127.0.0.1:8000] [--out docs/screens]

As the demo's teacher it writes a course job template and submits a first job from the form (`python -c
"print(1)"`), waits for it to succeed and takes: the job form, the job page after success, the course's templates, the
student's form of a template and the course usage page; as the admin, the operations console. Uses Debian's
chromium (`--chromium`), headless. The PNGs are named after the page; a run replaces them.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

from playwright.sync_api import expect, sync_playwright

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
WIDTH, HEIGHT = 1280, 900
MAX_HEIGHT = 1800  # a long page is cut here: the top of it is what a person sees first


def sign_in(page, base: str, username: str) -> None:
    page.context.clear_cookies()
    page.goto(base + "/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(f"{username}-demo")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()


def shot(page, out: pathlib.Path, name: str) -> pathlib.Path:
    page.wait_for_load_state("networkidle")
    height = min(page.evaluate("document.documentElement.scrollHeight"), MAX_HEIGHT)
    path = out / f"{name}.png"
    clip = {"x": 0, "y": 0, "width": WIDTH, "height": max(height, HEIGHT)}
    page.screenshot(path=str(path), clip=clip, full_page=True)
    print(f"{path}  {path.stat().st_size // 1024} KiB")
    return path


def first_image(page) -> str:
    values = (
        page.get_by_label("Image", exact=True)
        .locator("option")
        .evaluate_all("options => options.map(o => o.value).filter(Boolean)")
    )
    return values[0]


def teacher_journey(page, base: str, out: pathlib.Path, course: str) -> None:
    sign_in(page, base, "teacher")
    # A course template, so that the job form offers one (and its pages can be shown).
    page.goto(f"{base}/courses/{course}/job-templates/")
    if page.get_by_test_id("templates").count() == 0:
        page.get_by_test_id("template-new").click()
        page.get_by_label("Name", exact=True).fill("Train for N epochs")
        page.get_by_label("Description").fill("Prints the chosen model and the number of epochs; change them below.")
        page.get_by_label("Image", exact=True).select_option(first_image(page))
        page.get_by_label("A script").check()
        page.get_by_label("Script", exact=True).fill('echo "model $MODEL"\necho "epochs $EPOCHS"\n')
        page.get_by_label("Max runtime").select_option("600")
        parameters = "EPOCHS | Epochs | int | 1..50 | 3\nMODEL | Model | choice | small, big | small"
        page.get_by_label("Parameters").fill(parameters)
        page.get_by_role("button", name="Save the template").click()
    shot(page, out, "course-job-templates")
    page.get_by_test_id("template-use").first.click()
    shot(page, out, "job-from-template")

    page.goto(base + "/jobs/new/")
    page.get_by_label("Image", exact=True).select_option(first_image(page))
    page.get_by_label("Name").fill("first job")
    page.get_by_label("Command line", exact=True).fill('python -c "print(1)"')
    expect(page.get_by_test_id("argv-preview")).to_be_visible()
    expect(page.get_by_test_id("preview")).not_to_have_text("Fill in the form to see whether it would start now.")
    shot(page, out, "job-form")
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(page.get_by_test_id("job-status")).to_have_text("succeeded", timeout=120_000)
    time.sleep(1)  # the log's last line
    shot(page, out, "job-succeeded")

    page.goto(base + "/usage/courses/")
    shot(page, out, "course-usage")


def admin_journey(page, base: str, out: pathlib.Path) -> None:
    sign_in(page, base, "admin")
    page.goto(base + "/console/")
    shot(page, out, "operations-console")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--out", default="docs/screens", type=pathlib.Path)
    parser.add_argument("--course", default="DL-101", help="The demo course whose templates are shown.")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    base = options.base_url.rstrip("/")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=options.chromium, args=ARGS, headless=True)
        context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT}, locale="en-GB")
        page = context.new_page()
        teacher_journey(page, base, options.out, options.course)
        admin_journey(page, base, options.out)
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
