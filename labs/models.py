"""The lab: nodes, their GPUs, and the ledger of who holds which GPU when."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from labs.images import ImageRule  # noqa: F401  (the allow-list's model lives with its rule; imported to register it)

# Kubernetes node names are DNS-1123 subdomains; we keep to the label subset (no dots) for readability.
node_name_validator = RegexValidator(
    r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
    "A node name is lower-case letters, digits and dashes (at most 63), as Kubernetes requires.",
)


class NodeStatus(models.TextChoices):
    READY = "ready", "Ready"
    CORDONED = "cordoned", "Cordoned"
    DOWN = "down", "Down"


class Node(models.Model):
    name = models.CharField(max_length=63, unique=True, validators=[node_name_validator])
    labels = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=NodeStatus.choices, default=NodeStatus.READY, db_index=True)
    status_reason = models.CharField(max_length=200, blank=True)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    source = models.CharField(max_length=16, default="local", help_text="Where the inventory learnt of this node.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if not isinstance(self.labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.labels.items()
        ):
            raise ValidationError({"labels": "Labels are a mapping of text keys to text values."})


class Gpu(models.Model):
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="gpus")
    index = models.PositiveSmallIntegerField()
    uuid = models.CharField(max_length=64, unique=True, null=True, blank=True)
    model = models.CharField(max_length=100)
    memory_mb = models.PositiveIntegerField(validators=[MinValueValidator(1)])

    class Meta:
        ordering = ["node__name", "index"]
        constraints = [models.UniqueConstraint(fields=["node", "index"], name="gpu_index_unique_per_node")]

    def __str__(self) -> str:
        return f"{self.node.name}/{self.index}"


class AllocationKind(models.TextChoices):
    NOTEBOOK = "notebook", "Notebook session"
    JOB = "job", "Training job attempt"
    RESERVATION = "reservation", "Node reservation"


class Allocation(models.Model):
    """One entry of the ledger: `user` held `share` of `gpu` from `starts_at` until `ends_at`.

    Quotas, usage reports, the live "who is on this GPU" and idle detection all read this
    table and nothing else. An open entry (ends_at is null) is still being held.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="allocations")
    course = models.ForeignKey(
        "accounts.Course", on_delete=models.SET_NULL, null=True, blank=True, related_name="allocations"
    )
    kind = models.CharField(max_length=16, choices=AllocationKind.choices)
    # What holds it, e.g. "job:42#2" or "notebook:17": ties ledger rows to the thing that made them.
    ref = models.CharField(max_length=64, db_index=True)
    gpu = models.ForeignKey(Gpu, on_delete=models.PROTECT, related_name="allocations")
    share = models.DecimalField(
        max_digits=4,
        decimal_places=3,
        default=Decimal("1"),
        validators=[MinValueValidator(Decimal("0.001")), MaxValueValidator(Decimal("1"))],
    )
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField(null=True, blank=True)
    reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-starts_at"]
        indexes = [
            models.Index(fields=["user", "starts_at"], name="alloc_user_start"),
            models.Index(fields=["gpu", "ends_at"], name="alloc_gpu_end"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(ends_at__isnull=True) | Q(ends_at__gte=F("starts_at")), name="allocation_ends_after_start"
            ),
            models.CheckConstraint(condition=Q(share__gt=0) & Q(share__lte=1), name="allocation_share_in_0_1"),
        ]

    def __str__(self) -> str:
        return f"{self.ref} on {self.gpu} ({self.share})"


# --- Reservations


class ReservationStatus(models.TextChoices):
    PENDING = "pending", "Waiting for approval"
    APPROVED = "approved", "Approved"
    ACTIVE = "active", "Active"
    ENDED = "ended", "Ended"
    CANCELLED = "cancelled", "Cancelled"


# A reservation in these states keeps its nodes: a pending one holds them until an admin decides.
HOLDING_STATUSES = (ReservationStatus.PENDING, ReservationStatus.APPROVED, ReservationStatus.ACTIVE)
# ...and in these (decided, not over) work may run in it: the one rule for "open for work".
WORKING_STATUSES = (ReservationStatus.APPROVED, ReservationStatus.ACTIVE)


