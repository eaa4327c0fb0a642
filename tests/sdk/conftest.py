"""One live portal for the whole SDK session (tests/sdk/live.py), and the CLI run as people run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sdk.live import LivePortal, live_portal

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def portal(django_db_setup) -> LivePortal:
    with live_portal() as started:
        yield started


@pytest.fixture
def lab(portal):
    """The SDK's client as ada (a student)."""
    import gpulab

    with gpulab.Client(portal.url, portal.tokens["ada"]) as client:
        yield client


@pytest.fixture
def cli(portal, tmp_path):
    """Run `gpulab ARGS...` in a process of its own; returns (exit code, stdout, stderr).

    As `who` (a username of the live portal) through GPULAB_URL / GPULAB_TOKEN, or with no token (who=None); the
    config file lives in this test's own XDG_CONFIG_HOME."""

    def run(*args: str, who: str | None = "ada", url: str | None = None, stdin: str | None = None, timeout=300):
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPULAB_")}
        env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
        env["GPULAB_URL"] = url or portal.url
        if who is not None:
            env["GPULAB_TOKEN"] = portal.tokens[who]
        done = subprocess.run(
            [sys.executable, "-m", "gpulab", *args],
            cwd=tmp_path,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return done.returncode, done.stdout, done.stderr

    return run


def one_line_error(stderr: str) -> str:
    """What a failing command printed: exactly one line, starting with gpulab:, and never a traceback."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1, stderr
    assert lines[0].startswith("gpulab: "), stderr
    return lines[0]
