"""Course work: what a teacher hands out (material and assignments) and what is collected back (submissions).

A handout's files live in the portal's store (COURSEWORK_DIR/handouts/<id>/), taken from a git repository or an
uploaded course folder when it is published; on release they are copied into each student's notebook home (never
over a file the student changed). An assignment also has a deadline: its submissions are immutable snapshots of the
student's folder (a .tar.gz with its sha256), taken at the deadline or when the student hands in.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy


class HandoutKind(models.TextChoices):
    MATERIAL = "material", gettext_lazy("Material")
    ASSIGNMENT = "assignment", gettext_lazy("Assignment")


class HandoutSource(models.TextChoices):
    GIT = "git", gettext_lazy("A git repository")
    FOLDER = "folder", gettext_lazy("An uploaded course folder")


class Handout(models.Model):
    course = models.ForeignKey("accounts.Course", on_delete=models.CASCADE, related_name="handouts")
    kind = models.CharField(max_length=12, choices=HandoutKind.choices)
    title = models.CharField(max_length=120)
    # The folder's name inside the course's folder of each home: <home>/<course code>/<slug>/.
    slug = models.SlugField(max_length=60)
    source = models.CharField(max_length=8, choices=HandoutSource.choices)
    git_url = models.CharField(max_length=500, blank=True)
    git_ref = models.CharField(max_length=100, blank=True)
    release_at = models.DateTimeField()
    due_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)
    collected_at = models.DateTimeField(null=True, blank=True)
    files = models.PositiveIntegerField(default=0)
    size_bytes = models.BigIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["release_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["course", "slug"], name="handout_slug_once_per_course"),
            models.CheckConstraint(
                condition=Q(kind="material") | (Q(due_at__isnull=False) & Q(due_at__gt=models.F("release_at"))),
                name="handout_assignment_due_after_release",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.course.code}: {self.title}"

    def clean(self) -> None:
        if self.kind == HandoutKind.ASSIGNMENT:
            if self.due_at is None:
                raise ValidationError({"due_at": gettext_lazy("An assignment needs a deadline.")})
            if self.release_at and self.due_at <= self.release_at:
                raise ValidationError({"due_at": gettext_lazy("The deadline must come after the release.")})

    @property
    def is_assignment(self) -> bool:
        return self.kind == HandoutKind.ASSIGNMENT


class Extension(models.Model):
    """A later deadline for one student of one assignment."""

    handout = models.ForeignKey(Handout, on_delete=models.CASCADE, related_name="extensions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    due_at = models.DateTimeField()
    granted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    collected_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["handout", "user"], name="extension_once_per_student")]

    def __str__(self) -> str:
        return f"{self.user} until {self.due_at:%Y-%m-%d %H:%M}"


class SubmissionTrigger(models.TextChoices):
    DEADLINE = "deadline", gettext_lazy("Collected at the deadline")
    HAND_IN = "hand_in", gettext_lazy("Handed in")


class Submission(models.Model):
    """One immutable snapshot of a student's assignment folder: written once, never changed (the file is 0444)."""

    handout = models.ForeignKey(Handout, on_delete=models.CASCADE, related_name="submissions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions")
    taken_at = models.DateTimeField()
    trigger = models.CharField(max_length=10, choices=SubmissionTrigger.choices)
    late = models.BooleanField(default=False)
    # Relative to COURSEWORK_DIR.
    path = models.CharField(max_length=300)
    sha256 = models.CharField(max_length=64)
    size_bytes = models.BigIntegerField(default=0)
    files = models.PositiveIntegerField(default=0)
    # What was left out (symlinks, files over the size cap), as a sentence for the teacher.
    skipped = models.TextField(blank=True)

    class Meta:
        ordering = ["handout", "user", "-taken_at", "-id"]

    def __str__(self) -> str:
        return f"{self.user} → {self.handout} at {self.taken_at:%Y-%m-%d %H:%M}"
