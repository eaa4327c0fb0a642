"""The seccomp filter of every sandbox: a classic BPF program, built here, that bwrap loads (`--seccomp FD`).

bwrap installs it, with PR_SET_NO_NEW_PRIVS, as the last step before it runs the first program inside the sandbox,
so it binds setpriv, the exec shim and everything the job or notebook starts. It denies with EPERM what a job never
needs and what widens the kernel's attack surface or undoes the sandbox: new namespaces (`unshare`, and `clone` with
any CLONE_NEW* flag: no user namespace, so no "root" inside one), `setns`, mounts (`mount`, `umount2`,
`pivot_root` and the new mount API), keyrings, `bpf`, `perf_event_open`, `userfaultfd`, kernel modules and kexec,
`open_by_handle_at`. `clone3` answers ENOSYS: its flags live in memory a filter cannot read, and the C library then
falls back to `clone`, whose flags it can. Everything else is allowed: threads and fork (`clone` without namespace
flags) work, so do PyTorch, torchrun and JupyterLab. A system call of another architecture (a 32-bit or x32
program) kills the process: the numbers below would mean something else there.

Standard library only (the job runner and the hub load it without Django).
"""

from __future__ import annotations

import os
import struct

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
_NR, _ARCH, _ARG0_LOW = 0, 4, 16
# Classic BPF opcodes.
_LD_W_ABS = 0x20
_JEQ_K, _JGE_K, _JSET_K = 0x15, 0x35, 0x45
_RET_K = 0x06
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000
EPERM, ENOSYS = 1, 38
_X32_SYSCALL_BIT = 0x40000000

# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET; unshare also takes CLONE_NEWTIME (0x80),
# which in clone's flags is part of the exit signal.
CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
UNSHARE_NAMESPACES = CLONE_NAMESPACES | 0x00000080

DENIED = (
    "setns", "mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
    "mount_setattr", "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "open_by_handle_at",
)  # fmt: skip

# Per machine: the audit architecture the kernel reports, and the system call numbers.
ARCHES = {
    "x86_64": (0xC000003E, {
        "clone": 56, "clone3": 435, "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321, "perf_event_open": 298,
        "userfaultfd": 323, "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
        "delete_module": 176, "open_by_handle_at": 304,
    }),
    "aarch64": (0xC00000B7, {
        "clone": 220, "clone3": 435, "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
        "mount_setattr": 442, "keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280, "perf_event_open": 241,
        "userfaultfd": 282, "kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273,
        "delete_module": 106, "open_by_handle_at": 265,
    }),
}  # fmt: skip


class Unsupported(RuntimeError):
    """No filter for this machine's architecture (a sandbox is then not started: never without its filter)."""


def _assemble(program: list[tuple]) -> bytes:
    """(opcode, k, true label, false label) or (label,) entries -> struct sock_filter[] (jumps resolved)."""
    where, position = {}, 0
    for entry in program:
        if len(entry) == 1:
            where[entry[0]] = position
        else:
            position += 1
    out, position = [], 0
    for entry in program:
        if len(entry) == 1:
            continue
        code, k, true, false = entry
        jt = where[true] - position - 1 if true else 0
        jf = where[false] - position - 1 if false else 0
        if not (0 <= jt <= 255 and 0 <= jf <= 255):
            raise ValueError(f"jump out of range at {position}")  # classic BPF jumps only forward, 8 bits
        out.append(struct.pack("=HBBI", code, jt, jf, k))
        position += 1
    return b"".join(out)


def program(machine: str | None = None) -> bytes:
    """The filter for `machine` (default: this one's, from uname) as bwrap's --seccomp reads it."""
    machine = machine or os.uname().machine
    if machine not in ARCHES:
        raise Unsupported(f"no seccomp filter for the {machine} architecture (x86_64 and aarch64 only)")
    audit_arch, numbers = ARCHES[machine]
    code: list[tuple] = [
        (_LD_W_ABS, _ARCH, None, None),
        (_JEQ_K, audit_arch, "native", "kill"),
        ("native",),
        (_LD_W_ABS, _NR, None, None),
    ]
    if machine == "x86_64":
        code.append((_JGE_K, _X32_SYSCALL_BIT, "kill", None))
    code += [
        (_JEQ_K, numbers["clone3"], "enosys", None),
        (_JEQ_K, numbers["unshare"], "unshare", None),
        (_JEQ_K, numbers["clone"], "clone", None),
    ]
    code += [(_JEQ_K, numbers[name], "eperm", None) for name in DENIED]
    code += [
        (_RET_K, _RET_ALLOW, None, None),
        ("unshare",),
        (_LD_W_ABS, _ARG0_LOW, None, None),
        (_JSET_K, UNSHARE_NAMESPACES, "eperm", "allow"),
        ("clone",),
        (_LD_W_ABS, _ARG0_LOW, None, None),
        (_JSET_K, CLONE_NAMESPACES, "eperm", "allow"),
        ("allow",),
        (_RET_K, _RET_ALLOW, None, None),
        ("eperm",),
        (_RET_K, _RET_ERRNO | EPERM, None, None),
        ("enosys",),
        (_RET_K, _RET_ERRNO | ENOSYS, None, None),
        ("kill",),
        (_RET_K, _RET_KILL_PROCESS, None, None),
    ]
    return _assemble(code)
