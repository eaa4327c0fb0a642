"""The file handling of course work, done as the portal but never trusting what is in the files.

Nothing here runs or follows user content: every path is walked with directory file descriptors and O_NOFOLLOW
(a symlink a student or a repository planted is skipped, never followed), archives are read member by member and
written by us (never `extractall`), and sizes and counts are capped. Homes are written only below
<home>/<course>/<folder>; a file whose content the student changed since it was handed out is left alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from django.utils.translation import gettext as _

MANIFEST = ".portal-handout.json"  # in a delivered folder: what was handed out (hashes), never collected
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 16


class UnsafeContent(Exception):
    """An archive or repository the portal will not take; the message is a sentence for the person."""


def safe_member(name: str) -> PurePosixPath | None:
    """A relative path with no '..', no absolute start, no empty or odd parts; None if it is not one."""
    if not name or "\\" in name or "\0" in name or name.startswith("/"):
        return None
    path = PurePosixPath(name)
    parts = [p for p in path.parts if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts) or any(len(p) > 255 for p in parts):
        return None
    return PurePosixPath(*parts)


# --- Reading the store and homes without following anything ------------------------------------------------------


def _open_dir(parent_fd: int | None, name: str | os.PathLike[str], *, create: bool = False) -> int:
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o755, dir_fd=parent_fd)
    return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)


def _open_chain(root: Path, parts: tuple[str, ...], *, create: bool = False) -> int:
    """A descriptor of root/parts..., every step opened with O_NOFOLLOW (a symlink anywhere raises OSError)."""
    if create:
        root.mkdir(parents=True, exist_ok=True)
    fd = _open_dir(None, root)
    try:
        for part in parts:
            nxt = _open_dir(fd, part, create=create)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def walk_files(dir_fd: int, prefix: str = "", skipped: list[str] | None = None) -> Iterator[tuple[str, int, int]]:
    """(relative path, parent dir fd, size) of each regular file below dir_fd, sorted; symlinks and other kinds
    are named in `skipped` and never opened."""
    with os.scandir(dir_fd) as entries:
        ordered = sorted(entries, key=lambda e: e.name)
    for entry in ordered:
        rel = f"{prefix}{entry.name}"
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            child = _open_dir(dir_fd, entry.name)
            try:
                yield from walk_files(child, rel + "/", skipped)
            finally:
                os.close(child)
        elif stat.S_ISREG(st.st_mode):
            yield rel, dir_fd, st.st_size
        elif skipped is not None:
            skipped.append(rel)


def _read_at(dir_fd: int, name: str, max_bytes: int = -1) -> bytes:
    # O_NONBLOCK: a file swapped for a FIFO after the walk looked at it must not hang the portal.
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(f"{name} is not a plain file")
        return handle.read(max_bytes)


def _sha256_at(dir_fd: int, name: str) -> str | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    digest = hashlib.sha256()
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def store_files(root: Path) -> list[tuple[str, int]]:
    """The regular files of a handout's store: (relative path, size)."""
    if not root.is_dir():
        return []
    fd = _open_chain(root, ())
    try:
        return [(rel, size) for rel, _parent, size in walk_files(fd)]
    finally:
        os.close(fd)


# --- Taking content in: an uploaded zip, a git repository --------------------------------------------------------


