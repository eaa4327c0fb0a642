from django.contrib import admin, messages

from labs.models import Allocation, Gpu, Node
from labs.services import node_cordon, node_uncordon
from portal.errors import BackendError, PortalError


class GpuInline(admin.TabularInline):
    model = Gpu
    extra = 0
    fields = ["index", "model", "memory_mb", "uuid"]


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["name", "status", "status_reason", "gpu_count", "source", "updated_at"]
    list_filter = ["status", "source"]
    search_fields = ["name", "status_reason"]
    readonly_fields = ["status", "status_reason", "status_changed_at", "source", "created_at", "updated_at"]
    inlines = [GpuInline]
    actions = ["cordon", "uncordon"]

    @admin.display(description="GPUs")
    def gpu_count(self, obj):
        return obj.gpus.count()

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("gpus")

    def _each(self, request, queryset, action, verb):
        done, failed = [], []
        for node in queryset:
            try:
                action(node=node, by=request.user)
                done.append(node.name)
            except (PortalError, BackendError) as exc:
                failed.append(f"{node.name}: {exc}")
        if done:
            self.message_user(request, f"{verb}: {', '.join(done)}.", messages.SUCCESS)
        for problem in failed:
            self.message_user(request, problem, messages.ERROR)

    @admin.action(description="Cordon the selected nodes (no new work is placed there)")
    def cordon(self, request, queryset):
        self._each(request, queryset, node_cordon, "Cordoned")

    @admin.action(description="Uncordon the selected nodes")
    def uncordon(self, request, queryset):
        self._each(request, queryset, node_uncordon, "Uncordoned")


@admin.register(Gpu)
class GpuAdmin(admin.ModelAdmin):
    list_display = ["__str__", "model", "memory_mb", "uuid"]
    list_filter = ["model", "node__status"]
    search_fields = ["node__name", "uuid"]


@admin.register(Allocation)
class AllocationAdmin(admin.ModelAdmin):
    """The ledger is written by services; here it is read, filtered and searched."""

    list_display = ["ref", "kind", "user", "course", "gpu", "share", "starts_at", "ends_at"]
    list_filter = ["kind", "course", ("ends_at", admin.EmptyFieldListFilter)]
    search_fields = ["ref", "user__username", "gpu__node__name"]
    date_hierarchy = "starts_at"
    list_select_related = ["user", "course", "gpu__node"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
