"""A hostile job through the local backend: it never reads the portal's secrets, reaches its database, or writes
outside its own directories (the sandbox of jobs/backends/sandbox.py); and its log stops at JOBS_LOG_MAX_BYTES."""

import os
import secrets
import subprocess
import sys

import pytest

from accounts.errors import BackendError
from jobs.backends.base import JobSpec
from jobs.backends.local import LocalJobs
from tests.jobs.factories import wait_until

# Each attack prints "<name>: blocked" or "<name>: LEAKED <what it got>"; the job itself always succeeds.
HOSTILE = r"""
import glob, os, socket, sys
canaries = [c.encode() for c in sys.argv[1:3]]
decoy_pid, portal_files, attempt_dir = int(sys.argv[3]), sys.argv[4:-1], sys.argv[-1]

def report(name, leak):
    print(f"{name}: {'LEAKED ' + repr(leak)[:200] if leak else 'blocked'}", flush=True)

leaks = []
for path in glob.glob("/proc/[0-9]*/environ"):
    try:
        data = open(path, "rb").read()
    except OSError:
        continue
    if any(c in data for c in canaries) or b"DATABASE_URL=" in data:
        leaks.append(path)
report("proc-environ", leaks)
try:
    report("proc-1-environ", open("/proc/1/environ", "rb").read())
except OSError:
    report("proc-1-environ", None)
try:
    os.kill(decoy_pid, 0)
    report("signal-the-portal", decoy_pid)
except OSError:
    report("signal-the-portal", None)
got = []
for path in portal_files:
    try:
        got.append(open(path, "rb").read(64))
    except OSError:
        pass
report("portal-files", got)
for port in (5432, 6379):
    with socket.socket() as sock:
        sock.settimeout(2)
        report(f"tcp-{port}", "connected" if sock.connect_ex(("127.0.0.1", port)) == 0 else None)
sockets = glob.glob("/var/run/postgresql/*") + glob.glob("/run/postgresql/*") + glob.glob("/run/redis*/*")
reached = []
for path in sockets:
    with socket.socket(socket.AF_UNIX) as sock:
        if sock.connect_ex(path) == 0:
            reached.append(path)
report("unix-sockets", reached or None)
written = []
for path in (os.path.join(attempt_dir, "exit.json"), os.path.join(os.path.dirname(attempt_dir), "forged")):
    try:
        with open(path, "w") as handle:
            handle.write('{"phase": "succeeded"}')
        written.append(path)
    except OSError:
        pass
report("write-outside", written)
report("environment", [k for k, v in os.environ.items() if any(c in v.encode() for c in canaries)])
"""


@pytest.fixture
def backend(tmp_path):
    jobs = LocalJobs(root=tmp_path / "jobs", grace_s=1)
    yield jobs
    for directory in (tmp_path / "jobs").glob("job-*"):
        job_id, attempt = directory.name[4:].split("-a")
        jobs.delete(JobSpec(int(job_id), int(attempt), "", ("x",), 1, 1).ref, grace_s=0)


@pytest.fixture
def portal(tmp_path, settings):
    """A stand-in for the portal's processes and files: secrets in its environment, its var/ and its key."""
    canary = "canary-" + secrets.token_hex(16)
    database_url = f"postgres://portal:{secrets.token_hex(8)}@127.0.0.1:5432/portal"
    var = tmp_path / "var"
    var.mkdir()
    key = var / "oidc_rsa_private.pem"
    key.write_text(f"-----BEGIN PRIVATE KEY-----\n{canary}\n")
    key.chmod(0o600)
    env = {"PATH": os.defpath, "PORTAL_CANARY": canary, "DATABASE_URL": database_url}
    decoy = subprocess.Popen(  # noqa: S603 - a process of the portal's user with secrets in its environment
        [sys.executable, "-c", "import sys; sys.stdin.read()"], env=env, stdin=subprocess.PIPE
    )
    files = [key, settings.BASE_DIR / "portal" / "settings" / "base.py", settings.VAR_DIR / "oidc_rsa_private.pem"]
    yield {"canary": canary, "database_url": database_url, "pid": decoy.pid, "files": [str(f) for f in files]}
    decoy.kill()
    decoy.wait()


def finished(backend, spec):
    return wait_until(lambda: (s := backend.status(spec.ref)).finished and s)


def test_a_hostile_job_reads_no_secret_and_reaches_no_database(backend, portal, monkeypatch):
    worker_secret = "worker-" + secrets.token_hex(16)
    monkeypatch.setenv("PORTAL_WORKER_SECRET", worker_secret)  # the worker's own environment
    spec = JobSpec(job_id=7, attempt=1, image="ignored:locally", gpus_per_node=1, max_runtime_s=60, command=(
        "python", "-c", HOSTILE, portal["canary"], worker_secret, str(portal["pid"]), *portal["files"],
        str(backend.root / "job-7-a1"),
    ))  # fmt: skip
    backend.create(spec)
    status = finished(backend, spec)
    log = backend.logs(spec.ref).text
    assert status.phase == "succeeded", log
    results = dict(line.split(": ", 1) for line in log.splitlines())
    assert results == {
        name: "blocked"
        for name in (
            "proc-environ",
            "proc-1-environ",
            "signal-the-portal",
            "portal-files",
            "tcp-5432",
            "tcp-6379",
            "unix-sockets",
            "write-outside",
            "environment",
        )
    }, log
    assert portal["canary"] not in log and worker_secret not in log and portal["database_url"] not in log
    assert not (backend.root / "forged").exists()
    assert backend.status(spec.ref).phase == "succeeded"  # its exit.json is the runner's, not a forged one


