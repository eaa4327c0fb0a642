"""The local backend with real subprocesses: runs, fails, logs, cancel, max runtime, restarts, double dispatch."""

import json
import os
import signal
import threading
import time

import pytest

from accounts.errors import BackendError
from jobs.backends import get_job_backend
from jobs.backends.base import DatasetVolume, JobSpec
from jobs.backends.local import LocalJobs
from jobs.backends.local_runner import group_alive
from tests.jobs.factories import wait_until


@pytest.fixture
def backend(tmp_path):
    jobs = LocalJobs(root=tmp_path / "jobs", grace_s=1)
    yield jobs
    for directory in (tmp_path / "jobs").glob("job-*"):
        spec = json.loads((directory / "spec.json").read_text()) if (directory / "spec.json").exists() else None
        if spec is not None:
            job_id, attempt = directory.name[4:].split("-a")
            jobs.delete(JobSpec(int(job_id), int(attempt), "", ("x",), 1, 1).ref, grace_s=0)
    for directory in (tmp_path / "jobs").glob("job-*"):
        wait_until(lambda d=directory: (d / "exit.json").exists() or not (d / "launched").exists())


def python(code: str, **overrides) -> JobSpec:
    fields = dict(
        job_id=1, attempt=1, image="ignored:locally", command=("python", "-c", code), gpus_per_node=1, max_runtime_s=60
    )
    fields.update(overrides)
    return JobSpec(**fields)


def finished(backend, spec):
    return wait_until(lambda: (s := backend.status(spec.ref)).finished and s)


def test_a_job_runs_with_its_gpus_env_and_log(backend, tmp_path, settings):
    data = tmp_path / "imagenet"
    data.mkdir()
    code = (
        "import os\n"
        "for name in ('CUDA_VISIBLE_DEVICES', 'EPOCHS', 'PORTAL_JOB_ID', 'PORTAL_ATTEMPT', 'WORLD_SIZE', 'NODE_RANK',"
        " 'DATASET_IMAGENET', 'SECRET_KEY', 'DATABASE_URL'):\n"
        "    print(name, os.environ.get(name))\n"
        "open(os.path.join(os.environ['CHECKPOINT_DIR'], 'step'), 'w').write('1')\n"
    )
    spec = python(
        code,
        job_id=5,
        attempt=2,
        gpus_per_node=2,
        node_names=("gpu01",),
        gpu_indices=((0, 1),),
        env={"EPOCHS": "3"},
        datasets=(DatasetVolume("imagenet", claim="unused", local_path=str(data)),),
    )
    assert backend.create(spec).phase in ("pending", "running", "succeeded")
    status = finished(backend, spec)
    assert status.phase == "succeeded" and status.exit_codes == (0,) and status.finished_at >= status.started_at
    log = dict(line.split(" ", 1) for line in backend.logs(spec.ref).text.splitlines())
    assert log["CUDA_VISIBLE_DEVICES"] == "0,1" and log["EPOCHS"] == "3"
    assert (log["PORTAL_JOB_ID"], log["PORTAL_ATTEMPT"], log["WORLD_SIZE"], log["NODE_RANK"]) == ("5", "2", "1", "0")
    assert log["DATASET_IMAGENET"] == str(data)
    assert log["SECRET_KEY"] == "None" and log["DATABASE_URL"] == "None"  # the worker's secrets stay out
    assert (backend.checkpoint_dir(5) / "step").read_text() == "1"
    assert backend.logs(spec.ref, tail_lines=1).text == "DATABASE_URL None\n"


def test_a_failing_job_reports_its_exit_code(backend):
    spec = python("import sys; print('boom', flush=True); sys.exit(3)")
    backend.create(spec)
    status = finished(backend, spec)
    assert status.phase == "failed" and status.exit_codes == (3,) and "3" in status.message
    assert backend.logs(spec.ref).text == "boom\n"


def test_a_command_that_does_not_exist_fails_with_a_message(backend):
    spec = python("", command=("no-such-trainer", "--fast"))
    backend.create(spec)
    status = finished(backend, spec)
    assert status.phase == "failed" and "no-such-trainer" in status.message


