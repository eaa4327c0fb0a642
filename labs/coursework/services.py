"""The writes of course work: publish material and assignments, release them into homes, collect snapshots at the
deadline, hand in (late if past the deadline), grant extensions. `coursework_tick` (beat) releases and collects.
"""

from __future__ import annotations

import datetime as dt
import logging
import shutil
import uuid
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify
from django.utils.translation import gettext as _

from accounts.errors import Conflict, InvalidInput, NotFound
from accounts.models import User
from accounts.selectors import hub_username
from labs.coursework import files, snapshots
from labs.coursework.selectors import (
    due_for,
    handout_store,
    released_handouts_for,
    store_dir,
    students_of_course,
)
from labs.models import Extension, Handout, HandoutKind, HandoutSource, Submission, SubmissionTrigger

log = logging.getLogger(__name__)


def homes_dir() -> Path | None:
    value = getattr(settings, "NOTEBOOKS_HOMES_DIR", "")
    return Path(value) if value else None


def _mb(value: int) -> int:
    return value * 1024 * 1024


def _fetch(*, source: str, git_url: str, git_ref: str, upload, dest: Path) -> tuple[int, int]:
    caps = {"max_bytes": _mb(settings.COURSEWORK_UPLOAD_MAX_MB), "max_files": settings.COURSEWORK_MAX_FILES}
    if source == HandoutSource.GIT:
        problem = files.git_url_problem(git_url, settings.COURSEWORK_GIT_LOCAL_ROOTS)
        if problem:
            raise InvalidInput(problem, fields={"git_url": problem})
        if git_ref and (git_ref.startswith("-") or any(c.isspace() for c in git_ref) or ".." in git_ref):
            raise InvalidInput(_("Not a branch or tag name."), fields={"git_ref": _("Not a branch or tag name.")})
        return files.git_fetch(git_url.strip(), git_ref, dest, timeout_s=settings.COURSEWORK_GIT_TIMEOUT_S, **caps)
    if upload is None:
        sentence = _("Upload the course folder as a zip archive.")
        raise InvalidInput(sentence, fields={"archive": sentence})
    if getattr(upload, "size", 0) > caps["max_bytes"]:
        sentence = _("The archive is larger than %(mb)d MB, the lab's limit.") % {
            "mb": settings.COURSEWORK_UPLOAD_MAX_MB
        }
        raise InvalidInput(sentence, fields={"archive": sentence})
    return files.unpack_zip(upload, dest, **caps)


def handout_publish(
    *,
    user: User,
    course,
    kind: str,
    title: str,
    source: str,
    release_at: dt.datetime,
    due_at: dt.datetime | None = None,
    git_url: str = "",
    git_ref: str = "",
    upload=None,
    now: dt.datetime | None = None,
) -> Handout:
    """Take the content in (a git repository or an uploaded zip) and record the handout; released now if its
    release time has come. Bad content is a 400 with a sentence and leaves nothing behind."""
    now = now or timezone.now()
    title = (title or "").strip()
    slug = slugify(title)[:60]
    if not title or not slug:
        raise InvalidInput(_("Give it a title."), fields={"title": _("Give it a title with letters or digits.")})
    if kind == HandoutKind.ASSIGNMENT:
        if due_at is None:
            raise InvalidInput(_("An assignment needs a deadline."), fields={"due_at": _("Give the deadline.")})
        if due_at <= release_at:
            sentence = _("The deadline must come after the release.")
            raise InvalidInput(sentence, fields={"due_at": sentence})
    else:
        due_at = None
    if Handout.objects.filter(course=course, slug=slug).exists():
        sentence = _("This course already has material or an assignment called “%(title)s”.") % {"title": title}
        raise InvalidInput(sentence, fields={"title": sentence})
    staging = store_dir() / "staging" / uuid.uuid4().hex
    staging.parent.mkdir(parents=True, exist_ok=True)
    try:
        try:
            count, size = _fetch(source=source, git_url=git_url, git_ref=git_ref, upload=upload, dest=staging)
        except files.UnsafeContent as exc:
            field = "git_url" if source == HandoutSource.GIT else "archive"
            raise InvalidInput(str(exc), fields={field: str(exc)}) from None
        try:
            with transaction.atomic():
                handout = Handout.objects.create(
                    course=course,
                    kind=kind,
                    title=title[:120],
                    slug=slug,
                    source=source,
                    git_url=git_url.strip() if source == HandoutSource.GIT else "",
                    git_ref=git_ref if source == HandoutSource.GIT else "",
                    release_at=release_at,
                    due_at=due_at,
                    files=count,
                    size_bytes=size,
                    created_by=user,
                )
                target = handout_store(handout)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.rmtree(target, ignore_errors=True)
                staging.rename(target)
        except IntegrityError:
            sentence = _("This course already has material or an assignment called “%(title)s”.") % {"title": title}
            raise InvalidInput(sentence, fields={"title": sentence}) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if release_at <= now:
        handout_release(handout=handout, now=now)
    return handout


