"""The `gpulab` command against the live portal, run as a process as people and scripts run it: what it prints, its
exit codes, and one clear line (never a traceback) for every kind of bad input."""

from __future__ import annotations

import datetime as dt
import json
import re
import stat

import pytest

from bench.kit import free_port
from tests.sdk.conftest import one_line_error

pytestmark = pytest.mark.postgresql_only

JOB_YAML = """\
name: cli-job
image: python:3.12-slim
command: [python, -c, "import time\\nfor i in range(4):\\n    print('tick', i, flush=True)\\n    time.sleep(0.5)"]
gpus: 1
max_runtime_s: 600
"""


def test_submit_from_a_file_follow_and_wait_exits_0_with_the_log_on_stdout(cli, tmp_path):
    (tmp_path / "job.yaml").write_text(JOB_YAML)
    code, out, err = cli("jobs", "submit", "-f", "job.yaml", "--follow", "--wait")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("Submitted job ") and ": queued" in lines[0]
    assert [line for line in lines if line.startswith("tick")] == [f"tick {i}" for i in range(4)]
    assert lines[-1].startswith("job ") and "succeeded, exit code 0" in lines[-1]
    assert "Traceback" not in err


def test_a_failing_job_makes_jobs_wait_exit_1_with_progress_on_stderr(cli):
    code, out, err = cli(
        "jobs", "submit", "--json", "--name", "doomed", "--image", "python:3.12-slim", "--gpus", "1",
        "--max-runtime", "600", "--", "python", "-c", "import sys; print('oops'); sys.exit(3)",
    )  # fmt: skip
    assert code == 0, err
    job = json.loads(out)
    assert job["status"] == "queued" and job["command"][-1].endswith("sys.exit(3)")
    code, out, err = cli("jobs", "wait", str(job["id"]), "--timeout", "240")
    assert code == 1, (out, err)
    assert "failed, exit code 3" in out
    assert f"job {job['id']} queued" in err or f"job {job['id']} running" in err or "failed" in err  # progress
    code, out, _ = cli("jobs", "logs", str(job["id"]))
    assert code == 0 and out == "oops\n"
    code, out, _ = cli("jobs", "show", str(job["id"]), "--json")
    assert code == 0 and json.loads(out)["exit_code"] == 3 and json.loads(out)["events"]


def test_jobs_ls_cancel_and_wait_on_a_cancelled_job(cli):
    code, out, err = cli(
        "jobs", "submit", "--json", "--name", "to-cancel", "--image", "python:3.12-slim", "--gpus", "1",
        "--max-runtime", "600", "--", "python", "-c", "import time; time.sleep(120)",
    )  # fmt: skip
    job_id = json.loads(out)["id"]
    code, out, _ = cli("jobs", "ls", "--mine")
    assert code == 0 and out.splitlines()[0].split()[:3] == ["ID", "NAME", "STATUS"] and "to-cancel" in out
    code, out, _ = cli("jobs", "cancel", str(job_id))
    assert code == 0 and out.startswith(f"Cancelling job {job_id}")
    code, out, _ = cli("jobs", "wait", str(job_id), "--timeout", "120", "--quiet")
    assert code == 7 and "cancelled" in out


def test_a_reservation_conflict_prints_the_earliest_fit_and_exits_4(cli):
    day = dt.date.today() + dt.timedelta(days=40)
    start, end = f"{day}T14:00", f"{day}T16:00"
    code, out, err = cli("reserve", "create", "--title", "Class", "--start", start, "--end", end, "--nodes", "gpu03",
                         who="tess")  # fmt: skip
    assert code == 0, err
    assert out.startswith("Reservation ") and "gpu03" in out
    code, out, err = cli("reserve", "create", "--title", "Clash", "--start", start, "--end", end, "--nodes", "gpu03",
                         who="tess")  # fmt: skip
    assert code == 4
    line = one_line_error(err)
    assert "already booked" in line and "earliest fit: " in line and "16:00" in line and "on gpu03" in line
    code, out, _ = cli("reserve", "free", "--start", start, "--end", end, "--json", who="tess")
    assert code == 0 and "gpu03" not in json.loads(out)["free_nodes"]
    code, out, _ = cli("reserve", "ls", "--from", f"{day}T00:00", "--to", f"{day}T23:00", who="tess")
    assert code == 0 and "Class" in out and "Clash" not in out


def test_gpus_watch_shows_updates(cli):
    code, out, err = cli("gpus", "--watch", "--json", "--duration", "12")
    assert code == 0, err
    boards = [json.loads(line) for line in out.splitlines() if line.strip()]
    stamps = [{(g["node"], g["index"]): g["sampled_at"] for g in board} for board in boards]
    # The first board may come before the collector's first samples; once all four are there, newer ones follow.
    full = [n for n, board in enumerate(stamps) if len(board) == 4]
    assert full and any(board != stamps[full[0]] for board in stamps[full[0] + 1 :]), stamps
    code, out, _ = cli("gpus")
    assert code == 0 and out.splitlines()[0].split()[:3] == ["GPU", "MODEL", "STATUS"] and "gpu04/0" in out


def test_login_writes_a_private_config_and_whoami_reads_it(cli, portal, tmp_path):
    code, out, err = cli("login", portal.url, "--token", portal.tokens["tess"], who=None)
    assert code == 0, err
    assert out.startswith(f"Signed in to {portal.url} as tess (teacher)")
    config = tmp_path / "config" / "gpulab" / "config.toml"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    code, out, err = cli("whoami", who=None)
    assert code == 0 and out.startswith("tess (teacher)"), err
    code, out, _ = cli("whoami", "--json", who=None)
    assert json.loads(out)["username"] == "tess"


