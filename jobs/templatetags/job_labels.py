"""A job's status word as the pages show it (lower case, as the live scripts write it too: static/js/jobs.js), in the
person's language: `{% load job_labels %}{{ job.status_label|job_status }}`."""

from __future__ import annotations

from django import template
from django.utils.translation import pgettext_lazy

register = template.Library()

STATUS_WORDS = {
    "queued": pgettext_lazy("job status", "queued"),
    "starting": pgettext_lazy("job status", "starting"),
    "running": pgettext_lazy("job status", "running"),
    "stopping": pgettext_lazy("job status", "stopping"),
    "succeeded": pgettext_lazy("job status", "succeeded"),
    "failed": pgettext_lazy("job status", "failed"),
    "cancelled": pgettext_lazy("job status", "cancelled"),
}


@register.filter
def job_status(value: str) -> str:
    return STATUS_WORDS.get(value, value)
