"""Notebooks: the profiles they run with and the sessions people start."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy


class NotebookProfile(models.Model):
    """What a notebook runs with: image, GPU share, CPU, memory, longest session. Admins and teachers write them.

    A profile is offered to the roles in `roles` and to the people of `courses` (students taking them, their
    teachers); admins see every active profile.
    """

    slug = models.SlugField(
        max_length=40, unique=True, help_text=gettext_lazy("Short name scripts use, e.g. pytorch-quarter.")
    )
    name = models.CharField(max_length=80)
    description = models.CharField(max_length=300, blank=True)
    image = models.CharField(
        max_length=300,
        help_text=gettext_lazy("Container image of the single-user server, from the lab's image allow-list."),
    )
    gpu_share = models.DecimalField(
        max_digits=4,
        decimal_places=3,
        default=Decimal("0.25"),
        validators=[MinValueValidator(Decimal("0.05")), MaxValueValidator(Decimal("1"))],
        help_text=gettext_lazy("Share of one RTX 4090 (1 = the whole GPU)."),
    )
    gpu_mem_mb = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(256)],
        help_text=gettext_lazy(
            "GPU memory cap where the cluster runs a sharing plugin (HAMi); blank: the share of the memory."
        ),
    )
    cpu = models.DecimalField(
        max_digits=5,
        decimal_places=2,
        default=Decimal("2"),
        validators=[MinValueValidator(Decimal("0.1")), MaxValueValidator(Decimal("64"))],
        help_text=gettext_lazy("CPU cores."),
    )
    memory_gb = models.DecimalField(
        max_digits=6,
        decimal_places=2,
        default=Decimal("8"),
        validators=[MinValueValidator(Decimal("0.25")), MaxValueValidator(Decimal("256"))],
        help_text=gettext_lazy("Memory in GB."),
    )
    max_session_h = models.DecimalField(
        max_digits=5,
        decimal_places=2,
        default=Decimal("4"),
        validators=[MinValueValidator(Decimal("0.25")), MaxValueValidator(Decimal("72"))],
        help_text=gettext_lazy("Longest session before it must be extended, in hours."),
    )
    roles = models.JSONField(
        default=list, blank=True, help_text=gettext_lazy('Roles offered this profile, e.g. ["student"].')
    )
    courses = models.ManyToManyField("accounts.Course", blank=True, related_name="notebook_profiles")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = gettext_lazy("notebook profile")
        verbose_name_plural = gettext_lazy("notebook profiles")
        ordering = ["gpu_share", "name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        from accounts.models import Role
        from labs.notebooks.ceilings import profile_problems

        problems = profile_problems(self)
        if not isinstance(self.roles, list) or not all(role in Role.values for role in self.roles):
            problems["roles"] = gettext("Roles are a list of %(roles)s.") % {"roles": ", ".join(Role.values)}
        if problems:
            raise ValidationError(problems)


class NotebookStatus(models.TextChoices):
    QUEUED = "queued", gettext_lazy("Queued")
    STARTING = "starting", gettext_lazy("Starting")
    READY = "ready", gettext_lazy("Ready")
    STOPPING = "stopping", gettext_lazy("Stopping")
    STOPPED = "stopped", gettext_lazy("Stopped")
    FAILED = "failed", gettext_lazy("Failed")


# Count against the concurrent-notebook quota.
NOTEBOOK_ACTIVE = (NotebookStatus.QUEUED, NotebookStatus.STARTING, NotebookStatus.READY)
# Still to be looked after by the tick.
NOTEBOOK_LIVE = (*NOTEBOOK_ACTIVE, NotebookStatus.STOPPING)
NOTEBOOK_DONE = (NotebookStatus.STOPPED, NotebookStatus.FAILED)


class NotebookSession(models.Model):
    """One press of Start: queued, placed on a GPU and started in the hub as the named server `nb<id>`, then stopped.

    Its GPU time is in the ledger (Allocation kind notebook, ref "notebook:<id>") from the spawn to the stop.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="notebook_sessions")
    profile = models.ForeignKey(NotebookProfile, on_delete=models.PROTECT, related_name="sessions")
    course = models.ForeignKey(
        "accounts.Course", on_delete=models.SET_NULL, null=True, blank=True, related_name="notebook_sessions"
    )
    status = models.CharField(
        max_length=16, choices=NotebookStatus.choices, default=NotebookStatus.QUEUED, db_index=True
    )
    # Why it waits (queued), what it is doing (starting), or why it ended, as a sentence for its owner.
    reason = models.CharField(max_length=300, blank=True)
    hub_user = models.CharField(max_length=150)
    node = models.CharField(max_length=63, blank=True)
    gpu_index = models.PositiveSmallIntegerField(null=True, blank=True)
    url = models.CharField(
        max_length=500, blank=True, help_text=gettext_lazy("Where it opens, through the hub's proxy.")
    )
    start_attempts = models.PositiveSmallIntegerField(default=0)
    requested_at = models.DateTimeField(default=timezone.now)
    starting_at = models.DateTimeField(null=True, blank=True)
    ready_at = models.DateTimeField(null=True, blank=True)
    ends_at = models.DateTimeField(null=True, blank=True, help_text=gettext_lazy("When the session length runs out."))
    must_end_by = models.DateTimeField(
        null=True, blank=True, help_text=gettext_lazy("A reservation takes its node then.")
    )
    stop_requested_at = models.DateTimeField(null=True, blank=True)
    stopped_at = models.DateTimeField(null=True, blank=True)
    stopped_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # Idle detection: the last activity the hub reported, the last time its GPU was busy, the last "keep it".
    last_activity_at = models.DateTimeField(null=True, blank=True)
    gpu_busy_at = models.DateTimeField(null=True, blank=True)
    kept_at = models.DateTimeField(null=True, blank=True)
    idle_warned_at = models.DateTimeField(null=True, blank=True)
    end_warned_at = models.DateTimeField(null=True, blank=True)
    quota_over_at = models.DateTimeField(null=True, blank=True)
    extensions = models.PositiveSmallIntegerField(default=0)
    # A placeholder server held for a course reservation's students (its owner's hub account holds it): handed over,
    # GPU and node, to the first of the course's students who presses Start (labs/notebooks/prewarm.py).
    placeholder_for = models.ForeignKey(
        "labs.Reservation", on_delete=models.CASCADE, null=True, blank=True, related_name="placeholder_sessions"
    )

    class Meta:
        verbose_name = gettext_lazy("notebook session")
        verbose_name_plural = gettext_lazy("notebook sessions")
        ordering = ["-requested_at", "-id"]
        indexes = [
            models.Index(fields=["status", "requested_at", "id"], name="notebook_queue_order"),
            models.Index(fields=["user", "status"], name="notebook_user_status"),
        ]

    def __str__(self) -> str:
        return f"notebook {self.pk} of {self.user_id} ({self.status})"

    @property
    def server_name(self) -> str:
        return f"nb{self.pk}"

    @property
    def ref(self) -> str:
        return f"notebook:{self.pk}"

    @property
    def is_active(self) -> bool:
        return self.status in NOTEBOOK_ACTIVE
