"""Writes about notebook profiles: save (new or edited), deactivate and reactivate. Teachers and admins.

Admins may offer a profile to whole roles and to any course. Teachers manage the profiles they wrote and offer them
to the courses they teach only: a course or role that someone else (an admin) attached stays as it was. Whoever
writes it, a profile keeps to the image allow-list and the lab's ceilings (NotebookProfile.clean, see ceilings.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from accounts.errors import InvalidInput, NotFound
from accounts.models import Course, User
from accounts.permissions import PROFILES_STAFF_ONLY, require_staff
from labs.models import NotebookProfile
from labs.notebooks.selectors import profiles_editable_by

PROFILE_FIELDS = (
    "slug",
    "name",
    "description",
    "image",
    "gpu_share",
    "gpu_mem_mb",
    "cpu",
    "memory_gb",
    "max_session_h",
)


def _may_manage(user: User) -> None:
    require_staff(user, PROFILES_STAFF_ONLY)


def _editable(user: User, profile_id: int) -> NotebookProfile:
    # Locked: two people saving the same profile at once leave one whole version, never a mix.
    profile = profiles_editable_by(user).select_for_update().filter(pk=profile_id).first()
    if profile is None:
        raise NotFound(_("No such profile."))
    return profile


def _invalid(exc: ValidationError) -> InvalidInput:
    fields = {name: " ".join(str(m) for m in messages) for name, messages in exc.message_dict.items()}
    first = next(iter(fields.values()), _("Check the profile's fields."))
    return InvalidInput(first, fields=fields)


def profile_save(
    *,
    user: User,
    profile: NotebookProfile | None = None,
    slug: str,
    name: str,
    description: str = "",
    image: str,
    gpu_share: Decimal,
    gpu_mem_mb: int | None = None,
    cpu: Decimal,
    memory_gb: Decimal,
    max_session_h: Decimal,
    roles: Iterable[str] = (),
    courses: Iterable[Course] = (),
) -> NotebookProfile:
    """Create a profile (`profile` None; its author is `user`) or change one `user` may edit."""
    _may_manage(user)
    roles = sorted(set(roles or ()))
    courses = list(courses or ())
    image = (image or "").strip()
    with transaction.atomic():
        row = _editable(user, profile.pk) if profile is not None else NotebookProfile(created_by=user)
        kept_courses: list[Course] = []
        if user.is_lab_admin:
            chosen_courses = courses
        else:
            # Teachers: their own courses only, and no whole role; what an admin set stays as it was.
            if roles != sorted(set(row.roles or ())):
                raise InvalidInput(
                    _("Only admins offer a profile to a whole role; attach it to the courses you teach."),
                    fields={"roles": _("Only admins may change this.")},
                )
            taught = set(Course.objects.filter(teachers=user).values_list("pk", flat=True))
            foreign = sorted(course.code for course in courses if course.pk not in taught)
            if foreign:
                raise InvalidInput(
                    _("You can offer a profile only to courses you teach, not %(codes)s.")
                    % {"codes": ", ".join(foreign)},
                    fields={"courses": _("Only courses you teach.")},
                )
            if row.pk is not None:
                kept_courses = list(row.courses.exclude(pk__in=taught))
            chosen_courses = courses
        if row.pk is None:
            row.slug = slug
        row.name = name
        row.description = description or ""
        row.image = image
        row.gpu_share = gpu_share
        row.gpu_mem_mb = gpu_mem_mb
        row.cpu = cpu
        row.memory_gb = memory_gb
        row.max_session_h = max_session_h
        row.roles = roles
        try:
            row.full_clean()
        except ValidationError as exc:
            raise _invalid(exc) from exc
        row.save()
        row.courses.set([*kept_courses, *chosen_courses])
    return row


def profile_set_active(*, user: User, profile: NotebookProfile, active: bool) -> NotebookProfile:
    """Deactivate (no new sessions; running ones go on and the history keeps it) or reactivate a profile."""
    _may_manage(user)
    with transaction.atomic():
        row = _editable(user, profile.pk)
        if row.is_active != active:
            row.is_active = active
            row.save(update_fields=["is_active", "updated_at"])
    return row
