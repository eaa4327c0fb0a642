"""Where user code runs on this machine: a bubblewrap sandbox, never the portal's own process.

A local job (and a local notebook server, through the hub's LocalSpawner) runs its argv inside `bwrap` with:
- its own mount namespace that holds only what a program needs to run, read-only (/usr and the /lib links, a few
  files of /etc, the Python the job uses), a fresh /proc and /dev, a private /tmp, and the paths it is given (the
  attempt's work dir and checkpoints writable, datasets read-only), at the same paths as outside. The portal's
  checkout, its var/ (keys, database), its environment and its sockets (PostgreSQL's /run/postgresql) are absent;
- its own pid, IPC, UTS and cgroup namespaces (it sees only its own processes, so no /proc/PID/environ of anyone);
- a network namespace with only a loopback (the caller's: see `enter_private_network`), so 127.0.0.1:5432 and
  :6379 are not the portal's PostgreSQL and Redis;
- an unprivileged user: when the portal runs as root, setpriv drops to the tenant's `uid`/`gid` with no
  capabilities and no_new_privs (setuid programs gain nothing); when it does not, bwrap maps `uid` in a user
  namespace of its own (the kernel still sees the portal's uid, but nothing of the portal is mounted or visible);
- an identity its programs expect: a generated /etc/passwd and /etc/group (root, the user, nobody) and HOME, USER
  and LOGNAME, so getpass.getuser(), pwd.getpwuid(os.getuid()) and ~ work;
- a seccomp filter (seccomp.py, loaded by bwrap before the first program inside): no namespaces (so no user
  namespace, even where the portal runs as root and bwrap has no --disable-userns), mounts, keyrings, bpf, ...;
- rlimits (CPU seconds, memory, processes, file size, no core dumps), set before bwrap starts and inherited.

The environment. Nothing a user submits reaches a process with rights: bwrap, setpriv (root, all capabilities until
it drops them) and, when the portal is not root, bwrap in the portal's own user outside any namespace would obey
LD_PRELOAD, GCONV_PATH, MALLOC_*, ... (rules.env_reader). So `start` runs them with a fixed environment of the
portal's (`host_env`: PATH and LANG), and hands the program's own environment over as a file, copied into this
sandbox only (`--ro-bind-data`): the exec shim (sandbox_exec.py), run by the portal's Python with -I -S after the
rights are gone, applies it in the last exec. What a job sets there can only affect itself: it could set the same
from its own code. The API refuses those names too (defence in depth), but this is the fix.

Arguments a user controls never become options: bwrap, setpriv and the shim each end their options with `--`
before the argv, and every path bound is absolute and normalised (`ValueError` otherwise) and chosen by the portal.

If bwrap is missing, nothing runs: `missing()` says what to install. Standard library only: the job runner
(local_runner.py) and the hub's config import it without Django (by path: its siblings are loaded the same way).
"""

from __future__ import annotations

import ctypes
import dataclasses
import fcntl
import functools
import glob
import importlib
import importlib.util
import json
import os
import re
import resource
import shutil
import socket
import struct
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any


def _sibling(name: str) -> ModuleType:
    """A module beside this one: from the package, or by path when this file was itself loaded by path."""
    if __package__:
        return importlib.import_module(f"{__package__}.{name}")
    key = f"portal_sandbox_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, Path(__file__).with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


rules = _sibling("rules")
seccomp = _sibling("seccomp")

NOBODY = 65534
# The fixed PATH of the processes with rights, and where the shim and the program's environment lie inside.
HOST_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SHIM = "/run/sandbox/exec.py"
ENV_FILE = "/run/sandbox/env.json"
COMMAND_OPTIONS = frozenset(
    {"writable", "readable", "hostname", "unshare_net", "new_session", "die_with_parent", "gpus", "tmp_size"}
)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What of /etc a program needs: the dynamic linker's cache, alternatives (links in /usr/bin), time zone, CAs.
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
    "/etc/nsswitch.conf",
)
# Where the files a job brings (its script) appear, read-only: a directory of the sandbox only.
JOB_FILES_DIR = "/portal"
SANDBOX_TMP = "/tmp"  # noqa: S108 - a fresh tmpfs inside the sandbox, not the host's /tmp
INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap; scripts/run.sh and scripts/test.sh do)"