class Reservation(models.Model):
    """Whole nodes for a window, for a teacher (and their course).

    The nodes are rows of ReservationNode, each carrying the window: a PostgreSQL exclusion
    constraint on those rows is what makes a double booking impossible (migration 0002).
    """

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="reservations")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", help_text="Differs when an admin booked."
    )
    course = models.ForeignKey(
        "accounts.Course", on_delete=models.SET_NULL, null=True, blank=True, related_name="reservations"
    )
    title = models.CharField(max_length=120)
    starts_at = models.DateTimeField(db_index=True)
    ends_at = models.DateTimeField(db_index=True)
    status = models.CharField(max_length=16, choices=ReservationStatus.choices, db_index=True)
    status_reason = models.CharField(max_length=300, blank=True)
    nodes = models.ManyToManyField(Node, through="ReservationNode", related_name="reservations")
    # How the nodes were asked for: named, a count the portal picked, or the whole lab.
    requested = models.CharField(max_length=16, default="named")
    # Weekly lab slots of one term share a series id; each week is its own reservation.
    series = models.UUIDField(null=True, blank=True, db_index=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    warned_at = models.DateTimeField(null=True, blank=True, help_text="When people on the nodes were told.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["starts_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(ends_at__gt=F("starts_at")), name="reservation_ends_after_start"),
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.owner})"

    @property
    def holds_nodes(self) -> bool:
        return self.status in HOLDING_STATUSES

    def open_for_work(self, now) -> bool:
        """Approved (or under way) and not over at `now`: jobs and notebooks may be placed in it."""
        return self.status in WORKING_STATUSES and self.ends_at > now

    def status_at(self, now) -> str:
        """The status as of `now`, even if the tick that records it has not run yet."""
        if self.status in (ReservationStatus.APPROVED, ReservationStatus.ACTIVE):
            if self.ends_at <= now:
                return ReservationStatus.ENDED
            if self.starts_at <= now:
                return ReservationStatus.ACTIVE
        return self.status

    @property
    def ref(self) -> str:
        return f"reservation:{self.pk}"


class ReservationNode(models.Model):
    """One reserved node for the reservation's window: the row the exclusion constraint guards."""

    reservation = models.ForeignKey(Reservation, on_delete=models.CASCADE, related_name="node_rows")
    node = models.ForeignKey(Node, on_delete=models.PROTECT, related_name="reservation_rows")
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    holds = models.BooleanField(default=True)

    class Meta:
        ordering = ["node__name"]
        indexes = [models.Index(fields=["node", "starts_at", "ends_at"], name="resnode_window")]
        constraints = [
            models.UniqueConstraint(fields=["reservation", "node"], name="resnode_once_per_reservation"),
            models.CheckConstraint(condition=Q(ends_at__gt=F("starts_at")), name="resnode_ends_after_start"),
        ]

    def __str__(self) -> str:
        return f"{self.node} for {self.reservation_id}"


# --- Telemetry


class GpuMinute(models.Model):
    """One minute of one GPU's samples: what the node page charts and what outlives the live stream.

    Written by the telemetry collector at the end of each minute; kept TELEMETRY_HISTORY_DAYS.
    """

    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="minutes")
    minute = models.DateTimeField(help_text="The minute's start (UTC).")
    samples = models.PositiveIntegerField()
    util_avg = models.FloatField(null=True)
    util_max = models.FloatField(null=True)
    mem_used_avg_mb = models.FloatField(null=True)
    mem_used_max_mb = models.FloatField(null=True)
    temp_avg_c = models.FloatField(null=True)
    temp_max_c = models.FloatField(null=True)
    power_avg_w = models.FloatField(null=True)
    power_max_w = models.FloatField(null=True)

    class Meta:
        ordering = ["gpu", "minute"]
        constraints = [models.UniqueConstraint(fields=["gpu", "minute"], name="gpu_minute_once")]
        indexes = [models.Index(fields=["minute"], name="gpu_minute_at")]

    def __str__(self) -> str:
        return f"{self.gpu} at {self.minute:%Y-%m-%d %H:%M}"


