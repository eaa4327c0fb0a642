"""The lab's image allow-list: which container images training jobs and notebook profiles may run.

One rule for both (jobs.services.validation and the notebook profiles ask `image_problem`): the references in the
JOBS_IMAGE_ALLOW setting, plus the enabled rules admins keep in the console (ImageRule).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.prepared import Prepared

# An image reference: [registry[:port]/]path[:tag][@digest], no spaces or shell characters.
IMAGE_REFERENCE = re.compile(
    r"^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$"
)
IMAGE_MAX_LENGTH = 255


def image_allowed_by(pattern: str, image: str) -> bool:
    """`*` matches anything (e.g. "registry.lab.example/*", "pytorch/pytorch:2.*"); otherwise the exact reference."""
    pattern = pattern.strip()
    if not pattern:
        return False
    if "*" in pattern:
        return fnmatch.fnmatchcase(image, pattern.replace("[", "[[]").replace("?", "[?]"))
    return image == pattern


class ImageRule(models.Model):
    """One entry of the image allow-list that admins keep: a job's or a profile's image must match an enabled rule."""

    pattern = models.CharField(
        max_length=255,
        unique=True,
        help_text=gettext_lazy(
            "An image reference, or a pattern with * (e.g. registry.lab.example/* or pytorch/pytorch:2.*)."
        ),
    )
    description = models.CharField(
        max_length=200,
        blank=True,
        help_text=gettext_lazy("What a person finds in it, shown where they choose an image."),
    )
    gpu = models.BooleanField(
        default=False,
        verbose_name=gettext_lazy("GPU"),
        help_text=gettext_lazy("It brings CUDA (or ROCm): work in it can use the GPUs."),
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = gettext_lazy("image rule")
        verbose_name_plural = gettext_lazy("image rules")
        app_label = "labs"
        # Moved here from the jobs app (labs must not import jobs); the table kept its name, so no data moved.
        db_table = "jobs_imagerule"
        ordering = ["pattern"]

    def __str__(self) -> str:
        return self.pattern

    def clean(self) -> None:
        if any(ch.isspace() for ch in self.pattern) or not self.pattern.strip("*"):
            raise ValidationError({"pattern": _("A pattern has no spaces and is more than a lone *.")})

    def matches(self, image: str) -> bool:
        return self.enabled and image_allowed_by(self.pattern, image)


@dataclasses.dataclass(frozen=True)
class OfferedImage:
    """An entry of the allow-list as a person chooses from it: an image (or, `pattern`, a family of them)."""

    name: str
    description: str = ""
    gpu: bool = False  # an admin said it brings CUDA; False where nobody said (a JOBS_IMAGE_ALLOW entry)
    pattern: bool = False


def images_offered() -> list[OfferedImage]:
    """Every enabled entry of the allow-list, images first, then patterns (with *), each by name.

    The same for everyone: one allow-list for every person (image_allowed). An entry that is both a rule and in
    JOBS_IMAGE_ALLOW is the rule's (its description and gpu)."""
    offered = {
        rule.pattern: OfferedImage(rule.pattern, rule.description, rule.gpu, "*" in rule.pattern)
        for rule in ImageRule.objects.filter(enabled=True)
    }
    for pattern in settings.JOBS_IMAGE_ALLOW:
        pattern = pattern.strip()
        if pattern and pattern not in offered:
            offered[pattern] = OfferedImage(pattern, pattern="*" in pattern)
    return sorted(offered.values(), key=lambda image: (image.pattern, image.name))


# Every job submission and dry run asks: compiled once (accounts.prepared).
_ENABLED_RULES = Prepared(lambda: ImageRule.objects.filter(enabled=True))


def image_allowed(image: str) -> bool:
    if any(image_allowed_by(pattern, image) for pattern in settings.JOBS_IMAGE_ALLOW):
        return True
    return any(rule.matches(image) for rule in _ENABLED_RULES.objects())


def image_problem(image: str) -> str | None:
    """Why `image` may not run in the lab, as a sentence for the person who chose it; None when it may."""
    if not image:
        return _("Required: the container image, e.g. pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime.")
    if len(image) > IMAGE_MAX_LENGTH or not IMAGE_REFERENCE.match(image):
        return _("Not an image reference (registry/name:tag, without spaces).")
    if not image_allowed(image):
        return _("%(image)s is not on the lab's image allow-list; ask an admin to add it.") % {"image": image}
    return None
