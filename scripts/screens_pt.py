#!/usr/bin/env python
"""Screenshots of the portal in Brazilian Portuguese (issue 28): the dashboard, the booking form and a job page, on a
desktop (1280 px wide) and on a phone (390x844), as the demo's teacher.

    python scripts/screens_pt.py                      # its own portal: a scratch SQLite database, the demo lab
    python scripts/screens_pt.py --base-url URL       # a running portal seeded with `manage.py seed_demo`
    python scripts/screens_pt.py --language en --out docs/screens/en

Without --base-url it starts a portal of its own, as the demo lab the portal was described for (LAB_LANGUAGE=pt-br,
LAB_TIME_ZONE=America/Sao_Paulo, LAB_CURRENCY=BRL): a scratch database in a temporary directory, `migrate`,
`seed_demo --nodes 12`, one finished job and one running job of the teacher, then `runserver` on a free port, and
removes it all at the end. The browser asks for the language (Accept-Language and the browser's locale). Uses
Debian's chromium (`--chromium`), headless; never downloads a browser. The PNGs (<300 KB each) are named
<page>-<desktop|phone>.png; a run replaces them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
VIEWPORTS = {"desktop": {"width": 1280, "height": 860}, "phone": {"width": 390, "height": 844}}
MAX_HEIGHT = {"desktop": 1600, "phone": 2400}  # a long page is cut here: its top is what a person sees first
ACCEPT = {"pt-BR": "pt-BR,pt;q=0.9", "en": "en-US,en;q=0.9"}
USERNAME = "teacher"  # the demo's teacher (labs/management/commands/seed_demo.py), password "teacher-demo"

# Two jobs of the teacher, so that the dashboard lists work and the job page has a finished attempt to show.
JOBS = """
import datetime as dt
from django.utils import timezone
from accounts.models import User
from jobs.models import Job, JobState
teacher = User.objects.get(username="teacher")
now = timezone.now()
Job.objects.filter(owner=teacher).delete()
Job.objects.create(
    owner=teacher, name="resnet50-cifar10", image="pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime",
    command=["python", "train.py", "--epochs", "30"], gpus_per_node=1, nodes=1, max_runtime_s=4 * 3600,
    state=JobState.SUCCEEDED, node_names=["gpu03"], gpu_indices=[0], started_at=now - dt.timedelta(hours=3),
    running_at=now - dt.timedelta(hours=3), finished_at=now - dt.timedelta(minutes=75), exit_code=0,
)
Job.objects.create(
    owner=teacher, name="bert-finetune", image="pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime",
    command=["python", "finetune.py"], gpus_per_node=2, nodes=1, max_runtime_s=6 * 3600,
    state=JobState.RUNNING, node_names=["gpu04"], gpu_indices=[0, 1], started_at=now - dt.timedelta(minutes=40),
    running_at=now - dt.timedelta(minutes=39),
)
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def demo_portal(language: str):
    """A portal of its own on loopback, the demo lab in a scratch SQLite database: yields its URL."""
    with tempfile.TemporaryDirectory(prefix="screens-") as scratch:
        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{scratch}/portal.sqlite3",
            "PORTAL_VAR_DIR": scratch,
            "DEBUG": "true",
            "LAB_LANGUAGE": "pt-br" if language == "pt-BR" else "en",
            "LAB_TIME_ZONE": "America/Sao_Paulo",
            "LAB_CURRENCY": "BRL",
            "PYTHONPATH": str(ROOT),
        }
        env.pop("DJANGO_SETTINGS_MODULE", None)

        def manage(*args: str) -> None:
            subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True)  # noqa: S603

        manage("migrate", "--noinput")
        manage("compilemessages", "--ignore", ".venv", "--ignore", "node_modules")
        manage("seed_demo", "--nodes", "12", "--force")
        manage("shell", "-c", JOBS)
        port = free_port()
        server = subprocess.Popen(  # noqa: S603 - our own manage.py
            [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            for _ in range(120):
                with contextlib.suppress(OSError):
                    urllib.request.urlopen(url + "/login/", timeout=2)  # noqa: S310 - loopback
                    break
                time.sleep(0.5)
            yield url
        finally:
            server.terminate()
            server.wait(timeout=10)


def shot(page, out: pathlib.Path, name: str, viewport: str) -> pathlib.Path:
    page.wait_for_load_state("networkidle")
    width = VIEWPORTS[viewport]["width"]
    height = min(
        max(page.evaluate("document.documentElement.scrollHeight"), VIEWPORTS[viewport]["height"]), MAX_HEIGHT[viewport]
    )
    path = out / f"{name}-{viewport}.png"
    page.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": width, "height": height}, full_page=True)
    print(f"{path}  {path.stat().st_size // 1024} KiB")
    return path


def take(browser, base: str, out: pathlib.Path, language: str) -> list[pathlib.Path]:
    taken = []
    for viewport, size in VIEWPORTS.items():
        context = browser.new_context(
            locale=language, extra_http_headers={"Accept-Language": ACCEPT[language]}, viewport=size
        )
        page = context.new_page()
        page.goto(base + "/login/")
        page.locator("input[name=username]").fill(USERNAME)
        page.locator("input[name=password]").fill(f"{USERNAME}-demo")
        page.locator("form button[type=submit]").first.click()
        page.wait_for_selector("nav.nav", state="attached")
        page.goto(base + "/")
        taken.append(shot(page, out, "dashboard", viewport))
        page.goto(base + "/lab/reservations/new/")
        taken.append(shot(page, out, "booking-form", viewport))
        page.goto(base + "/jobs/")
        job = page.locator("a[href^='/jobs/'][href$='/']").evaluate_all(
            "links => links.map(a => a.getAttribute('href')).filter(h => /^\\/jobs\\/\\d+\\/$/.test(h))"
        )
        page.goto(base + (job[-1] if job else "/jobs/"))  # the oldest listed: the finished one
        taken.append(shot(page, out, "job", viewport))
        context.close()
    return taken


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="A running portal with the demo data; without it, one of its own.")
    parser.add_argument("--language", default="pt-BR", choices=sorted(ACCEPT))
    parser.add_argument("--out", type=pathlib.Path, help="Default: docs/screens/<language>")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    options = parser.parse_args()
    out = options.out or ROOT / "docs" / "screens" / options.language
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    with contextlib.ExitStack() as stack:
        base = options.base_url or stack.enter_context(demo_portal(options.language))
        playwright = stack.enter_context(sync_playwright())
        browser = playwright.chromium.launch(executable_path=options.chromium, args=ARGS, headless=True)
        taken = take(browser, base.rstrip("/"), out, options.language)
        browser.close()
    too_big = [path.name for path in taken if path.stat().st_size > 300 * 1024]
    if too_big:
        print(f"over 300 KB: {', '.join(too_big)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
