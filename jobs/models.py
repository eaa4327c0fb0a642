"""Training jobs: the job and its state machine, its events, and the datasets jobs and notebooks mount.

A job moves queued -> starting -> running -> succeeded | failed | cancelled; a preempted attempt goes back to
queued with `attempt` + 1. Every move is a conditional UPDATE in services.py that also writes a JobEvent.
The GPUs an attempt holds are in the ledger (labs.Allocation, ref "job:<id>#<attempt>"), not here.
"""

from __future__ import annotations

import shlex

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy

from labs.ledger import Ref


class JobState(models.TextChoices):
    QUEUED = "queued", gettext_lazy("Queued")
    STARTING = "starting", gettext_lazy("Starting")
    RUNNING = "running", gettext_lazy("Running")
    SUCCEEDED = "succeeded", gettext_lazy("Succeeded")
    FAILED = "failed", gettext_lazy("Failed")
    CANCELLED = "cancelled", gettext_lazy("Cancelled")


# Queued or holding GPUs: what counts against max_jobs at submission.
ACTIVE_STATES = (JobState.QUEUED, JobState.STARTING, JobState.RUNNING)
# Holding GPUs (an attempt was placed): what the follower watches.
PLACED_STATES = (JobState.STARTING, JobState.RUNNING)
FINISHED_STATES = (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


class PriorityClass(models.TextChoices):
    LOW = "low", gettext_lazy("Low (runs when the lab is idle; preempted first)")
    NORMAL = "normal", gettext_lazy("Normal")
    HIGH = "high", gettext_lazy("High (teachers and admins)")


class StopReason(models.TextChoices):
    NONE = "", "—"
    CANCELLED = "cancelled", gettext_lazy("Cancelled")
    PREEMPTED = "preempted", gettext_lazy("Preempted")


dataset_name_validator = RegexValidator(
    r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", "Lower-case letters, digits and dashes (at most 63)."
)


class DatasetKind(models.TextChoices):
    DATASET = "dataset", gettext_lazy("Dataset (read-only for everyone who may use it)")
    SHARE = "share", gettext_lazy("Course share (the course's teachers write, its students read)")


class Dataset(models.Model):
    """Data mounted into the jobs and notebooks of those who may use it: a PersistentVolumeClaim on the cluster, a
    directory locally. Lab-wide (no course: everyone) or a course's (its members in term); an admin defines the
    first, a teacher of the course the second (jobs.datasets). Read-only, except a course share for its teachers."""

    name = models.CharField(max_length=63, unique=True, validators=[dataset_name_validator])
    claim = models.CharField(
        max_length=253, blank=True, help_text=gettext_lazy("The PersistentVolumeClaim (Kubernetes).")
    )
    local_path = models.CharField(max_length=500, blank=True, help_text=gettext_lazy("The directory (local backend)."))
    description = models.CharField(max_length=200, blank=True)
    enabled = models.BooleanField(default=True)
    course = models.ForeignKey(
        "accounts.Course", on_delete=models.CASCADE, null=True, blank=True, related_name="datasets"
    )
    kind = models.CharField(max_length=16, choices=DatasetKind.choices, default=DatasetKind.DATASET)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # What it held when last measured (the usage pages), and when.
    size_bytes = models.BigIntegerField(null=True, blank=True)
    measured_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = gettext_lazy("dataset")
        verbose_name_plural = gettext_lazy("datasets")
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(kind="share") | Q(course__isnull=False), name="dataset_share_has_course"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Job(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="jobs")
    course = models.ForeignKey("accounts.Course", on_delete=models.SET_NULL, null=True, blank=True, related_name="jobs")
    name = models.CharField(max_length=120)
    image = models.CharField(max_length=255)
    # argv, never a shell string: ["python", "train.py", "--epochs", "3"]; [] for a job given as a script.
    command = models.JSONField()
    # Or a script, run as a file by the image's /bin/sh (jobs.backends.base.SCRIPT_ARGV); exactly one of the two.
    script = models.TextField(blank=True, default="")
    env = models.JSONField(default=dict, blank=True)
    gpus_per_node = models.PositiveSmallIntegerField(validators=[MinValueValidator(1), MaxValueValidator(64)])
    # A part of one GPU (0 < share < 1: one GPU on one node) where the cluster shares GPUs (JOBS_GPU_SHARING); the
    # queue still places the whole GPU. 1: whole GPUs.
    gpu_share = models.FloatField(default=1.0, validators=[MinValueValidator(0.01), MaxValueValidator(1.0)])
    # Storage tiers, Kubernetes quantities ("50Gi"; "" for none), each bounded per role by JOBS_STORAGE_LIMITS.
    scratch = models.CharField(max_length=32, blank=True, default="")
    bulk = models.CharField(max_length=32, blank=True, default="")
    nodes = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1), MaxValueValidator(1000)])
    max_runtime_s = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    priority = models.CharField(max_length=16, choices=PriorityClass.choices, default=PriorityClass.NORMAL)
    preemptible = models.BooleanField(default=True)
    reservation = models.ForeignKey(
        "labs.Reservation", on_delete=models.SET_NULL, null=True, blank=True, related_name="jobs"
    )
    # Names of Dataset rows, mounted read-only.
    datasets = models.JSONField(default=list, blank=True)
    # "Run again from this checkpoint": the job whose checkpoint this one started from (a copy, or a clone).
    resumed_from = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="resumed_by"
    )
    # Why this job may hold its GPUs idle (data preparation on the CPU, a debugger): exempt from the idle-GPU rule
    # (jobs.idle) when given.
    idle_ok_reason = models.CharField(max_length=300, blank=True, default="")
    # The idle-GPU rule's marks for the current attempt: when its GPUs were last seen busy, when it was warned.
    gpu_busy_at = models.DateTimeField(null=True, blank=True)
    idle_warned_at = models.DateTimeField(null=True, blank=True)
    # When the owner was told that its outputs and checkpoints are about to be removed (JOBS_LOCAL_KEEP_DAYS).
    outputs_notice_at = models.DateTimeField(null=True, blank=True)

    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.QUEUED)
    attempt = models.PositiveIntegerField(default=1)
    # The current attempt's placement, one entry per node in rank order.
    node_names = models.JSONField(default=list, blank=True)
    gpu_indices = models.JSONField(default=list, blank=True)
    # The current attempt started as a backfill, ahead of a higher-priority job that could not start then: only
    # such an attempt may be preempted for that job (the policy's "backfill" rule, after the exempt time).
    started_as_backfill = models.BooleanField(default=False)
    # While queued: why it waits and where it stands (from the last scheduling pass).
    reason = models.CharField(max_length=300, blank=True)
    position = models.PositiveIntegerField(null=True, blank=True)
    estimated_start = models.DateTimeField(null=True, blank=True)
    # The attempt whose owner was told it waits longer than estimated (jobs/notices.py): once per attempt.
    stuck_told_attempt = models.PositiveIntegerField(default=0)
    # A stop was asked for (cancel or preemption); the attempt ends when the backend says it is gone.
    stop_reason = models.CharField(max_length=16, choices=StopReason.choices, blank=True, default="")
    stop_note = models.CharField(max_length=300, blank=True)
    stop_requested_at = models.DateTimeField(null=True, blank=True)
    stopping_until = models.DateTimeField(null=True, blank=True)

    submitted_at = models.DateTimeField(default=timezone.now)
    queued_since = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(
        null=True, blank=True, help_text=gettext_lazy("When the current attempt got its GPUs.")
    )
    running_at = models.DateTimeField(
        null=True, blank=True, help_text=gettext_lazy("When the current attempt began running.")
    )
    finished_at = models.DateTimeField(null=True, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    message = models.CharField(max_length=500, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = gettext_lazy("job")
        verbose_name_plural = gettext_lazy("jobs")
        ordering = ["-submitted_at", "-id"]
        indexes = [
            models.Index(fields=["state", "queued_since"], name="job_state_queued"),
            models.Index(fields=["owner", "state"], name="job_owner_state"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(state__in=JobState.values), name="job_state_valid"),
            models.CheckConstraint(condition=Q(priority__in=PriorityClass.values), name="job_priority_valid"),
            models.CheckConstraint(
                condition=Q(gpus_per_node__gte=1) & Q(nodes__gte=1) & Q(max_runtime_s__gte=1) & Q(attempt__gte=1),
                name="job_sizes_positive",
            ),
            # Finished exactly when in a final state.
            models.CheckConstraint(
                condition=Q(state__in=[s.value for s in FINISHED_STATES], finished_at__isnull=False)
                | (~Q(state__in=[s.value for s in FINISHED_STATES]) & Q(finished_at__isnull=True)),
                name="job_finished_at_iff_final",
            ),
            # A placed attempt knows when it got its GPUs.
            models.CheckConstraint(
                condition=~Q(state__in=[s.value for s in PLACED_STATES]) | Q(started_at__isnull=False),
                name="job_placed_has_start",
            ),
            models.CheckConstraint(condition=Q(queued_since__gte=F("submitted_at")), name="job_queued_after_submit"),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} “{self.name}”"

    @property
    def total_gpus(self) -> int:
        """GPUs over all its nodes (the API's `gpus` is per node: gpus_per_node)."""
        return self.gpus_per_node * self.nodes

    @property
    def command_line(self) -> str:
        """The argv as one line a shell (and the job form) splits back into the same arguments."""
        return shlex.join(self.command or [])

    @property
    def is_queued(self) -> bool:
        return self.state == JobState.QUEUED

    @property
    def is_active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def is_finished(self) -> bool:
        return self.state in FINISHED_STATES

    @property
    def ref(self) -> str:
        """The ledger's name of the current attempt."""
        return Ref.job(self.pk, self.attempt).key

    @property
    def stopping(self) -> bool:
        return self.stop_requested_at is not None

    @property
    def status_label(self) -> str:
        if self.stopping and self.state in PLACED_STATES:
            return "stopping"
        return self.state


class JobEvent(models.Model):
    """One transition of a job, with its reason: what the detail page and the API's `events` show."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(default=timezone.now)
    from_state = models.CharField(max_length=16, blank=True)
    to_state = models.CharField(max_length=16, choices=JobState.choices)
    attempt = models.PositiveIntegerField()
    reason = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["job", "at"], name="jobevent_job_at")]

    def __str__(self) -> str:
        return f"{self.job_id}: {self.from_state or '—'} → {self.to_state}"


class JobTemplate(models.Model):
    """A course's ready-made job: what it runs, in which image, how big; its students fill in the declared parameters.

    A parameter's value reaches the job only as an environment variable of its name (and, in a command, as the text
    of `{NAME}` inside one argument): never through a shell. `parameters` holds the declarations, each
    {name, label, type: int|float|choice|text, min?, max?, choices?, default?}, checked by services/templates.py.
    """

    course = models.ForeignKey("accounts.Course", on_delete=models.CASCADE, related_name="job_templates")
    name = models.CharField(max_length=120)
    description = models.TextField(blank=True, max_length=2000)
    image = models.CharField(max_length=255)
    # argv, or [] with a script: as Job.command and Job.script.
    command = models.JSONField(default=list, blank=True)
    script = models.TextField(blank=True, default="")
    gpus_per_node = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    nodes = models.PositiveSmallIntegerField(default=1, validators=[MinValueValidator(1)])
    max_runtime_s = models.PositiveIntegerField(default=3600, validators=[MinValueValidator(1)])
    parameters = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["course", "name"]
        constraints = [models.UniqueConstraint(fields=["course", "name"], name="jobtemplate_course_name_unique")]

    def __str__(self) -> str:
        return f"{self.course_id}: {self.name}"

    @property
    def command_line(self) -> str:
        return shlex.join(self.command or [])