def test_ranks_of_a_multi_node_job_get_their_rendezvous_and_fail_together(backend, tmp_path):
    code = (
        "import os, sys, time\n"
        "env = [os.environ[k] for k in ('NODE_RANK', 'WORLD_SIZE', 'MASTER_ADDR', 'CUDA_VISIBLE_DEVICES')]\n"
        "print(*env, flush=True)\n"
        "if os.environ['NODE_RANK'] == '1': time.sleep(0.3); sys.exit(7)\n"
        "time.sleep(30)\n"
    )
    spec = python(code, nodes=2, node_names=("gpu01", "gpu02"), gpu_indices=((0,), (0,)))
    backend.create(spec)
    status = finished(backend, spec)
    assert status.phase == "failed"
    assert [(p.rank, p.node, p.exit_code) for p in status.pods] == [(0, "gpu01", 143), (1, "gpu02", 7)]
    assert backend.logs(spec.ref, rank=0).text == "0 2 127.0.0.1 0\n"
    assert backend.logs(spec.ref, rank=1).text == "1 2 127.0.0.1 0\n"


def test_cancel_sends_sigterm_and_the_job_may_clean_up(backend):
    code = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: (print('saving checkpoint', flush=True), sys.exit(0)))\n"
        "print('training', flush=True)\n"
        "time.sleep(60)\n"
    )
    spec = python(code)
    backend.create(spec)
    wait_until(lambda: "training" in backend.logs(spec.ref).text)
    assert backend.status(spec.ref).phase == "running"
    backend.delete(spec.ref)
    status = finished(backend, spec)
    assert status.phase == "failed" and status.message == "cancelled"
    assert backend.logs(spec.ref).text == "training\nsaving checkpoint\n"
    backend.delete(spec.ref)  # again: nothing to do


def test_cancel_kills_a_job_that_ignores_sigterm_after_the_grace_period(backend):
    code = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('stubborn', flush=True)\n"
    code += "time.sleep(60)\n"
    spec = python(code)
    backend.create(spec)
    wait_until(lambda: "stubborn" in backend.logs(spec.ref).text)
    started = time.monotonic()
    backend.delete(spec.ref, grace_s=1)
    status = finished(backend, spec)
    assert status.exit_codes == (128 + signal.SIGKILL,)
    assert time.monotonic() - started >= 1.0


def test_max_runtime_is_enforced(backend):
    spec = python("import time; time.sleep(60)", max_runtime_s=1)
    backend.create(spec)
    status = finished(backend, spec)
    assert status.phase == "failed" and "max runtime" in status.message
    assert status.exit_codes == (128 + signal.SIGTERM,)


# A job writes only in its own directories: the checkpoints outlive the attempt, so the marker goes there.
COUNT_RUNS = "import os; open(os.path.join(os.environ['CHECKPOINT_DIR'], 'runs'), 'a').write('ran\\n')"