def test_login_with_a_username_and_password_makes_a_token_and_a_wrong_password_is_one_line(cli, portal, tmp_path):
    code, out, err = cli("login", portal.url, "--username", "bob", "--password-stdin", stdin="nope\n", who=None)
    assert code != 0 and "Traceback" not in err
    one_line_error(err)
    assert not (tmp_path / "config" / "gpulab" / "config.toml").exists()
    code, out, err = cli(
        "login", portal.url, "--username", "bob", "--password-stdin", stdin="bobs-password-42\n", who=None
    )
    assert code == 0, err
    assert out.startswith(f"Signed in to {portal.url} as bob (student)")
    code, out, err = cli("whoami", who=None)
    assert code == 0 and out.startswith("bob (student)"), err


def test_completion_and_help_with_examples(cli):
    code, out, _ = cli("completion", "bash", who=None)
    assert code == 0 and "complete -o default -F _gpulab gpulab" in out and '"jobs submit") words="' in out
    code, out, _ = cli("--help", who=None)
    assert code == 0 and "examples:" in out and "exit codes:" in out


# --- Bad input: one clear line, a non-zero exit, never a traceback ---------------------------------------------------


def test_a_missing_job_file(cli):
    code, _, err = cli("jobs", "submit", "-f", "nope.yaml")
    assert code == 2 and one_line_error(err) == "gpulab: nope.yaml: no such file."


def test_a_job_file_that_is_not_yaml(cli, tmp_path):
    (tmp_path / "bad.yaml").write_text("name: x\nimage: [unclosed\n")
    code, _, err = cli("jobs", "submit", "-f", "bad.yaml")
    assert code == 2 and "bad.yaml: not valid YAML at line" in one_line_error(err)


def test_a_job_file_with_a_string_command(cli, tmp_path):
    text = "image: python:3.12-slim\ncommand: python train.py\ngpus: 1\nmax_runtime_s: 60\n"
    (tmp_path / "job.yaml").write_text(text)
    code, _, err = cli("jobs", "submit", "-f", "job.yaml")
    assert code == 2 and "command is a list of arguments" in one_line_error(err)


def test_an_unknown_notebook_profile(cli):
    code, _, err = cli("nb", "start", "no-such-profile")
    assert code == 4 and "profile" in one_line_error(err).lower()


def test_no_token(cli):
    code, _, err = cli("jobs", "ls", who=None)
    assert code == 3 and "No API token: run `gpulab login`" in one_line_error(err)


def test_a_wrong_token(cli, portal):
    portal.tokens["nobody"] = "0" * 40
    code, _, err = cli("whoami", who="nobody")
    assert code == 4 and one_line_error(err).startswith("gpulab: Invalid token")


def test_the_server_is_down(cli):
    code, _, err = cli("jobs", "ls", url=f"http://127.0.0.1:{free_port()}")
    assert code == 5 and "Cannot reach the portal at http://127.0.0.1:" in one_line_error(err)


def test_a_wrong_flag(cli):
    code, _, err = cli("jobs", "submit", "--gpus", "many")
    assert code == 2 and "invalid int value" in one_line_error(err)


def test_a_job_that_does_not_exist(cli):
    code, _, err = cli("jobs", "wait", "999999")
    assert code == 4 and one_line_error(err) == "gpulab: No such job. (not_found)"


def test_a_notebook_from_the_command_line_start_ls_extend_stop(cli):
    code, out, err = cli("nb", "profiles")
    assert code == 0 and "tenth" in out
    code, out, err = cli("nb", "start", "tenth", "--timeout", "240")
    assert code == 0, err
    url = out.strip()
    assert url.startswith("http://127.0.0.1:") and re.search(r"/user/u[0-9]+/nb[0-9]+/$", url)  # hub user u<id>
    assert "waiting until it is ready" in err  # progress on stderr, the URL alone on stdout
    code, out, _ = cli("nb", "ls", "--json")
    notebook = next(n for n in json.loads(out) if n["url"] == url)
    assert notebook["status"] == "ready" and notebook["profile"] == "tenth"
    code, out, _ = cli("nb", "extend", str(notebook["id"]))
    assert code == 0 and out.startswith(f"notebook {notebook['id']} kept until")
    code, out, _ = cli("nb", "stop", str(notebook["id"]))
    assert code == 0 and out.split()[:2] == ["notebook", str(notebook["id"])]
    code, _, err = cli("nb", "open", str(notebook["id"]))
    assert code == 4 and "not ready" in one_line_error(err)


def test_usage_prints_gpu_hours_per_group(cli):
    """GET /api/v1/usage/ (API.md) after a job of this test's own has held a GPU: the ledger has an entry for it."""
    code, out, err = cli(
        "jobs", "submit", "--name", "for-usage", "--image", "python:3.12-slim", "--gpus", "1",
        "--max-runtime", "600", "--wait", "--", "python", "-c", "print('used')",
    )  # fmt: skip
    assert code == 0, err
    code, out, err = cli("usage", "--group-by", "user")
    assert code == 0, err
    assert out.splitlines()[0].split()[:2] == ["USER", "GPU-HOURS"] and "total: " in out


@pytest.mark.parametrize("limit", ["0", "-3", "many"])
def test_jobs_ls_limit_below_one_is_one_usage_line(capsys, limit):
    """Read by the parser before any request: no portal needed."""
    from gpulab.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["jobs", "ls", "--limit", limit])
    line = one_line_error(capsys.readouterr().err)
    assert exited.value.code == 2 and line.startswith("gpulab: argument --limit: expected a whole number of at least 1")
