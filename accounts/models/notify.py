"""Notifications: what each person wants told how, the chat channels, and every message on its way
(accounts/notify/)."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy

from accounts.models.people import Course, User


class Channel(models.TextChoices):
    PORTAL = "portal", gettext_lazy("In the portal")
    EMAIL = "email", gettext_lazy("E-mail")
    CHAT = "chat", gettext_lazy("Chat or webhook")
    COURSE = "course", gettext_lazy("The course's channel")


class NotifyPreference(models.Model):
    """One person's choice for one event and channel (no row: the event's default)."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="notify_preferences")
    event = models.CharField(max_length=40)
    channel = models.CharField(max_length=16, choices=Channel.choices)
    enabled = models.BooleanField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "event", "channel"], name="notify_preference_once"),
        ]

    def __str__(self) -> str:
        return f"{self.user}: {self.event} by {self.channel} {'on' if self.enabled else 'off'}"


class ChatTarget(models.Model):
    """Where a person's chat notifications go (an apprise URL), or a course's channel (set by its teacher)."""

    user = models.OneToOneField(User, on_delete=models.CASCADE, null=True, blank=True, related_name="chat_target")
    course = models.OneToOneField(Course, on_delete=models.CASCADE, null=True, blank=True, related_name="chat_target")
    url = models.CharField(max_length=500)
    set_by = models.ForeignKey(User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(user__isnull=False, course__isnull=True) | Q(user__isnull=True, course__isnull=False),
                name="chat_target_user_or_course",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user or self.course}: {self.url.split(':', 1)[0]}"


class DeliveryState(models.TextChoices):
    PENDING = "pending", gettext_lazy("Waiting")
    SENDING = "sending", gettext_lazy("Sending")
    SENT = "sent", gettext_lazy("Sent")
    FAILED = "failed", gettext_lazy("Failed")


class Notification(models.Model):
    """One event for one recipient (a person, or a course's channel) on one channel. The delivery task sends every
    pending row of a recipient and channel as one message (a digest when there are several)."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, null=True, blank=True, related_name="notifications")
    course = models.ForeignKey(Course, on_delete=models.CASCADE, null=True, blank=True, related_name="notifications")
    event = models.CharField(max_length=40)
    channel = models.CharField(max_length=16, choices=Channel.choices)
    context = models.JSONField(default=dict)
    state = models.CharField(max_length=16, choices=DeliveryState.choices, default=DeliveryState.PENDING)
    claim = models.CharField(max_length=32, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # When it may go out (the digest window, then each retry's backoff): the periodic sweep sends what is due.
    due_at = models.DateTimeField(null=True, blank=True, db_index=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["user", "channel", "state"]), models.Index(fields=["course", "state"])]

    def __str__(self) -> str:
        return f"{self.event} → {self.user or self.course} ({self.channel}, {self.state})"
