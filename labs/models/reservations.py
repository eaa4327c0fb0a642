"""Reservations: whole nodes for a window, for a teacher and their course."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils.translation import gettext_lazy

from labs.models.nodes import Node


class ReservationStatus(models.TextChoices):
    PENDING = "pending", gettext_lazy("Waiting for approval")
    APPROVED = "approved", gettext_lazy("Approved")
    ACTIVE = "active", gettext_lazy("Active")
    ENDED = "ended", gettext_lazy("Ended")
    CANCELLED = "cancelled", gettext_lazy("Cancelled")


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
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="+",
        help_text=gettext_lazy("Differs when an admin booked."),
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
    warned_at = models.DateTimeField(
        null=True, blank=True, help_text=gettext_lazy("When people on the nodes were told.")
    )
    # Warm the lab before class (labs/notebooks/prewarm.py): the course's notebook profile, whose image is pre-pulled
    # on the reserved nodes NOTEBOOKS_PREWARM_MIN ahead, and how many placeholder servers are started for its students.
    notebook_profile = models.ForeignKey(
        "labs.NotebookProfile", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    placeholders = models.PositiveSmallIntegerField(default=0)
    prepulled_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = gettext_lazy("reservation")
        verbose_name_plural = gettext_lazy("reservations")
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
