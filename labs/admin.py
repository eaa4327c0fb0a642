from django.contrib import admin, messages

from labs.models import (
    Allocation,
    Gpu,
    Node,
    Reservation,
    ReservationNode,
    ReservationStatus,
)
from labs.reservations import reservation_cancel, reservation_decide
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


class ReservationNodeInline(admin.TabularInline):
    model = ReservationNode
    extra = 0
    fields = ["node", "starts_at", "ends_at", "holds"]
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Reservation)
class ReservationAdmin(admin.ModelAdmin):
    """Bookings are made on the Reservations pages (the rules live in one service); here admins decide."""

    list_display = ["title", "owner", "course", "starts_at", "ends_at", "status", "node_count"]
    list_filter = ["status", "requested", "course"]
    search_fields = ["title", "owner__username"]
    date_hierarchy = "starts_at"
    list_select_related = ["owner", "course"]
    readonly_fields = [f.name for f in Reservation._meta.fields]
    inlines = [ReservationNodeInline]
    actions = ["approve", "reject", "cancel"]

    @admin.display(description="nodes")
    def node_count(self, obj):
        return obj.node_rows.count()

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def _each(self, request, queryset, action, verb):
        done, failed = [], []
        for reservation in queryset:
            try:
                action(reservation)
                done.append(reservation.title)
            except PortalError as exc:
                failed.append(f"{reservation.title}: {exc}")
        if done:
            self.message_user(request, f"{verb}: {', '.join(done)}.", messages.SUCCESS)
        for problem in failed:
            self.message_user(request, problem, messages.ERROR)

    @admin.action(description="Approve the selected pending reservations")
    def approve(self, request, queryset):
        self._each(
            request,
            queryset.filter(status=ReservationStatus.PENDING),
            lambda r: reservation_decide(by=request.user, reservation=r, approve=True),
            "Approved",
        )

    @admin.action(description="Reject the selected pending reservations (their nodes are freed)")
    def reject(self, request, queryset):
        self._each(
            request,
            queryset.filter(status=ReservationStatus.PENDING),
            lambda r: reservation_decide(by=request.user, reservation=r, approve=False, reason="Rejected in console."),
            "Rejected",
        )

    @admin.action(description="Cancel the selected reservations (or end them now if running)")
    def cancel(self, request, queryset):
        self._each(request, queryset, lambda r: reservation_cancel(by=request.user, reservation=r), "Cancelled")
