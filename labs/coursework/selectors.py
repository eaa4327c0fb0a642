"""Reads of course work, and who may see what.

- A course's material and assignments: its students and assistants see those released; its teachers and admins
  all of them (404 for anyone else, as for a course that does not exist).
- Publishing: the course's teachers and admins (403 to students and assistants, before any course is looked up).
- Submissions: the course's teachers, assistants and admins (403 to other students); a student reads their own
  snapshot's archive.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from accounts.errors import NotFound, NotPermitted
from accounts.models import Course, CourseRole, Enrollment, User
from accounts.permissions import looks_after_courses, require_staff
from accounts.selectors import courses_staffed_by
from labs.models import Extension, Handout, HandoutKind, Submission

PUBLISH_STAFF_ONLY = gettext_noop("Course material and assignments are published by the course's teachers and admins.")
SUBMISSIONS_STAFF_ONLY = gettext_noop(
    "Submissions are for the course's teachers, teaching assistants and admins; your own hand-ins are on the"
    " course's page."
)


def store_dir() -> Path:
    return Path(settings.COURSEWORK_DIR)


def handout_store(handout: Handout) -> Path:
    return store_dir() / "handouts" / str(handout.pk)


def course_readable_by(user: User, code: str) -> Course:
    """The course whose handouts `user` asks for: theirs as student, assistant, teacher, or any for admins."""
    course = Course.objects.filter(code=code).first()
    if course is None or not (
        user.is_lab_admin
        or course.teachers.filter(pk=user.pk).exists()
        or Enrollment.objects.filter(course=course, user_id=user.pk).exists()
    ):
        raise NotFound(_("No such course."))
    return course


def course_writable_by(user: User, code: str) -> Course:
    require_staff(user, PUBLISH_STAFF_ONLY)
    course = Course.objects.filter(code=code).first()
    if course is None or not (user.is_lab_admin or course.teachers.filter(pk=user.pk).exists()):
        raise NotFound(_("No such course."))
    return course


def sees_all_handouts(user: User, course: Course) -> bool:
    return courses_staffed_by(user).filter(pk=course.pk).exists()


def handouts_of(user: User, course: Course, kind: str, *, now: dt.datetime | None = None) -> QuerySet[Handout]:
    rows = Handout.objects.filter(course=course, kind=kind).select_related("course")
    if not sees_all_handouts(user, course):
        rows = rows.filter(release_at__lte=now or timezone.now())
    return rows


def assignment_for_staff(user: User, assignment_id: int) -> Handout:
    """An assignment whose submissions `user` may read: 403 for students who assist nothing, 404 if not theirs."""
    if not looks_after_courses(user):
        raise NotPermitted(_(SUBMISSIONS_STAFF_ONLY))
    handout = (
        Handout.objects.filter(pk=assignment_id, kind=HandoutKind.ASSIGNMENT, course__in=courses_staffed_by(user))
        .select_related("course")
        .first()
    )
    if handout is None:
        raise NotFound(_("No such assignment."))
    return handout


def assignment_for_student(user: User, assignment_id: int, *, now: dt.datetime | None = None) -> Handout:
    """A released assignment of a course `user` takes (as a student), else 404."""
    handout = (
        Handout.objects.filter(
            pk=assignment_id,
            kind=HandoutKind.ASSIGNMENT,
            release_at__lte=now or timezone.now(),
            course__enrollments__user_id=user.pk,
            course__enrollments__role=CourseRole.STUDENT,
        )
        .select_related("course")
        .first()
    )
    if handout is None:
        raise NotFound(_("No such assignment."))
    return handout


def students_of_course(course: Course) -> QuerySet[User]:
    return User.objects.filter(
        enrollments__course=course, enrollments__role=CourseRole.STUDENT, is_active=True
    ).order_by("username")


def due_for(handout: Handout, user: User) -> dt.datetime | None:
    extension = Extension.objects.filter(handout=handout, user=user).first()
    return extension.due_at if extension else handout.due_at


def latest_submissions(handout: Handout) -> dict[int, Submission]:
    latest: dict[int, Submission] = {}
    for row in Submission.objects.filter(handout=handout).order_by("user_id", "-taken_at", "-id"):
        latest.setdefault(row.user_id, row)
    return latest


def submission_rows(handout: Handout) -> list[dict]:
    """One row per enrolled student: their latest snapshot (or none), its time, lateness and deadline."""
    latest = latest_submissions(handout)
    counts: dict[int, int] = {}
    for user_id in Submission.objects.filter(handout=handout).values_list("user_id", flat=True):
        counts[user_id] = counts.get(user_id, 0) + 1
    extensions = {e.user_id: e.due_at for e in Extension.objects.filter(handout=handout)}
    rows = []
    for student in students_of_course(handout.course):
        rows.append(
            {
                "user": student,
                "submission": latest.get(student.pk),
                "count": counts.get(student.pk, 0),
                "due_at": extensions.get(student.pk, handout.due_at),
                "extended": student.pk in extensions,
            }
        )
    return rows


def submission_for(user: User, assignment_id: int, username: str) -> Submission:
    """The latest snapshot of `username` for the assignment, for its staff or the student themselves; else 404."""
    if user.username.lower() == (username or "").lower():
        handout = Handout.objects.filter(pk=assignment_id, kind=HandoutKind.ASSIGNMENT).first()
        owner = user
    else:
        handout = (
            Handout.objects.filter(pk=assignment_id, kind=HandoutKind.ASSIGNMENT, course__in=courses_staffed_by(user))
            .select_related("course")
            .first()
            if looks_after_courses(user)
            else None
        )
        owner = User.objects.filter(username__iexact=username).first() if handout else None
    row = (
        Submission.objects.filter(handout=handout, user=owner).order_by("-taken_at", "-id").first()
        if handout and owner
        else None
    )
    if row is None:
        raise NotFound(_("No such submission."))
    return row


def released_handouts_for(user: User, *, now: dt.datetime | None = None) -> QuerySet[Handout]:
    """Released handouts of the courses `user` takes as a student in their term (what goes into their home)."""
    today = timezone.localdate(now)
    return Handout.objects.filter(
        Q(released_at__isnull=False),
        course__enrollments__user_id=user.pk,
        course__enrollments__role=CourseRole.STUDENT,
        course__term_start__lte=today,
        course__term_end__gte=today,
    ).select_related("course")
