"""The lab's inventory: nodes and their GPUs."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.utils.translation import gettext, gettext_lazy

# Kubernetes node names are DNS-1123 subdomains; we keep to the label subset (no dots) for readability.
node_name_validator = RegexValidator(
    r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
    "A node name is lower-case letters, digits and dashes (at most 63), as Kubernetes requires.",
)


class NodeStatus(models.TextChoices):
    READY = "ready", gettext_lazy("Ready")
    CORDONED = "cordoned", gettext_lazy("Cordoned")
    DOWN = "down", gettext_lazy("Down")


class Node(models.Model):
    name = models.CharField(max_length=63, unique=True, validators=[node_name_validator])
    labels = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=NodeStatus.choices, default=NodeStatus.READY, db_index=True)
    status_reason = models.CharField(max_length=200, blank=True)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    source = models.CharField(
        max_length=16, default="local", help_text=gettext_lazy("Where the inventory learnt of this node.")
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = gettext_lazy("node")
        verbose_name_plural = gettext_lazy("nodes")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if not isinstance(self.labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.labels.items()
        ):
            raise ValidationError({"labels": gettext("Labels are a mapping of text keys to text values.")})


class Gpu(models.Model):
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="gpus")
    index = models.PositiveSmallIntegerField()
    uuid = models.CharField(max_length=64, unique=True, null=True, blank=True)
    model = models.CharField(max_length=100)
    memory_mb = models.PositiveIntegerField(validators=[MinValueValidator(1)])

    class Meta:
        verbose_name = gettext_lazy("GPU")
        verbose_name_plural = gettext_lazy("GPUs")
        ordering = ["node__name", "index"]
        constraints = [models.UniqueConstraint(fields=["node", "index"], name="gpu_index_unique_per_node")]

    def __str__(self) -> str:
        return f"{self.node.name}/{self.index}"