def test_the_ranks_of_one_job_share_a_loopback_of_their_own(backend):
    code = (
        "import os, socket\n"
        "port = int(os.environ['MASTER_PORT'])\n"
        "if os.environ['NODE_RANK'] == '0':\n"
        "    server = socket.create_server(('127.0.0.1', port))\n"
        "    conn, _ = server.accept(); print('rank 0 got', conn.recv(16).decode(), flush=True)\n"
        "else:\n"
        "    import time\n"
        "    for _ in range(200):\n"
        "        try:\n"
        "            sock = socket.create_connection(('127.0.0.1', port)); break\n"
        "        except OSError:\n"
        "            time.sleep(0.05)\n"
        "    sock.sendall(b'hello'); print('rank 1 sent', flush=True)\n"
    )
    spec = JobSpec(
        job_id=8, attempt=1, image="x", command=("python", "-c", code), gpus_per_node=1, nodes=2, max_runtime_s=60
    )
    backend.create(spec)
    status = finished(backend, spec)
    assert status.phase == "succeeded", backend.logs(spec.ref, rank=0).text + backend.logs(spec.ref, rank=1).text
    assert backend.logs(spec.ref, rank=0).text == "rank 0 got hello\n"


def test_a_job_runs_as_an_unprivileged_user(backend):
    code = "import os; print(os.getuid(), os.getgid(), open('/proc/self/status').read().split('CapEff:')[1].split()[0])"
    spec = JobSpec(job_id=9, attempt=1, image="x", command=("python", "-c", code), gpus_per_node=1, max_runtime_s=60)
    backend.create(spec)
    assert finished(backend, spec).phase == "succeeded"
    assert backend.logs(spec.ref).text == "65534 65534 0000000000000000\n"


def test_the_log_of_a_rank_stops_at_its_cap_with_one_line_saying_so(backend, settings):
    settings.JOBS_LOG_MAX_BYTES = 4096
    code = "import sys\nfor n in range(2000):\n    print(f'line {n:05d} ' + 'x' * 80)\nprint('done', file=sys.stderr)\n"
    spec = JobSpec(job_id=10, attempt=1, image="x", command=("python", "-c", code), gpus_per_node=1, max_runtime_s=60)
    backend.create(spec)
    assert finished(backend, spec).phase == "succeeded"  # the job was never blocked by its log
    output = "".join(f"line {n:05d} {'x' * 80}\n" for n in range(2000)).encode()
    notice = b"[log truncated at 4096 bytes (JOBS_LOG_MAX_BYTES): the rest of this rank's output was dropped]\n"
    # The first 4096 bytes, a newline that ends the line cut short, and the one line saying so; nothing after.
    assert (backend.root / spec.name / "rank-0.log").read_bytes() == output[:4096] + b"\n" + notice


def test_without_bubblewrap_a_local_job_is_refused_not_run_unsandboxed(backend, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    spec = JobSpec(
        job_id=11, attempt=1, image="x", command=("python", "-c", "print(1)"), gpus_per_node=1, max_runtime_s=60
    )
    with pytest.raises(BackendError, match="bwrap is not installed") as error:
        backend.create(spec)
    assert error.value.retryable is False
    assert not (backend.root / spec.name / "launched").exists()


def test_the_job_gets_sigterm_and_its_sandbox_waits_for_it(backend):
    code = (
        "import signal, sys, time\n"
        "def stop(*_):\n"
        "    print('checkpoint written', flush=True); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "print('training', flush=True)\n"
        "time.sleep(60)\n"
    )
    spec = JobSpec(job_id=12, attempt=1, image="x", command=("python", "-c", code), gpus_per_node=1, max_runtime_s=60)
    backend.create(spec)
    wait_until(lambda: "training" in backend.logs(spec.ref).text)
    backend.delete(spec.ref, grace_s=30)
    status = finished(backend, spec)
    assert status.message == "cancelled" and status.exit_codes == (0,)
    assert backend.logs(spec.ref).text == "training\ncheckpoint written\n"  # its own handler ran, not a SIGKILL


def test_a_job_gets_its_share_of_memory_cpu_time_and_file_size(backend, settings):
    settings.JOBS_MEMORY_PER_GPU = "2Gi"
    settings.JOBS_CPU_PER_GPU = "500m"
    settings.JOBS_CHECKPOINT_SIZE = "1Gi"
    code = (
        "import resource as r\n"
        "print(*(r.getrlimit(k)[0] for k in (r.RLIMIT_DATA, r.RLIMIT_CPU, r.RLIMIT_FSIZE, r.RLIMIT_CORE)))\n"
    )
    spec = JobSpec(job_id=13, attempt=1, image="x", command=("python", "-c", code), gpus_per_node=2, max_runtime_s=600)
    backend.create(spec)
    assert finished(backend, spec).phase == "succeeded"
    # 2 GPUs: 4 GiB of heap, 0.5 CPU each over 600 s (+60 s of slack), a file as large as the checkpoint volume.
    assert backend.logs(spec.ref).text.split() == [str(4 * 1024**3), str(600 + 60), str(1024**3), "0"]