def test_create_twice_runs_once(backend):
    spec = python(COUNT_RUNS)
    marker = backend.checkpoint_dir(spec.job_id) / "runs"
    threads = [threading.Thread(target=backend.create, args=(spec,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    finished(backend, spec)
    backend.create(spec)  # after it finished: still nothing new
    time.sleep(0.3)
    assert marker.read_text() == "ran\n"


def test_a_dispatch_killed_before_the_runner_started_loses_nothing(backend):
    spec = python(COUNT_RUNS)
    marker = backend.checkpoint_dir(spec.job_id) / "runs"
    # The worker died after writing the spec and before starting the runner.
    directory = backend.root / spec.name
    (directory / "work").mkdir(parents=True)
    (directory / "spec.json").write_text(json.dumps(backend._runner_spec(spec, directory)))
    assert backend.status(spec.ref).phase == "missing"  # so the retried dispatch creates it
    backend.create(spec)
    assert finished(backend, spec).phase == "succeeded"
    assert marker.read_text() == "ran\n"


def test_a_restarted_worker_finds_the_job_where_it_left_it(backend):
    spec = python("import time; print('up', flush=True); time.sleep(60)")
    backend.create(spec)
    wait_until(lambda: "up" in backend.logs(spec.ref).text)
    again = LocalJobs(root=backend.root, grace_s=1)  # a new process knows only the directory
    assert again.status(spec.ref).phase == "running"
    assert again.create(spec).phase == "running"  # a replayed dispatch does not start it twice
    again.delete(spec.ref, grace_s=0)
    assert finished(again, spec).message == "cancelled"


def test_a_lost_runner_is_noticed_and_its_leftovers_stopped(backend):
    spec = python("import time; print('up', flush=True); time.sleep(60)")
    backend.create(spec)
    wait_until(lambda: "up" in backend.logs(spec.ref).text)
    state = json.loads((backend.root / spec.name / "state.json").read_text())
    os.kill(state["runner_pid"], signal.SIGKILL)
    status = wait_until(lambda: (s := backend.status(spec.ref)).message.startswith("running, but") and s)
    assert status.phase == "running"
    backend.delete(spec.ref, grace_s=0)
    status = finished(backend, spec)
    assert status.phase == "failed" and "lost" in status.message
    # SIGKILL is delivered asynchronously: on a loaded machine the group may take a moment to go.
    wait_until(lambda: not group_alive(state["ranks"][0]["pgid"]))


def test_cancel_before_start_and_unknown_jobs(backend):
    spec = python("print('never')")
    assert backend.status(spec.ref).phase == "missing"
    assert backend.logs(spec.ref).text == ""
    backend.delete(spec.ref)  # unknown: nothing to do


# --- logs a page at a time -------------------------------------------------------------------------


def numbered_log(backend, ref, lines: int) -> bytes:
    """A log as a job leaves it (the runner's file, written here directly): `line 000001` .. 12 bytes a line."""
    data = b"".join(b"line %06d\n" % n for n in range(1, lines + 1))
    directory = backend.root / ref.name
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "rank-0.log").write_bytes(data)
    return data


def test_a_log_larger_than_the_cap_gives_its_end_and_says_it_is_cut(backend, settings):
    settings.JOBS_LOG_RESPONSE_MAX_BYTES = 4096
    ref = python("").ref
    log = numbered_log(backend, ref, 100_000)  # 1.2 MB
    page = backend.logs(ref)
    assert page.data == log[-4096:] and page.truncated is True
    assert (page.start, page.end, page.size) == (len(log) - 4096, len(log), len(log))
    # Asked for less than the cap: exactly that, and not "cut".
    page = backend.logs(ref, limit_bytes=24)
    assert page.text == "line 099999\nline 100000\n" and page.truncated is False


def test_tail_gives_whole_lines_within_the_cap(backend, settings):
    settings.JOBS_LOG_RESPONSE_MAX_BYTES = 4096
    ref = python("").ref
    numbered_log(backend, ref, 100_000)
    page = backend.logs(ref, tail_lines=3)
    assert page.text == "line 099998\nline 099999\nline 100000\n" and page.truncated is False
    # 1000 lines are 12,000 bytes: the last 341 whole lines fit, the partial one before them is dropped.
    page = backend.logs(ref, tail_lines=1000)
    assert page.truncated is True and len(page.data) <= 4096
    assert page.text.startswith("line 099660\n") and page.text.endswith("line 100000\n")
    assert page.end - page.start == len(page.data) and page.end == page.size
    assert backend.logs(ref, tail_lines=0).text == ""


def test_byte_ranges_page_through_the_whole_log(backend, settings):
    settings.JOBS_LOG_RESPONSE_MAX_BYTES = 4096
    ref = python("").ref
    log = numbered_log(backend, ref, 1000)
    page = backend.logs(ref, offset=12 * 10, limit_bytes=24)
    assert page.text == "line 000011\nline 000012\n" and (page.start, page.end) == (120, 144)
    assert page.truncated is False
    big = backend.logs(ref, offset=0, limit_bytes=10**9)
    assert big.data == log[:4096] and big.truncated is True  # the cap, not the caller, cut it
    pages, offset = [], 0
    while offset < len(log):
        page = backend.logs(ref, offset=offset)
        assert len(page.data) <= 4096
        pages.append(page.data)
        offset = page.end
    assert b"".join(pages) == log
    past = backend.logs(ref, offset=len(log) + 5)
    assert (past.data, past.start, past.truncated) == (b"", len(log), False)


@pytest.mark.parametrize(
    "overrides",
    [
        {"command": ()},
        {"env": {"BAD-NAME": "x"}},
        {"env": {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}},
        {"gpus_per_node": 0},
        {"max_runtime_s": 0},
        {"nodes": 2, "node_names": ("gpu01",)},
    ],
)
def test_bad_specs_are_refused_and_not_retryable(backend, overrides):
    with pytest.raises(BackendError) as error:
        backend.create(python("print(1)", **overrides))
    assert error.value.retryable is False
    assert not backend.root.exists() or not list(backend.root.glob("job-*"))


def test_purge_drops_checkpoints_and_finished_attempts(backend):
    spec = python("print(1)", job_id=9)
    backend.create(spec)
    finished(backend, spec)
    assert backend.checkpoint_dir(9).exists()
    backend.purge(9)
    assert not backend.checkpoint_dir(9).exists() and backend.status(spec.ref).phase == "missing"


def test_the_setting_picks_the_backend(settings, tmp_path):
    settings.JOBS_BACKEND = "local"
    settings.JOBS_LOCAL_DIR = tmp_path / "elsewhere"
    assert get_job_backend().root == tmp_path / "elsewhere"
    settings.JOBS_BACKEND = "kubernetes"
    settings.KUBERNETES_API_URL = "http://127.0.0.1:9"
    assert get_job_backend().name == "kubernetes"
