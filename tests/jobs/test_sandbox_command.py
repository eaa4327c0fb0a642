"""The sandbox's command line and seccomp filter, without running a job: both paths (a portal that is root, one that
is not), what a user's argv can and cannot become, and the filter's answer for each system call on x86_64 and
aarch64 (through a small classic-BPF interpreter)."""

import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from jobs.backends import disk, rules, sandbox, seccomp

HOSTILE_ARGV = ["--bind", "/", "/host", "--setenv", "LD_PRELOAD", "/x.so", "--", "sh"]


def build(monkeypatch, *, root: bool, **options):
    monkeypatch.setattr(os, "geteuid", lambda: 0 if root else 1000)
    fds = {"/etc/passwd": 5, sandbox.ENV_FILE: 6, sandbox.SHIM: 7}
    return sandbox.command(
        HOSTILE_ARGV, cwd="/srv/jobs/job-1-a1/work", writable=["/srv/jobs/job-1-a1/work"], uid=1000000042,
        gid=1000000042, data=fds, seccomp_fd=8, **options,
    )  # fmt: skip


def test_without_root_bwrap_maps_the_user_in_its_own_namespace_and_no_user_namespace_after(monkeypatch):
    args = build(monkeypatch, root=False)
    assert args[0] == shutil.which("bwrap")
    options = args[: args.index("--")]
    assert "--unshare-user" in options and "--disable-userns" in options
    assert options[options.index("--uid") + 1] == "1000000042" and options[options.index("--gid") + 1] == "1000000042"
    assert "setpriv" not in " ".join(args)
    assert options[options.index("--seccomp") + 1] == "8"
    assert options[options.index("/etc/passwd") - 4 : options.index("/etc/passwd") + 1] == [
        "--perms",
        "0444",
        "--ro-bind-data",
        "5",
        "/etc/passwd",
    ]
    # After bwrap's options: the shim, run isolated by the portal's Python, then the user's argv, whatever it says.
    assert args[args.index("--") + 1 :] == [sys.executable, "-I", "-S", sandbox.SHIM, sandbox.ENV_FILE, "--"] + (
        HOSTILE_ARGV
    )
    assert "/host" not in options and "LD_PRELOAD" not in options


def test_as_root_setpriv_drops_every_right_before_the_shim(monkeypatch):
    args = build(monkeypatch, root=True)
    options = args[: args.index("--")]
    assert "--unshare-user" not in options and "--uid" not in options
    rest = args[args.index("--") + 1 :]
    assert rest[0].endswith("setpriv")
    setpriv = rest[: rest.index("--")]
    assert setpriv[1:] == [
        "--reuid=1000000042",
        "--regid=1000000042",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
    ]
    assert rest[rest.index("--") + 1 :] == [sys.executable, "-I", "-S", sandbox.SHIM, sandbox.ENV_FILE, "--"] + (
        HOSTILE_ARGV
    )


@pytest.mark.parametrize("path", ["relative/work", "/srv/jobs/../../etc", "/srv/jobs/./x", "/srv/a\nb"])
def test_a_path_that_is_not_absolute_and_normalised_is_never_bound(monkeypatch, path):
    with pytest.raises(ValueError, match="absolute, normalised paths only"):
        build(monkeypatch, root=True, readable=[path])


def test_the_privileged_environment_is_fixed_and_an_identity_is_safe_for_passwd():
    assert sandbox.host_env() == {"PATH": sandbox.HOST_PATH, "LANG": "C.UTF-8"}
    assert sandbox.Identity.user_name("Ada.Lovelace") == "ada.lovelace"
    assert sandbox.Identity.user_name("root") == "user-root"
    assert sandbox.Identity.user_name("x:0:0::/:/bin/sh\nevil") == "x_0_0_____bin_sh_evil"
    assert sandbox.Identity.user_name("") == "user"
    with pytest.raises(ValueError):
        sandbox.Identity(uid=0, gid=0)
    with pytest.raises(ValueError):
        sandbox.Identity(uid=5, gid=5, name="a:b")
    identity = sandbox.Identity(uid=1000000042, gid=1000000042, name="ada", home="/srv/jobs/job-1-a1/work")
    assert identity.passwd().splitlines() == [
        "root:x:0:0:root:/root:/usr/sbin/nologin",
        "ada:x:1000000042:1000000042::/srv/jobs/job-1-a1/work:/bin/sh",
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
    ]
    assert identity.group().splitlines() == ["root:x:0:", "ada:x:1000000042:", "nogroup:x:65534:"]


@pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/usr/bin/python3").exists(), reason="runs a portal as nobody: needs root"
)
def test_a_portal_that_is_not_root_runs_the_sandbox_in_a_user_namespace():
    """The same start() as an unprivileged portal: the uid of bwrap's namespace, its passwd, the env only inside."""
    scratch = Path(tempfile.mkdtemp())
    scratch.chmod(0o777)
    script = scratch / "portal.py"
    script.write_text(
        "import subprocess, sys\n"
        f"sys.path.insert(0, {str(Path(sandbox.__file__).parent)!r})\n"
        "import sandbox\n"
        f"me = sandbox.Identity(uid=4242, gid=4242, name='ada', home={str(scratch)!r})\n"
        "code = 'import ctypes, getpass, os; c = ctypes.CDLL(None, use_errno=True); "
        'print(getpass.getuser(), os.getuid(), os.environ["GCONV_PATH"], c.unshare(0x10000000))\'\n'
        "job = sandbox.start(['/usr/bin/python3', '-c', code], env={'PATH': '/usr/bin', 'GCONV_PATH': '/x'},\n"
        f"    identity=me, cwd={str(scratch)!r}, writable=[{str(scratch)!r}], stdout=subprocess.PIPE)\n"
        "print(job.communicate()[0].decode(), end='')\n"
    )
    try:
        ran = subprocess.run(  # noqa: S603 - the test's own script, as nobody
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", str(script)],
            capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"},
        )  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert ran.stdout == "ada 4242 /x -1\n", ran.stderr


