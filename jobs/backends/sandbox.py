"""Where user code runs on this machine: a bubblewrap sandbox, never the portal's own process.

A local job (and a local notebook server, through the hub's LocalSpawner) runs its argv inside `bwrap` with:
- its own mount namespace that holds only what a program needs to run, read-only (/usr and the /lib links, a few
  files of /etc, the Python the job uses), a fresh /proc and /dev, a private /tmp, and the paths it is given (the
  attempt's work dir and checkpoints writable, datasets read-only), at the same paths as outside. The portal's
  checkout, its var/ (keys, database), its environment and its sockets (PostgreSQL's /run/postgresql) are absent;
- its own pid, IPC, UTS and cgroup namespaces (it sees only its own processes, so no /proc/PID/environ of anyone);
- a network namespace with only a loopback (the caller's: see `enter_private_network`), so 127.0.0.1:5432 and
  :6379 are not the portal's PostgreSQL and Redis;
- an unprivileged user: when the portal runs as root, setpriv drops to `uid`/`gid` (default nobody, 65534) with no
  capabilities; when it does not, bwrap maps `uid` in a user namespace of its own (the kernel still sees the
  portal's uid, but nothing of the portal is mounted and nothing of it is visible);
- rlimits (CPU seconds, memory, processes, file size, no core dumps), set before bwrap starts and inherited;
- the environment it is started with (the caller passes only the job's own), never the caller's.

If bwrap is missing, nothing runs: `missing()` says what to install. Standard library only: the job runner
(local_runner.py) and the hub's config import it without Django.
"""

from __future__ import annotations

import ctypes
import fcntl
import glob
import os
import re
import resource
import shutil
import socket
import struct
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

NOBODY = 65534
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
SANDBOX_TMP = "/tmp"  # noqa: S108 - a fresh tmpfs inside the sandbox, not the host's /tmp
INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap; scripts/run.sh and scripts/test.sh do)"

_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1


def bwrap() -> str | None:
    return shutil.which("bwrap")


def missing() -> str | None:
    """Why user code cannot run here (a sentence), or None if the sandbox is available."""
    if bwrap() is None:
        return f"user code runs only in a bubblewrap sandbox and bwrap is not installed: {INSTALL_HINT}."
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        return "user code runs as an unprivileged user and setpriv (util-linux) is not installed."
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
) -> list[str]:
    """The bwrap command line that runs argv sandboxed (start it with the environment the program gets)."""
    tool = bwrap()
    if tool is None:
        raise FileNotFoundError(missing())
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
    for path in ETC_FILES:
        args += ["--ro-bind-try", path, path]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", SANDBOX_TMP]
    if gpus:
        # GPUs of this machine (CUDA_VISIBLE_DEVICES picks among them) and the sysfs NVML reads.
        devices = sorted(glob.glob("/dev/nvidia*"))
        for device in devices:
            args += ["--dev-bind", device, device]
        if devices:
            args += ["--ro-bind", "/sys", "/sys"]
    binds = [("--ro-bind-try", path) for path in python_dirs()]
    binds += [("--ro-bind", str(path)) for path in readable] + [("--bind", str(path)) for path in writable]
    # The directories that lead to them, traversable by the user (bwrap would copy the host's modes, and
    # /root or pytest's /tmp/pytest-of-root are 0700); they exist only in the sandbox.
    leading = {str(parent) for _, path in binds for parent in Path(path).parents} - {"/", SANDBOX_TMP}
    for directory in sorted(leading, key=lambda d: d.count("/")):
        args += ["--perms", "0755", "--dir", directory]
    for option, path in sorted(binds, key=lambda bind: bind[1].count("/")):
        args += [option, path, path]
    args += ["--chdir", str(cwd), "--"]
    if as_root:
        # Root in no namespace of its own: become the unprivileged user, with no capabilities left at all.
        args += [
            shutil.which("setpriv") or "setpriv",
            f"--reuid={uid}",
            f"--regid={gid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--",
        ]
    return args + list(argv)


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
