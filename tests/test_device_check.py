"""scripts/device_check.py, rehearsed without a GPU (DEVICE_CHECK_DRY=1), so a change cannot break it unseen.

The real run needs a machine with an NVIDIA GPU and is never part of the suite (README, Development).
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.backends import sandbox

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(sandbox.missing() is not None, reason="the local sandbox (bwrap) is not available")
def test_the_device_check_rehearsal_follows_a_job_through_sandbox_collector_and_ledger(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(DEVICE_CHECK_DRY="1", DEVICE_CHECK_TRAIN_S="10", TMPDIR=str(tmp_path))
    done = subprocess.run(  # noqa: S603 - this repository's script
        [sys.executable, "scripts/device_check.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "PASS the job ended succeeded" in out
    assert "PASS the busy GPU's holder is the job's owner" in out
    assert "device check: all passed" in out
    assert re.search(r"^sandbox uid [1-9][0-9]*$", out, re.M), "the job ran as root or printed no uid"