class NodeAgentToken(models.Model):
    """The credential a node's agent pushes its NVML samples with. Only a hash is kept; the key is shown once."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="agent_tokens")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(
        max_length=16, editable=False, help_text="The key's first characters, to tell keys apart."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["node__name", "-created_at"]

    def __str__(self) -> str:
        return f"{self.node.name} agent key {self.prefix}…"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class GpuAlertKind(models.TextChoices):
    TEMPERATURE = "temperature", "Temperature"
    XID = "xid", "Xid error"


class GpuAlert(models.Model):
    """A GPU crossed a health threshold. Open until its readings are back to normal; admins may cordon the node."""

    gpu = models.ForeignKey(Gpu, on_delete=models.CASCADE, related_name="alerts")
    kind = models.CharField(max_length=16, choices=GpuAlertKind.choices)
    value = models.FloatField(help_text="The worst reading: degrees, or the Xid code.")
    threshold = models.FloatField()
    message = models.CharField(max_length=300)
    raised_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    cleared_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    acknowledged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-raised_at"]
        constraints = [
            # The collector updates the one open alert of a kind rather than raising a new one every second.
            models.UniqueConstraint(
                fields=["gpu", "kind"], condition=Q(cleared_at__isnull=True), name="gpu_alert_one_open_per_kind"
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} on {self.gpu}"

    @property
    def is_open(self) -> bool:
        return self.cleared_at is None


# --- Notebooks


class NotebookProfile(models.Model):
    """What a notebook runs with: image, GPU share, CPU, memory, longest session. Admins and teachers write them.

    A profile is offered to the roles in `roles` and to the people of `courses` (students taking them, their
    teachers); admins see every active profile.
    """

    slug = models.SlugField(max_length=40, unique=True, help_text="Short name scripts use, e.g. pytorch-quarter.")
    name = models.CharField(max_length=80)
    description = models.CharField(max_length=300, blank=True)
    image = models.CharField(
        max_length=300, help_text="Container image of the single-user server, from the lab's image allow-list."
    )
    gpu_share = models.DecimalField(
        max_digits=4,
        decimal_places=3,
        default=Decimal("0.25"),
        validators=[MinValueValidator(Decimal("0.05")), MaxValueValidator(Decimal("1"))],
        help_text="Share of one RTX 4090 (1 = the whole GPU).",
    )
    gpu_mem_mb = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(256)],
        help_text="GPU memory cap where the cluster runs a sharing plugin (HAMi); blank: the share of the memory.",
    )
    cpu = models.DecimalField(
        max_digits=5,
        decimal_places=2,
        default=Decimal("2"),
        validators=[MinValueValidator(Decimal("0.1")), MaxValueValidator(Decimal("64"))],
        help_text="CPU cores.",
    )
    memory_gb = models.DecimalField(
        max_digits=6,
        decimal_places=2,
        default=Decimal("8"),
        validators=[MinValueValidator(Decimal("0.25")), MaxValueValidator(Decimal("256"))],
        help_text="Memory in GB.",
    )
    max_session_h = models.DecimalField(
        max_digits=5,
        decimal_places=2,
        default=Decimal("4"),
        validators=[MinValueValidator(Decimal("0.25")), MaxValueValidator(Decimal("72"))],
        help_text="Longest session before it must be extended, in hours.",
    )
    roles = models.JSONField(default=list, blank=True, help_text='Roles offered this profile, e.g. ["student"].')
    courses = models.ManyToManyField("accounts.Course", blank=True, related_name="notebook_profiles")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["gpu_share", "name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        from labs.notebooks.ceilings import profile_problems
        from portal.accounts.models import Role

        problems = profile_problems(self)
        if not isinstance(self.roles, list) or not all(role in Role.values for role in self.roles):
            problems["roles"] = f"Roles are a list of {', '.join(Role.values)}."
        if problems:
            raise ValidationError(problems)


class NotebookStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    STARTING = "starting", "Starting"
    READY = "ready", "Ready"
    STOPPING = "stopping", "Stopping"
    STOPPED = "stopped", "Stopped"
    FAILED = "failed", "Failed"


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
    url = models.CharField(max_length=500, blank=True, help_text="Where it opens, through the hub's proxy.")
    start_attempts = models.PositiveSmallIntegerField(default=0)
    requested_at = models.DateTimeField(default=timezone.now)
    starting_at = models.DateTimeField(null=True, blank=True)
    ready_at = models.DateTimeField(null=True, blank=True)
    ends_at = models.DateTimeField(null=True, blank=True, help_text="When the session length runs out.")
    must_end_by = models.DateTimeField(null=True, blank=True, help_text="A reservation takes its node then.")
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

    class Meta:
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
