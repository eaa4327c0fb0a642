"""The live GPU grid in Chromium, served by a real uvicorn with a real collector process, updating without a reload.

pytest-django's live_server speaks WSGI only, so this test starts the production arrangement on
loopback: uvicorn with the ASGI app and `manage.py telemetry_collect`, both on the test database
(committed data: transactional test) and the test Redis.
"""

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone
from playwright.sync_api import expect

from labs.inventory import demo_specs
from labs.models import Allocation, Node
from labs.services import inventory_sync
from tests.factories import PASSWORD, AllocationFactory, UserFactory
from tests.labs.telemetry.test_collector import clean_store  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url: str, timeout_s: float = 40) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310
            if response.status == 200:
                return
        time.sleep(0.3)
    raise AssertionError(f"{url} did not come up")


@pytest.fixture
def asgi_portal(clean_store, tmp_path):  # noqa: F811
    """uvicorn and the collector on loopback; yields the base URL, stops both afterwards."""
    db = settings.DATABASES["default"]
    port = free_port()
    env = {
        **os.environ,
        # The test settings (password hasher, hosts), pointed at this test's database.
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "REDIS_URL": settings.REDIS_URL,
        "DEBUG": "true",
        "TELEMETRY_SOURCE": "simulator",
        "TELEMETRY_INTERVAL_MS": "500",
        "LOG_LEVEL": "WARNING",
        "CREDENTIAL_RECHECK_S": "1",  # open sockets look at their sign-in again every second
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    logs = {name: open(tmp_path / f"{name}.log", "w") for name in ("server", "collector")}  # noqa: SIM115
    commands = {
        "server": [sys.executable, "-m", "uvicorn", "portal.asgi:application", "--host", "127.0.0.1"]
        + ["--port", str(port), "--lifespan", "on", "--log-level", "warning"],
        "collector": [sys.executable, "manage.py", "telemetry_collect"],
    }
    processes = {
        name: subprocess.Popen(command, cwd=ROOT, env=env, stdout=logs[name], stderr=subprocess.STDOUT)
        for name, command in commands.items()
    }
    try:
        wait_for(f"http://127.0.0.1:{port}/healthz")
        yield f"http://127.0.0.1:{port}"
    finally:
        for process in processes.values():
            process.terminate()
        for process in processes.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
        for handle in logs.values():
            handle.close()
        for name in logs:
            output = (tmp_path / f"{name}.log").read_text()
            assert "Traceback" not in output, f"{name} log:\n{output}"


def test_the_grid_updates_live_without_a_reload(asgi_portal, page):
    inventory_sync(specs=demo_specs(40), source="demo")
    gpus = {node.name: node.gpus.get() for node in Node.objects.prefetch_related("gpus")}
    maria = UserFactory(username="maria", role="student")
    AllocationFactory(user=maria, gpu=gpus["gpu05"], kind="notebook", ref="notebook:5")
    AllocationFactory(gpu=gpus["gpu07"], kind="job", ref="job:7#1")

    page.goto(asgi_portal + "/login/?next=/lab/gpus/")
    page.get_by_label("Username").fill("maria")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Live GPUs")).to_be_visible()
    expect(page.get_by_test_id("live-state")).to_have_text("live", timeout=15_000)
    page.evaluate("window.__sameDocument = true")

    grid = page.get_by_test_id("gpu-grid")
    expect(grid.locator(".gpu-card")).to_have_count(40)
    mine = page.get_by_test_id("gpu-gpu05-0")
    expect(mine.locator('[data-field="holder"]')).to_have_text("you · notebook")
    expect(page.get_by_test_id("gpu-gpu07-0").locator('[data-field="state"]')).to_have_text("busy")
    expect(page.get_by_test_id("gpus-available")).to_have_text("38")

    # Updates arrive in sequence and change what is shown, in place.
    first_seq = int(grid.get_attribute("data-seq"))
    readings = page.locator('[data-field="util"], [data-field="power"]').all_inner_texts()
    # A function, not an expression string: Playwright evaluates strings with eval, which the CSP refuses.
    page.wait_for_function("(n) => Number(document.getElementById('gpu-grid').dataset.seq) >= n", arg=first_seq + 3)
    assert page.locator('[data-field="util"], [data-field="power"]').all_inner_texts() != readings

    # Maria stops her notebook: the ledger changes, and her GPU turns free on the open page.
    Allocation.objects.filter(ref="notebook:5").update(ends_at=timezone.now())
    expect(mine.locator('[data-field="holder"]')).to_have_text("free", timeout=10_000)
    expect(mine.locator('[data-field="state"]')).to_have_text("free")
    expect(page.get_by_test_id("gpus-available")).to_have_text("39")

    assert page.evaluate("window.__sameDocument") is True, "the page was reloaded"


def test_signing_out_everywhere_ends_the_open_live_page_and_says_why(asgi_portal, page):
    from accounts.services import sessions_end_everywhere

    inventory_sync(specs=demo_specs(4), source="demo")
    maria = UserFactory(username="maria", role="student")
    page.goto(asgi_portal + "/login/?next=/lab/gpus/")
    page.get_by_label("Username").fill("maria")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_test_id("live-state")).to_have_text("live", timeout=15_000)

    sessions_end_everywhere(user=maria)  # from another device, say: this page's session is over

    said = "You were signed out (everywhere, or by a new password): sign in again."
    expect(page.get_by_test_id("live-state")).to_have_text(said, timeout=15_000)
    # No reconnecting: the page stays as it is, saying why.
    page.wait_for_function("() => !document.getElementById('live-state').classList.contains('is-live')")