_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1


def bwrap() -> str | None:
    return shutil.which("bwrap")


@functools.lru_cache(maxsize=4)
def _bwrap_options(tool: str) -> str:
    try:
        asked = subprocess.run(  # noqa: S603 - bwrap itself, asked for its options
            [tool, "--help"], capture_output=True, text=True, timeout=10, env=host_env()
        )
        return asked.stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def missing() -> str | None:
    """Why user code cannot run here (a sentence), or None if the sandbox is available."""
    tool = bwrap()
    if tool is None:
        return f"user code runs only in a bubblewrap sandbox and bwrap is not installed: {INSTALL_HINT}."
    if not all(option in _bwrap_options(tool) for option in ("--ro-bind-data", "--seccomp", "--perms", "--size")):
        return f"the installed bwrap is too old (0.8 or later is needed): {INSTALL_HINT}."
    if os.geteuid() == 0 and shutil.which("setpriv", path=HOST_PATH) is None:
        return "user code runs as an unprivileged user and setpriv (util-linux) is not installed."
    try:
        seccomp.program()
    except seccomp.Unsupported as exc:
        return f"user code runs under a seccomp filter and there is {exc}."
    return None


def quantity(value: str | int) -> int:
    """A Kubernetes-style quantity in bytes ("24Gi", "512Mi", "1G", "1000"); CPU millis ("500m") in thousandths."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGTP]i?|m)?\s*", str(value))
    if match is None:
        raise ValueError(f"not a quantity: {value!r}")
    number, unit = float(match.group(1)), match.group(2) or ""
    if unit == "m":
        return int(number)
    scale = 1024 if unit.endswith("i") else 1000
    power = " KMGTP".index(unit[:1]) if unit else 0
    return int(number * scale**power)


def python_dirs() -> list[str]:
    """The Python this process runs (a virtual environment and its base), for jobs that run `python`."""
    dirs = []
    for prefix in (sys.prefix, os.path.realpath(sys.prefix), sys.base_prefix, os.path.realpath(sys.base_prefix)):
        if prefix not in dirs and not any(prefix == d or prefix.startswith(d + "/") for d in SYSTEM_DIRS):
            dirs.append(prefix)
    return dirs


@dataclasses.dataclass(frozen=True)
class Identity:
    """Who the program is inside the sandbox: its uid and gid, a user name and a home (in passwd and HOME)."""

    uid: int
    gid: int
    name: str = "user"
    home: str = "/"

    def __post_init__(self) -> None:
        if self.uid <= 0 or self.gid <= 0:
            raise ValueError("a sandbox never runs as root (uid or gid 0)")
        if not re.fullmatch(r"[a-z0-9_][a-z0-9_.-]{0,31}", self.name):
            raise ValueError(f"not a user name for /etc/passwd: {self.name!r} (see Identity.user_name)")
        if any(c in self.home for c in ":\n") or not os.path.isabs(self.home):
            raise ValueError(f"not a home directory for /etc/passwd: {self.home!r}")

    @staticmethod
    def user_name(text: str) -> str:
        """A name /etc/passwd holds safely, from a portal or hub user name ("user" if nothing is left of it)."""
        name = re.sub(r"[^a-z0-9_.-]", "_", text.lower())[:32].strip("._-") or "user"
        return f"user-{name}" if name in ("root", "nobody", "nogroup") else name

    def passwd(self) -> str:
        lines = ["root:x:0:0:root:/root:/usr/sbin/nologin", f"{self.name}:x:{self.uid}:{self.gid}::{self.home}:/bin/sh"]
        if self.uid != NOBODY:
            lines.append(f"nobody:x:{NOBODY}:{NOBODY}:nobody:/nonexistent:/usr/sbin/nologin")
        return "\n".join(lines) + "\n"

    def group(self) -> str:
        lines = ["root:x:0:", f"{self.name}:x:{self.gid}:"]
        if self.gid != NOBODY:
            lines.append(f"nogroup:x:{NOBODY}:")
        return "\n".join(lines) + "\n"

    def env(self) -> dict[str, str]:
        return {"HOME": self.home, "USER": self.name, "LOGNAME": self.name}


def host_env() -> dict[str, str]:
    """The environment of every process that runs with rights (bwrap, setpriv): the portal's, fixed."""
    env = {"PATH": HOST_PATH, "LANG": "C.UTF-8"}
    refused = [name for name in env if rules.env_reader(name)]
    if refused:  # the last filter: nothing the loader or libc reads, even if someone adds to the line above
        raise ValueError(f"not for a privileged process: {', '.join(refused)}")
    return env