def handout_release(*, handout: Handout, now: dt.datetime | None = None) -> int:
    """Mark it released (once) and copy it into every enrolled student's home; returns how many homes got it."""
    now = now or timezone.now()
    claimed = Handout.objects.filter(pk=handout.pk, released_at__isnull=True).update(released_at=now)
    handout.released_at = handout.released_at or now
    if not claimed:
        return 0
    delivered = 0
    for student in students_of_course(handout.course):
        delivered += _deliver_one(handout, student)
    return delivered


def _deliver_one(handout: Handout, student: User) -> int:
    homes = homes_dir()
    if homes is None:
        return 0
    try:
        files.deliver(handout_store(handout), homes, hub_username(student), (handout.course.code, handout.slug))
    except OSError as exc:
        # A home that cannot take it now (a planted link, a full disk) gets it at the next start.
        log.warning("could not hand %s out to %s: %s", handout.pk, student.pk, exc)
        return 0
    return 1


def handouts_deliver_to(*, user: User, now: dt.datetime | None = None) -> int:
    """Copy every released handout of the person's courses into their home (at a notebook's start): new and
    unchanged files brought up to date, their own edits kept."""
    return sum(_deliver_one(handout, user) for handout in released_handouts_for(user, now=now))


def _snapshot(handout: Handout, student: User, *, trigger: str, late: bool, now: dt.datetime) -> Submission:
    homes = homes_dir() or (store_dir() / "no-homes")
    relative = (
        Path("submissions") / str(handout.pk) / str(student.pk) / f"{now:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}.tar.gz"
    )
    collected = snapshots.snapshot(
        homes,
        hub_username(student),
        (handout.course.code, handout.slug),
        store_dir() / relative,
        max_bytes=_mb(settings.COURSEWORK_SNAPSHOT_MAX_MB),
        file_max_bytes=_mb(settings.COURSEWORK_FILE_MAX_MB),
        max_files=settings.COURSEWORK_MAX_FILES,
    )
    return Submission.objects.create(
        handout=handout,
        user=student,
        taken_at=now,
        trigger=trigger,
        late=late,
        path=str(relative),
        sha256=collected.sha256,
        size_bytes=collected.size_bytes,
        files=collected.files,
        skipped=", ".join(collected.skipped)[:2000],
    )


def assignment_collect(*, handout: Handout, now: dt.datetime | None = None) -> int:
    """At the deadline: a snapshot of each student without a later extension (once; safe to run twice)."""
    now = now or timezone.now()
    if not Handout.objects.filter(pk=handout.pk, collected_at__isnull=True).update(collected_at=now):
        return 0
    # Students with an extension are collected at their own deadline (below, in the tick).
    extended = set(Extension.objects.filter(handout=handout).values_list("user_id", flat=True))
    taken = 0
    for student in students_of_course(handout.course):
        if student.pk not in extended:
            _snapshot(handout, student, trigger=SubmissionTrigger.DEADLINE, late=False, now=now)
            taken += 1
    return taken


def submission_hand_in(*, user: User, handout: Handout, now: dt.datetime | None = None) -> Submission:
    """A student hands in now: a snapshot, late if past their deadline (the extension's, if they have one)."""
    now = now or timezone.now()
    if handout.release_at > now:
        raise NotFound(_("No such assignment."))
    due = due_for(handout, user)
    return _snapshot(handout, user, trigger=SubmissionTrigger.HAND_IN, late=bool(due and now > due), now=now)


def extension_grant(*, user: User, handout: Handout, student: User, due_at: dt.datetime) -> Extension:
    """A later deadline for one student of the assignment (replacing an earlier extension)."""
    if not students_of_course(handout.course).filter(pk=student.pk).exists():
        raise NotFound(_("No such student in this course."))
    if handout.due_at and due_at <= handout.due_at:
        sentence = _("An extension must end after the assignment's deadline.")
        raise InvalidInput(sentence, fields={"due_at": sentence})
    if Extension.objects.filter(handout=handout, user=student, collected_at__isnull=False).exists():
        raise Conflict(_("This student's work was already collected at their extended deadline."))
    extension, _created = Extension.objects.update_or_create(
        handout=handout, user=student, defaults={"due_at": due_at, "granted_by": user}
    )
    return extension


def coursework_tick(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Release what is due for release; collect what is past its deadline and each extension past its own."""
    now = now or timezone.now()
    report = {"released": 0, "collected": 0}
    for handout in Handout.objects.filter(released_at__isnull=True, release_at__lte=now).select_related("course"):
        handout_release(handout=handout, now=now)
        report["released"] += 1
    for handout in Handout.objects.filter(
        kind=HandoutKind.ASSIGNMENT, collected_at__isnull=True, due_at__lte=now
    ).select_related("course"):
        report["collected"] += assignment_collect(handout=handout, now=now)
    for extension in Extension.objects.filter(collected_at__isnull=True, due_at__lte=now).select_related(
        "handout__course", "user"
    ):
        if Extension.objects.filter(pk=extension.pk, collected_at__isnull=True).update(collected_at=now):
            _snapshot(extension.handout, extension.user, trigger=SubmissionTrigger.DEADLINE, late=False, now=now)
            report["collected"] += 1
    return report
