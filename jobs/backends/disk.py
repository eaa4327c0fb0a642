"""What a local job's directories hold on disk, for its quota (JOBS_DISK_QUOTA): the runner adds it up every few
seconds. Standard library only (the runner is a script without Django).

The job owns the tree and may change it while this walks, so the walk never follows a link (each directory is
opened from its parent's descriptor with O_NOFOLLOW) and never recurses (a stack, one descriptor per level, at
most MAX_DEPTH levels: a tree nested deeper cannot be measured, and the runner treats it as over its quota).
"""

from __future__ import annotations

import contextlib
import os
import stat

MAX_DEPTH = 256
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class TooDeep(Exception):
    """The tree is nested deeper than MAX_DEPTH directories."""


def disk_usage(paths: list[str]) -> int:
    """Bytes on disk under the paths (blocks, so sparse files count what they hold; each inode once).

    Raises TooDeep for a tree deeper than MAX_DEPTH."""
    seen: set[tuple[int, int]] = set()
    total = 0

    def count(st: os.stat_result) -> None:
        nonlocal total
        if (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512

    def enter(fd: int) -> tuple[int, list[str]]:
        """Count the directory and its files; its subdirectories' names, to walk next."""
        subdirs = []
        with contextlib.suppress(OSError):
            count(os.fstat(fd))
            for name in os.listdir(fd):
                with contextlib.suppress(OSError):
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    if stat.S_ISDIR(st.st_mode):
                        subdirs.append(name)
                    else:
                        count(st)
        return fd, subdirs

    for top in paths:
        try:
            stack = [enter(os.open(top, _DIRECTORY))]
        except OSError:
            continue
        try:
            while stack:
                fd, subdirs = stack[-1]
                if not subdirs:
                    os.close(stack.pop()[0])
                    continue
                name = subdirs.pop()
                with contextlib.suppress(OSError):
                    stack.append(enter(os.open(name, _DIRECTORY, dir_fd=fd)))
                    if len(stack) > MAX_DEPTH:
                        raise TooDeep
        finally:
            for fd, _ in stack:
                os.close(fd)
    return total


def size_text(count: int) -> str:
    value, unit = float(count), "bytes"
    for bigger in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{count} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