def _checked(path: str | os.PathLike[str]) -> str:
    path = os.fspath(path)
    if not os.path.isabs(path) or os.path.normpath(path) != path or "\n" in path:
        raise ValueError(f"a sandbox binds absolute, normalised paths only, not {path!r}")
    return path


def command(
    argv: Iterable[str],
    *,
    cwd: str,
    writable: Iterable[str] = (),
    readable: Iterable[str] = (),
    uid: int = NOBODY,
    gid: int = NOBODY,
    hostname: str = "sandbox",
    unshare_net: bool = False,
    new_session: bool = False,
    die_with_parent: bool = False,
    gpus: bool = True,
    data: Mapping[str, int] | None = None,
    seccomp_fd: int | None = None,
    tmp_size: int = 0,
) -> list[str]:
    """The bwrap command line that runs argv sandboxed, through the exec shim (see `start`, which gives the fds:
    `data` maps a path inside to an fd whose content becomes that read-only file; `seccomp_fd` is the filter)."""
    tool = bwrap()
    if tool is None:
        raise FileNotFoundError(missing())
    argv = list(argv)
    if not argv:
        raise ValueError("nothing to run")
    args = [tool, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", hostname]
    as_root = os.geteuid() == 0
    if not as_root:
        # bwrap's own user namespace: uid/gid inside, no capabilities, no further user namespaces.
        args += ["--unshare-user", "--uid", str(uid), "--gid", str(gid), "--disable-userns"]
    if unshare_net:
        args.append("--unshare-net")
    if new_session:
        args.append("--new-session")
    if die_with_parent:
        args.append("--die-with-parent")
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += (["--size", str(int(tmp_size))] if tmp_size > 0 else []) + ["--tmpfs", SANDBOX_TMP]
    if gpus:
        # GPUs of this machine (CUDA_VISIBLE_DEVICES picks among them) and the sysfs NVML reads.
        devices = sorted(glob.glob("/dev/nvidia*"))
        for device in devices:
            args += ["--dev-bind", device, device]
        if devices:
            args += ["--ro-bind", "/sys", "/sys"]
    binds = [("--ro-bind-try", path) for path in (*ETC_FILES, *python_dirs())]
    binds += [("--ro-bind", _checked(path)) for path in readable] + [("--bind", _checked(path)) for path in writable]
    data = {_checked(path): int(fd) for path, fd in (data or {}).items()}
    # The directories that lead to them, traversable by the user (bwrap makes the ones it needs 0700, and would
    # copy the host's modes: /root or pytest's /tmp/pytest-of-root are 0700); they exist only in the sandbox.
    leading = {str(parent) for path in [*(p for _, p in binds), *data] for parent in Path(path).parents}
    for directory in sorted(leading - {"/", SANDBOX_TMP}, key=lambda d: (d.count("/"), d)):
        args += ["--perms", "0755", "--dir", directory]
    for option, path in sorted(binds, key=lambda bind: bind[1].count("/")):
        args += [option, path, path]
    # The shim, the program's environment, passwd and group: copies, in this sandbox only, readable by its user.
    for path, fd in sorted(data.items()):
        args += ["--perms", "0444", "--ro-bind-data", str(fd), path]
    if seccomp_fd is not None:
        args += ["--seccomp", str(int(seccomp_fd))]
    args += ["--chdir", _checked(cwd), "--"]
    if as_root:
        # Root in no namespace of its own: become the unprivileged user, with no capabilities left at all.
        args += [
            shutil.which("setpriv", path=HOST_PATH) or "setpriv",
            f"--reuid={uid}",
            f"--regid={gid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]
    return args + [sys.executable, "-I", "-S", SHIM, ENV_FILE, "--", *argv]


def _memfd(data: bytes) -> int:
    fd = os.memfd_create("sandbox")
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def start(
    argv: Iterable[str],
    *,
    env: Mapping[str, str],
    identity: Identity,
    cwd: str,
    limits: Mapping[str, int] | None = None,
    files: Mapping[str, str] | None = None,
    **options: Any,
) -> subprocess.Popen:
    """Start argv in the sandbox as `identity`, with exactly `env` (plus HOME, USER, LOGNAME where it has none).

    `options` are `command`'s (writable, readable, hostname, unshare_net, ...) and Popen's (stdout, stderr,
    start_new_session, ...). bwrap and setpriv get `host_env()`; `env` reaches only the shim's last exec.
    `files` are more read-only files made in the sandbox only (path inside: text), e.g. a job's script.
    """
    popen = {key: options.pop(key) for key in list(options) if key not in COMMAND_OPTIONS}
    own = {
        SHIM: Path(__file__).with_name("sandbox_exec.py").read_bytes(),
        ENV_FILE: json.dumps({**identity.env(), **env}).encode(),
        "/etc/passwd": identity.passwd().encode(),
        "/etc/group": identity.group().encode(),
    }
    for path, text in (files or {}).items():
        if not _checked(path).startswith(JOB_FILES_DIR + "/"):
            raise ValueError(f"a job's own files go under {JOB_FILES_DIR}/, not {path}")
        own[path] = text.encode()
    fds = {path: _memfd(content) for path, content in own.items()}
    filter_fd = _memfd(seccomp.program())
    try:
        args = command(argv, cwd=cwd, uid=identity.uid, gid=identity.gid, data=fds, seccomp_fd=filter_fd, **options)
        return subprocess.Popen(  # noqa: S603 - bwrap, then the shim, then the caller's argv; never a shell
            args,
            env=host_env(),
            pass_fds=[*fds.values(), filter_fd],
            preexec_fn=limiter(limits) if limits else None,  # noqa: PLW1509 - callers start sandboxes from one thread
            **popen,
        )
    finally:
        for fd in [*fds.values(), filter_fd]:
            os.close(fd)


def limiter(limits: Mapping[str, int]) -> Callable[[], None]:
    """A preexec_fn that sets the rlimits (names of `resource.RLIMIT_*` without the prefix, lowercased; 0: none)."""
    pairs = [(getattr(resource, f"RLIMIT_{name.upper()}"), int(value)) for name, value in limits.items()]

    def apply() -> None:
        for which, value in pairs:
            if value > 0 or which == resource.RLIMIT_CORE:
                resource.setrlimit(which, (value, value))

    return apply


def enter_private_network() -> None:
    """Move this process into a new network namespace with only a loopback, up (the ranks it starts share it).

    Root creates it directly; anyone else first enters a user namespace of its own (same uid and gid inside),
    which is what gives it the right to. Raises OSError when the kernel refuses.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    uid, gid = os.geteuid(), os.getegid()
    flags = _CLONE_NEWNET if uid == 0 else _CLONE_NEWNET | _CLONE_NEWUSER
    if libc.unshare(flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"cannot create a network namespace: {os.strerror(code)}")
    if uid != 0:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH22x", b"lo", 0)
        flags_now = struct.unpack("16sH22x", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags_now | _IFF_UP))
