"""What a job can do to the machine and to other people through the local backend, past its own sandbox: its
environment reaches no process that runs with rights (LD_PRELOAD end to end), it has an identity its programs
expect, it cannot make namespaces or mount, one person's processes do not stop another's jobs, and its disk is
limited. Specs go to the backend directly: nothing here relies on the API's validation."""

import os
import re
import secrets
import sys
from pathlib import Path

import pytest

from accounts.errors import BackendError
from jobs.backends.base import DatasetVolume, JobSpec
from jobs.backends.local import LocalJobs
from tests.jobs.factories import wait_until

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "deploy" / "jupyterhub"))
from portal_hub import spawners  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="uids per person and setpriv need a portal run as root")

# A constructor that records the uid of every process that loads it: in a directory only root may write (the
# marker) and in the job's checkpoints (the trace).
PRELOAD_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void preloaded(void) {
    char line[64];
    int n = snprintf(line, sizeof line, "uid=%d\n", (int)getuid());
    const char *paths[] = {MARKER, TRACE};
    for (int i = 0; i < 2; i++) {
        int fd = open(paths[i], O_WRONLY | O_CREAT | O_APPEND, 0666);
        if (fd >= 0) { write(fd, line, n); close(fd); }
    }
}
"""


@pytest.fixture
def backend(tmp_path, settings):
    # A uid range of this test process's own: other checkouts' tests may run jobs for the same user ids at once.
    settings.JOBS_LOCAL_UID_BASE = 2_000_000_000 + (os.getpid() % 1_000_000) * 1000
    settings.JOBS_LOCAL_UID_COUNT = 1000
    jobs = LocalJobs(root=tmp_path / "jobs", grace_s=1)
    jobs.disk_check_s = 0.2
    yield jobs
    for directory in (tmp_path / "jobs").glob("job-*"):
        job_id, attempt = directory.name[4:].split("-a")
        jobs.delete(JobSpec(int(job_id), int(attempt), "", ("x",), 1, 1).ref, grace_s=0)
    for directory in (tmp_path / "jobs").glob("job-*"):
        wait_until(lambda d=directory: (d / "exit.json").exists() or not (d / "launched").exists())


def job(code: str, *, job_id: int = 1, attempt: int = 1, owner_id: int | None = 1, **fields) -> JobSpec:
    command = fields.pop("command", ("python", "-c", code))
    return JobSpec(
        job_id=job_id, attempt=attempt, image="x", command=command, gpus_per_node=1, max_runtime_s=60,
        owner=fields.pop("owner", f"user{owner_id}"), owner_id=owner_id, **fields,
    )  # fmt: skip


def run(backend, spec):
    backend.create(spec)
    return wait_until(lambda: (s := backend.status(spec.ref)).finished and s, timeout=60)


def uid_of(settings, owner_id: int) -> int:
    return settings.JOBS_LOCAL_UID_BASE + owner_id


# --- (1) the job's environment ------------------------------------------------------------------------------------


def test_ld_preload_of_a_library_the_job_built_runs_in_the_job_only_never_with_rights(backend, tmp_path, settings):
    root_only = tmp_path / "root-only"
    root_only.mkdir(mode=0o700)
    marker = root_only / "preloaded-as"
    checkpoints = backend.checkpoint_dir(31)
    library, trace = checkpoints / "fast.so", checkpoints / "trace"
    build = (
        "import os, subprocess, sys\n"
        f"open('fast.c', 'w').write({PRELOAD_C!r})\n"
        f"flags = ['-DMARKER=\"{marker}\"', '-DTRACE=\"{trace}\"']\n"
        f"subprocess.run(['gcc', '-shared', '-fPIC', *flags, '-o', {str(library)!r}, 'fast.c'], check=True)\n"
        "print('built', flush=True)\n"
    )
    first = run(backend, job(build, job_id=31))
    assert first.phase == "succeeded", backend.logs(job("", job_id=31).ref).text
    assert library.exists() and not trace.exists()

    # The next attempt names it in LD_PRELOAD (no validation on this path): bwrap and setpriv, which run as root,
    # must not load it; the job's own program does, as the job's user, where it can only hurt itself.
    second = job("print('job ran', flush=True)", job_id=31, attempt=2, env={"LD_PRELOAD": str(library)})
    status = run(backend, second)
    assert status.phase == "succeeded", backend.logs(second.ref).text
    assert backend.logs(second.ref).text == "job ran\n"
    assert not marker.exists()
    assert trace.read_text() == f"uid={uid_of(settings, 1)}\n"

    # A library outside the sandbox (the first attempt's work dir): only what runs with rights could have read it.
    outside = backend.root / "job-31-a1" / "work" / "fast.so"
    library.rename(outside)
    third = job("print('job ran', flush=True)", job_id=31, attempt=3, env={"LD_PRELOAD": str(outside)})
    assert run(backend, third).phase == "succeeded"
    assert "job ran" in backend.logs(third.ref).text and not marker.exists()


HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def environ(pid: int) -> dict[str, str]:
    data = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in data.decode(errors="replace").split("\0") if "=" in item)


def session_processes(sid: int) -> dict[int, int]:
    """pid -> real uid of every process of the session (a rank's processes: bwrap, its init, the job)."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            status = (entry / "status").read_text()
        except OSError:
            continue
        if entry.name.isdigit() and int(stat[stat.rfind(")") + 2 :].split()[3]) == sid:
            found[int(entry.name)] = int(status.split("\nUid:")[1].split()[0])
    return found


def test_loader_libc_and_python_variables_reach_the_job_and_no_process_with_rights(backend, settings):
    canary = "canary-" + secrets.token_hex(8)
    env = {"GCONV_PATH": "/nowhere/gconv", "PYTHONPATH": "/nowhere/py", "MALLOC_CHECK_": "3", "CANARY": canary}
    code = "import os, time\nprint(*(os.environ.get(k) for k in ('GCONV_PATH', 'PYTHONPATH', 'MALLOC_CHECK_')))\n"
    spec = job(code + "print('up', flush=True)\ntime.sleep(60)\n", env=env)
    backend.create(spec)
    wait_until(lambda: "up" in backend.logs(spec.ref).text)
    assert backend.logs(spec.ref).text == "/nowhere/gconv /nowhere/py 3\nup\n"
    state = (backend.root / spec.name / "state.json").read_text()
    sid = int(re.search(r'"pgid": (\d+)', state).group(1))
    processes = session_processes(sid)
    privileged = [pid for pid, uid in processes.items() if uid == 0]
    jobs = [pid for pid, uid in processes.items() if uid != 0]
    assert privileged and jobs, processes
    for pid in privileged:  # bwrap, and its init inside the sandbox
        assert environ(pid) == {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": "C.UTF-8",
        }
    assert all(environ(pid)["CANARY"] == canary for pid in jobs)


def test_a_program_the_machine_has_but_the_sandbox_does_not_cannot_start_and_says_so(backend, tmp_path):
    tool = tmp_path / "host-only-tool"  # passes the runner's early check (it exists here), not inside
    tool.write_text("#!/bin/sh\necho ran\n")
    tool.chmod(0o755)
    spec = job("", command=(str(tool), "--fast"))
    status = run(backend, spec)
    assert status.phase == "failed" and status.exit_codes == (127,)
    assert backend.logs(spec.ref).text == f"cannot start {str(tool)!r}: No such file or directory\n"


# --- (5) an identity ----------------------------------------------------------------------------------------------


IDENTITY = (
    "import getpass, grp, os, pwd, subprocess\n"
    "me = pwd.getpwuid(os.getuid())\n"
    "print(getpass.getuser(), me.pw_name, me.pw_dir, os.path.expanduser('~'), os.environ['USER'],"
    " os.environ['LOGNAME'], grp.getgrgid(os.getgid()).gr_name)\n"
    "print(subprocess.run(['id', '-un'], capture_output=True, text=True).stdout.strip())\n"
    "os.makedirs(os.path.expanduser('~/.cache/torch'), exist_ok=True); print('cache ok')\n"
)


def test_a_job_has_a_passwd_entry_home_user_and_logname(backend):
    spec = job(IDENTITY, owner="Ada.Lovelace")
    assert run(backend, spec).phase == "succeeded", backend.logs(spec.ref).text
    home = str(backend.root / spec.name / "work")
    assert backend.logs(spec.ref).text.splitlines() == [
        f"ada.lovelace ada.lovelace {home} {home} ada.lovelace ada.lovelace ada.lovelace",
        "ada.lovelace",
        "cache ok",
    ]


# --- (4) no namespaces, no mounts ---------------------------------------------------------------------------------


SYSCALLS = r"""
import ctypes, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
def errno(result):
    return os.strerror(ctypes.get_errno()) if result != 0 else "allowed"
print("unshare -Ur:", subprocess.run(["unshare", "-Ur", "true"], capture_output=True, text=True).stderr.strip())
print("user namespace:", errno(libc.unshare(0x10000000)))
print("mount namespace:", errno(libc.unshare(0x00020000)))
print("mount:", errno(libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)))
print("unshare files:", errno(libc.unshare(0x00000400)))
results = []
threads = [threading.Thread(target=results.append, args=(n,)) for n in range(8)]
[t.start() for t in threads]; [t.join() for t in threads]
print("threads:", len(results))
print("subprocess:", subprocess.run(["python", "-c", "print(6 * 7)"], capture_output=True, text=True).stdout.strip())
status = open("/proc/self/status").read()
print("no_new_privs:", status.split("NoNewPrivs:")[1].split()[0], "seccomp:", status.split("Seccomp:")[1].split()[0])
"""


def test_a_job_cannot_make_namespaces_or_mount_but_threads_and_processes_work(backend):
    spec = job(SYSCALLS)
    assert run(backend, spec).phase == "succeeded", backend.logs(spec.ref).text
    assert backend.logs(spec.ref).text.splitlines() == [
        "unshare -Ur: unshare: unshare failed: Operation not permitted",
        "user namespace: Operation not permitted",
        "mount namespace: Operation not permitted",
        "mount: Operation not permitted",
        "unshare files: allowed",
        "threads: 8",
        "subprocess: 42",
        "no_new_privs: 1 seccomp: 2",
    ]


# --- (2) one uid per person ---------------------------------------------------------------------------------------


FILL = r"""
import os, time
children = 0
while True:
    try:
        pid = os.fork()
    except BlockingIOError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    children += 1
print("full after", children, "children", flush=True)
time.sleep(60)
"""


STARTS = (
    "import subprocess\nprint(subprocess.run(['echo', 'started'], capture_output=True, text=True).stdout.strip())\n"
)


def test_one_persons_processes_do_not_stop_anothers_job_or_notebook(backend, settings, tmp_path):
    settings.JOBS_LOCAL_MAX_PROCESSES = 24
    greedy = job(FILL, job_id=41, owner_id=1)
    backend.create(greedy)
    wait_until(lambda: "full after" in backend.logs(greedy.ref).text, timeout=30)
    assert backend.logs(greedy.ref).text == "full after 23 children\n"  # the limit holds, for that person

    # Starting a program is one process; what it starts next (a thread, a subprocess) is where the limit bites.
    other = job(STARTS, job_id=42, owner_id=2)
    assert run(backend, other).phase == "succeeded", backend.logs(other.ref).text
    assert backend.logs(other.ref).text == "started\n"
    same = job(STARTS, job_id=43, owner_id=1)
    assert run(backend, same).phase == "failed"  # the same person is at their limit

    sandbox = spawners.load_sandbox()
    home = tmp_path / "homes" / "carl"
    home.mkdir(parents=True)
    uid = uid_of(settings, 3)
    spawners.give_to(home, uid, uid)
    sockets = tmp_path / "run" / "3-nb1"
    sockets.mkdir(parents=True)
    spawners.give_to(sockets, uid, uid)
    server = spawners.start_server(
        sandbox, [sys.executable, "-c", "print('server up')"], env={"PATH": os.defpath},
        identity=sandbox.Identity(uid=uid, gid=uid, name="carl", home=str(home)), sockets=sockets, port=18890,
        hub_port=18891, limits={"nproc": settings.JOBS_LOCAL_MAX_PROCESSES},
    )  # fmt: skip
    assert server.wait(timeout=30) == 0


def test_each_person_runs_as_their_own_uid_and_owns_their_directories(backend, settings):
    spec = job("import os; print(os.getuid(), os.getgid(), os.getgroups())", job_id=44, owner_id=5)
    assert run(backend, spec).phase == "succeeded"
    uid = uid_of(settings, 5)
    assert backend.logs(spec.ref).text == f"{uid} {uid} []\n"  # no supplementary groups
    for path in (backend.root / spec.name / "work", backend.checkpoint_dir(44)):
        info = path.stat()
        assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (uid, uid, 0o700)
    with pytest.raises(BackendError, match="past the 1000 uids of JOBS_LOCAL_UID_COUNT") as error:
        backend.create(job("print(1)", job_id=45, owner_id=1000))
    assert error.value.retryable is False


# --- (3) disk ------------------------------------------------------------------------------------------------------


WRITE = r"""
import os, time
for folder, name in ((os.environ["HOME"], "a"), (os.environ["CHECKPOINT_DIR"], "b")):
    with open(os.path.join(folder, name), "wb") as handle:
        for _ in range(3):
            handle.write(os.urandom(1024 * 1024))
print("wrote 6 MiB", flush=True)
time.sleep(60)
"""


def test_a_job_past_its_disk_quota_is_stopped_with_the_reason_and_its_usage(backend, settings):
    settings.JOBS_DISK_QUOTA = "4Mi"
    bystander = job("import time; time.sleep(1); print('fine', flush=True)", job_id=52, owner_id=2)
    backend.create(bystander)
    spec = job(WRITE, job_id=51)  # 3 MiB in its work dir, 3 in its checkpoints: only together past 4 MiB
    status = run(backend, spec)
    assert status.phase == "failed" and status.exit_codes == (137,)
    assert [pod.reason for pod in status.pods] == ["disk_quota_exceeded"]
    held = re.fullmatch(
        r"stopped: its work and checkpoint directories held (\d+\.\d) MiB on disk, more than its disk quota of "
        r"4\.0 MiB \(JOBS_DISK_QUOTA\)",
        status.message,
    )
    assert held and float(held.group(1)) >= 6.0, status.message
    assert backend.logs(spec.ref).text == "wrote 6 MiB\n"
    assert run(backend, bystander).phase == "succeeded"  # another person's job, at the same time
    assert (backend.checkpoint_dir(51) / "b").stat().st_size == 3 * 1024 * 1024  # kept, for a later attempt


def test_a_job_gets_no_dataset_that_is_the_systems_or_the_portals(backend, settings, tmp_path):
    for path in ("/", "/etc", str(settings.VAR_DIR), str(backend.root), str(tmp_path / "data" / ".." / "jobs")):
        spec = job("print(1)", datasets=(DatasetVolume("keys", local_path=path),))
        with pytest.raises(BackendError, match=f"dataset keys's directory {re.escape(path)} may not be given") as error:
            backend.create(spec)
        assert error.value.retryable is False
    assert not list(backend.root.glob("job-*"))