def unpack_zip(upload, dest: Path, *, max_bytes: int, max_files: int) -> tuple[int, int]:
    """Unpack an uploaded zip into dest (a fresh folder); (files, bytes). UnsafeContent for traversal, symlinks,
    too many files or too many bytes, or something that is not a zip."""
    try:
        archive = zipfile.ZipFile(upload)
    except (zipfile.BadZipFile, OSError, ValueError):
        raise UnsafeContent(_("The upload is not a zip archive.")) from None
    with archive:
        members = archive.infolist()
        files = [m for m in members if not m.is_dir()]
        if len(files) > max_files:
            raise UnsafeContent(
                _("The archive holds %(n)d files; at most %(max)d are taken.") % {"n": len(files), "max": max_files}
            )
        total = 0
        plan = []
        for member in members:
            path = safe_member(member.filename)
            if path is None:
                raise UnsafeContent(
                    _("The archive has an unsafe path (“%(name)s”): paths must stay inside the folder.")
                    % {"name": member.filename[:80]}
                )
            mode = member.external_attr >> 16
            if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
                raise UnsafeContent(
                    _("The archive holds a link or special file (“%(name)s”); only plain files and folders are taken.")
                    % {"name": member.filename[:80]}
                )
            if member.is_dir():
                continue
            total += member.file_size
            if total > max_bytes:
                raise UnsafeContent(
                    _("The archive unpacks to more than %(mb)d MB, the lab's limit.") % {"mb": max_bytes >> 20}
                )
            plan.append((member, path))
        dest.mkdir(parents=True, exist_ok=False)
        written = 0
        for member, path in plan:
            target = dest.joinpath(*path.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, open(target, "xb") as out:
                # Sizes in the header can lie: count what is really read.
                for chunk in iter(lambda: source.read(_CHUNK), b""):
                    written += len(chunk)
                    if written > max_bytes:
                        raise UnsafeContent(
                            _("The archive unpacks to more than %(mb)d MB, the lab's limit.") % {"mb": max_bytes >> 20}
                        )
                    out.write(chunk)
        return len(plan), written


def git_url_problem(url: str, local_roots: list[str]) -> str | None:
    """Why a repository address is refused (a sentence), or None."""
    url = (url or "").strip()
    if not url or any(c.isspace() for c in url) or url.startswith("-"):
        return _("Give the repository's address, e.g. https://git.example.edu/course/week1.git.")
    parts = urlsplit(url)
    if parts.scheme in ("https", "http", "git"):
        return None if parts.hostname else _("The repository's address has no host.")
    if parts.scheme in ("", "file"):
        path = Path(parts.path if parts.scheme == "file" else url)
        if path.is_absolute():
            resolved = path.resolve()
            for root in local_roots:
                if resolved.is_relative_to(Path(root).resolve()):
                    return None
        return _("Repositories on the portal's own disk are not allowed here; give an https:// address.")
    return _("Only https://, http:// and git:// repository addresses are taken.")


def git_fetch(url: str, ref: str, dest: Path, *, timeout_s: int, max_bytes: int, max_files: int) -> tuple[int, int]:
    """A shallow clone of url (at ref) into dest, without its .git, symlinks and special files; (files, bytes).
    git runs with no hooks, no templates, no system or global config, and only the transports asked for."""
    work = dest.with_name(dest.name + ".clone")
    shutil.rmtree(work, ignore_errors=True)
    command = [
        "git",
        "-c", "core.hooksPath=/dev/null",
        "-c", "core.symlinks=false",
        "-c", "protocol.allow=never",
        "-c", "protocol.https.allow=always",
        "-c", "protocol.http.allow=always",
        "-c", "protocol.git.allow=always",
        "-c", "protocol.file.allow=always",
        "clone", "--quiet", "--depth", "1", "--no-tags", "--template=",
    ]  # fmt: skip
    if ref:
        command += ["--branch", ref]
    command += ["--", url, str(work)]
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(dest.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "/bin/false",
        "LANG": "C.UTF-8",
    }
    try:
        done = subprocess.run(  # noqa: S603
            command, env=env, capture_output=True, timeout=timeout_s, stdin=subprocess.DEVNULL, check=False
        )
    except subprocess.TimeoutExpired:
        shutil.rmtree(work, ignore_errors=True)
        raise UnsafeContent(_("The repository did not answer within %(s)d seconds.") % {"s": timeout_s}) from None
    if done.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise UnsafeContent(_("The repository could not be fetched: %(why)s") % {"why": why[0][:200]})
    try:
        shutil.rmtree(work / ".git", ignore_errors=True)
        dest.mkdir(parents=True, exist_ok=False)
        fd = _open_chain(work, ())
        count = total = 0
        try:
            for rel, parent, size in walk_files(fd):
                count, total = count + 1, total + size
                if count > max_files or total > max_bytes:
                    raise UnsafeContent(
                        _("The repository is larger than the lab's limit (%(mb)d MB, %(n)d files).")
                        % {"mb": max_bytes >> 20, "n": max_files}
                    )
                target = dest / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(_read_at(parent, rel.rsplit("/", 1)[-1]))
        finally:
            os.close(fd)
        return count, total
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --- Into homes: copy without overwriting what the student changed -----------------------------------------------


def _chown_like(dir_fd: int, name: str | None, owner: tuple[int, int] | None) -> None:
    if owner is None:
        return
    if name is None:
        os.fchown(dir_fd, *owner)
    else:
        os.chown(name, *owner, dir_fd=dir_fd, follow_symlinks=False)


def deliver(store: Path, homes: Path, home: str, parts: tuple[str, ...]) -> dict[str, int]:
    """Copy a handout's store into homes/home/parts...: new files are added, files still as handed out are updated,
    files the student changed are kept (nbgitpuller's rule). Returns counts {added, updated, kept}."""
    counts = {"added": 0, "updated": 0, "kept": 0}
    home_path = homes / home
    created_home = not home_path.exists()
    home_path.mkdir(parents=True, exist_ok=True)
    home_fd = _open_chain(homes, (home,))
    try:
        st = os.fstat(home_fd)
        # As root, what is written becomes the home owner's (a home made here is the spawner's to give over).
        owner = (st.st_uid, st.st_gid) if os.geteuid() == 0 and not created_home and st.st_uid != 0 else None
        fd = home_fd
        for part in parts:
            nxt = _open_dir(fd, part, create=True)
            _chown_like(nxt, None, owner)
            if fd != home_fd:
                os.close(fd)
            fd = nxt
        try:
            try:
                manifest = json.loads(_read_at(fd, MANIFEST))
            except (OSError, ValueError):
                manifest = {}
            handed = dict(manifest.get("files", {})) if isinstance(manifest, dict) else {}
            store_fd = _open_chain(store, ())
            try:
                for rel, parent, _size in walk_files(store_fd):
                    data = _read_at(parent, rel.rsplit("/", 1)[-1])
                    digest = hashlib.sha256(data).hexdigest()
                    *dirs, name = rel.split("/")
                    target_fd = fd
                    opened = []
                    try:
                        for part in dirs:
                            target_fd = _open_dir(target_fd, part, create=True)
                            opened.append(target_fd)
                            _chown_like(target_fd, None, owner)
                        current = _sha256_at(target_fd, name)
                        if current is None:
                            exists = _exists_at(target_fd, name)
                            if exists:  # a link or a folder where the file goes: left as it is
                                counts["kept"] += 1
                                continue
                            counts["added"] += 1
                        elif current == digest:
                            handed[rel] = digest
                            continue
                        elif handed.get(rel) == current:
                            counts["updated"] += 1
                        else:
                            counts["kept"] += 1
                            continue
                        _write_at(target_fd, name, data, owner)
                        handed[rel] = digest
                    finally:
                        for opened_fd in opened:
                            os.close(opened_fd)
            finally:
                os.close(store_fd)
            _write_at(fd, MANIFEST, json.dumps({"files": handed}, sort_keys=True).encode(), owner)
        finally:
            if fd != home_fd:
                os.close(fd)
    finally:
        os.close(home_fd)
    return counts


def _exists_at(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _write_at(dir_fd: int, name: str, data: bytes, owner: tuple[int, int] | None) -> None:
    """Write through a temporary name and rename over (never through a link planted at the name)."""
    temp = f".{name}.portal-tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp, dir_fd=dir_fd)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
        if owner is not None:
            os.fchown(out.fileno(), *owner)
    os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