# --- the seccomp filter, read instruction by instruction ------------------------------------------------------------


def evaluate(program: bytes, *, arch: int, nr: int, arg0: int = 0) -> int:
    """What the filter answers for one system call (classic BPF: loads, forward jumps, returns)."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    code = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    pc, acc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
            pc += 1
        elif op in (0x15, 0x35, 0x45):
            taken = {0x15: acc == k, 0x35: acc >= k, 0x45: bool(acc & k)}[op]
            pc += 1 + (jt if taken else jf)
        elif op == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected opcode {op:#x}")


EPERM = 0x00050000 | 1
ENOSYS = 0x00050000 | 38
ALLOW, KILL = 0x7FFF0000, 0x80000000
THREAD = 0x3D0F00  # what glibc's pthread_create passes to clone
FORK = 17  # SIGCHLD: fork()


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_filter_denies_namespaces_mounts_and_the_rest_and_allows_threads(machine):
    program = seccomp.program(machine)
    arch, numbers = seccomp.ARCHES[machine]

    def answer(name: str, arg0: int = 0) -> int:
        return evaluate(program, arch=arch, nr=numbers[name], arg0=arg0)

    assert answer("unshare", 0x10000000) == EPERM  # CLONE_NEWUSER
    assert answer("unshare", 0x00020000) == EPERM  # CLONE_NEWNS
    assert answer("unshare", 0x00000080) == EPERM  # CLONE_NEWTIME
    assert answer("unshare", 0x00000400) == ALLOW  # CLONE_FILES: no namespace
    assert answer("clone", THREAD) == ALLOW and answer("clone", FORK) == ALLOW
    assert answer("clone", FORK | 0x10000000) == EPERM and answer("clone", FORK | 0x40000000) == EPERM
    assert answer("clone3") == ENOSYS
    for name in seccomp.DENIED:
        assert answer(name) == EPERM, name
    read = {"x86_64": 0, "aarch64": 63}[machine]
    assert evaluate(program, arch=arch, nr=read) == ALLOW
    assert evaluate(program, arch=0x40000003, nr=numbers["mount"]) == KILL  # i386 on x86_64: other numbers
    if machine == "x86_64":
        assert evaluate(program, arch=arch, nr=0x40000000 | read) == KILL  # the x32 ABI


def test_an_unknown_architecture_has_no_filter_and_no_sandbox():
    with pytest.raises(seccomp.Unsupported, match="riscv64"):
        seccomp.program("riscv64")


@pytest.mark.parametrize(
    ("name", "reader"),
    [
        ("LD_PRELOAD", "loader"),
        ("LD_LIBRARY_PATH", "loader"),
        ("LD_AUDIT", "loader"),
        ("GCONV_PATH", "libc"),
        ("MALLOC_CHECK_", "libc"),
        ("GLIBC_TUNABLES", "libc"),
        ("HOSTALIASES", "libc"),
        ("TMPDIR", "libc"),
        ("PYTHONPATH", "python"),
        ("PYTHONSTARTUP", "python"),
        ("ld_preload", None),  # names are case-sensitive: ld.so reads LD_PRELOAD only
        ("PYTHONHASHSEED", None),
        ("PYTHONUNBUFFERED", None),
        ("EPOCHS", None),
    ],
)
def test_the_one_list_of_variables_a_job_may_not_set(name, reader):
    assert rules.env_reader(name) == reader
    assert (rules.env_refusal(name) is None) == (reader is None)


def test_disk_usage_counts_blocks_once_and_follows_no_link(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "data").write_bytes(os.urandom(100_000))
    os.link(tmp_path / "a" / "b" / "data", tmp_path / "a" / "again")  # one file, two names
    os.symlink("/usr", tmp_path / "a" / "usr")  # the machine's, not the job's
    with open(tmp_path / "sparse", "wb") as handle:
        handle.seek(10**9)
        handle.write(b"x")  # a gigabyte long, one block on disk
    du = subprocess.run(["du", "-sB1", str(tmp_path)], capture_output=True, text=True, check=True)  # noqa: S607
    assert disk.disk_usage([str(tmp_path)]) == int(du.stdout.split()[0])
    deep = tmp_path / "deep"
    deep.mkdir()
    os.makedirs(os.path.join(deep, *["d"] * (disk.MAX_DEPTH + 1)))
    with pytest.raises(disk.TooDeep):
        disk.disk_usage([str(deep)])
    assert disk.size_text(3 * 1024**2 + 1) == "3.0 MiB" and disk.size_text(512) == "512 bytes"
