"""A job's files, read by the portal: listed, opened for download, copied for "run again from this checkpoint".

The job owns these trees and may have left anything in them (links to /etc, FIFOs, devices, names with `..`), so
nothing here ever follows a link: every directory is opened from its parent's descriptor with O_NOFOLLOW, a file
is opened the same way (O_NONBLOCK, so a FIFO never blocks) and given out only if fstat says it is a regular
file. A path is a '/'-separated list of plain names below the root; '.', '..', empty parts, NUL and backslashes
are refused before anything is opened. Standard library only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import stat
from collections.abc import Iterator

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
MAX_DEPTH = 32
MAX_PATH = 1024


class BadPath(ValueError):
    """Not a path inside the tree (traversal, a link, not a regular file, too long)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Entry:
    path: str  # relative, '/'-separated
    kind: str  # "file", "dir" or "other" (a link, FIFO or device: listed, never opened)
    size: int
    modified: float  # a Unix time


def parts_of(path: str) -> list[str]:
    """The names of a relative path; BadPath for anything that could leave the tree."""
    if not isinstance(path, str) or not path or len(path) > MAX_PATH or "\x00" in path or "\\" in path:
        raise BadPath(path)
    parts = path.split("/")
    if path.startswith("/") or any(part in ("", ".", "..") for part in parts) or len(parts) > MAX_DEPTH:
        raise BadPath(path)
    return parts


def _kind(st: os.stat_result) -> str:
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISDIR(st.st_mode):
        return "dir"
    return "other"


def walk(root: str | os.PathLike, *, limit: int) -> tuple[list[Entry], bool]:
    """Up to `limit` entries under root (sorted by path), and whether there were more. A root that is missing (or
    a link) gives nothing."""
    try:
        top = os.open(root, _DIRECTORY)
    except OSError:
        return [], False
    entries: list[Entry] = []
    more = False
    stack: list[tuple[int, str]] = [(top, "")]
    try:
        while stack:
            fd, prefix = stack.pop()
            try:
                names = sorted(os.listdir(fd))
            except OSError:
                names = []
            subdirs = []
            for name in names:
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue
                if len(entries) >= limit:
                    more = True
                    break
                path = f"{prefix}{name}"
                kind = _kind(st)
                entries.append(Entry(path, kind, st.st_size if kind == "file" else 0, st.st_mtime))
                if kind == "dir" and path.count("/") + 1 < MAX_DEPTH:
                    subdirs.append(name)
            for name in reversed(subdirs):
                with contextlib.suppress(OSError):
                    stack.append((os.open(name, _DIRECTORY, dir_fd=fd), f"{prefix}{name}/"))
            os.close(fd)
            if more:
                break
    finally:
        for fd, _ in stack:
            os.close(fd)
    return sorted(entries, key=lambda e: e.path), more


@contextlib.contextmanager
def _directory(root: str | os.PathLike, parts: list[str]) -> Iterator[int]:
    """A descriptor of root/parts..., each step opened without following a link."""
    fd = os.open(root, _DIRECTORY)
    try:
        for part in parts:
            child = os.open(part, _DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def open_file(root: str | os.PathLike, path: str) -> tuple[int, os.stat_result]:
    """An open descriptor of the regular file root/path and its stat; BadPath otherwise (the caller closes it)."""
    parts = parts_of(path)
    try:
        with _directory(root, parts[:-1]) as parent:
            fd = os.open(parts[-1], _FILE, dir_fd=parent)
    except OSError as exc:
        raise BadPath(path) from exc
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise BadPath(path)
    os.set_blocking(fd, True)
    return fd, st


def copy_tree(source: str | os.PathLike, target: str | os.PathLike, *, max_bytes: int) -> int:
    """Copy the directories and regular files of source into target (made if missing), never a link, FIFO or
    device; stops at `max_bytes` copied. Returns the bytes copied."""
    entries, _ = walk(source, limit=100_000)
    os.makedirs(target, exist_ok=True)
    copied = 0
    for entry in entries:
        destination = os.path.join(target, *entry.path.split("/"))
        if entry.kind == "dir":
            os.makedirs(destination, exist_ok=True)
            continue
        if entry.kind != "file" or copied + entry.size > max_bytes:
            continue
        try:
            fd, _ = open_file(source, entry.path)
        except BadPath:
            continue  # changed since it was listed
        with os.fdopen(fd, "rb") as reader, open(destination, "xb") as writer:
            while chunk := reader.read(1024 * 1024):
                copied += len(chunk)
                writer.write(chunk)
                if copied > max_bytes:
                    break
    return copied
