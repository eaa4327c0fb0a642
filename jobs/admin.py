"""The admin console's part of the job queue: datasets, and jobs with their events (the image allow-list is labs')."""

from __future__ import annotations

from django.contrib import admin

from jobs.models import Dataset, Job, JobEvent


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "course", "claim", "local_path", "size_bytes", "enabled"]
    list_filter = ["enabled", "kind"]
    readonly_fields = ["size_bytes", "measured_at", "created_by"]
    search_fields = ["name", "description"]


class JobEventInline(admin.TabularInline):
    model = JobEvent
    extra = 0
    can_delete = False
    fields = ["at", "from_state", "to_state", "attempt", "reason"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    """Read-only: jobs change state through the services (cancel from the job's page), never by hand."""

    list_display = ["id", "name", "owner", "state", "attempt", "gpus_per_node", "nodes", "priority", "submitted_at"]
    list_filter = ["state", "priority"]
    search_fields = ["name", "owner__username", "image"]
    date_hierarchy = "submitted_at"
    inlines = [JobEventInline]

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in Job._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
