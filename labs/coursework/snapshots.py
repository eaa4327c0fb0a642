"""Snapshots of a student's assignment folder: packed once into a .tar.gz, made read-only, never changed; read back
member by member for the teacher's read-only view. Like files.py, nothing is followed: links are left out."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import tarfile
from pathlib import Path

from labs.coursework.files import _CHUNK, MANIFEST, _open_chain, _read_at, walk_files


@dataclasses.dataclass
class Collected:
    sha256: str
    size_bytes: int
    files: int
    skipped: list[str]


def snapshot(
    homes: Path, home: str, parts: tuple[str, ...], out: Path, *, max_bytes: int, file_max_bytes: int, max_files: int
) -> Collected:
    """Pack homes/home/parts... into out (.tar.gz, created once, then made read-only); symlinks, special files,
    files over file_max_bytes and anything past max_bytes or max_files are left out and named in `skipped`.
    A missing folder gives an empty archive."""
    skipped: list[str] = []
    count = total = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        try:
            folder = _open_chain(homes, (home, *parts))
        except OSError:
            folder = None
        if folder is not None:
            try:
                for rel, parent, size in walk_files(folder, "", skipped):
                    if rel == MANIFEST or rel.endswith(".portal-tmp"):
                        continue
                    if size > file_max_bytes or total + size > max_bytes or count >= max_files:
                        skipped.append(rel)
                        continue
                    try:
                        data = _read_at(parent, rel.rsplit("/", 1)[-1], file_max_bytes + 1)
                    except OSError:  # swapped for something else since the walk saw it
                        skipped.append(rel)
                        continue
                    if len(data) > file_max_bytes:
                        skipped.append(rel)
                        continue
                    info = tarfile.TarInfo(rel)
                    info.size, info.mode, info.mtime = len(data), 0o644, 0
                    tar.addfile(info, io.BytesIO(data))
                    count, total = count + 1, total + len(data)
            finally:
                os.close(folder)
    os.chmod(out, 0o444)
    return Collected(sha256=file_sha256(out), size_bytes=total, files=count, skipped=skipped)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def snapshot_list(path: Path) -> list[dict]:
    with tarfile.open(path, "r:gz") as tar:
        return [{"name": m.name, "size": m.size} for m in tar.getmembers() if m.isfile()]


def snapshot_read(path: Path, name: str, *, max_bytes: int) -> bytes | None:
    """One file of a snapshot (None if there is none of that name), at most max_bytes of it."""
    with tarfile.open(path, "r:gz") as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name == name:
                handle = tar.extractfile(member)
                return handle.read(max_bytes) if handle else None
    return None
