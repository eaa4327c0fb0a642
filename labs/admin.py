from django import forms
from django.contrib import admin, messages
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.errors import BackendError, PortalError
from labs.budgets.admin_console import BudgetAdmin, BudgetAlertAdmin
from labs.images import ImageRule
from labs.models import (
    Allocation,
    Budget,
    BudgetAlert,
    Gpu,
    GpuAlert,
    Node,
    NodeAgentToken,
    NotebookProfile,
    NotebookSession,
    Reservation,
    ReservationNode,
    ReservationStatus,
)
from labs.notebooks.profiles import PROFILE_FIELDS
from labs.notebooks.services import notebook_stop
from labs.reservations.services import reservation_cancel, reservation_decide
from labs.services import node_cordon, node_uncordon
from labs.telemetry.agents import agent_key_assign, agent_token_revoke
from labs.telemetry.health import alert_acknowledge


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

    @admin.display(description=gettext_lazy("GPUs"))
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
            self.message_user(request, verb % {"names": ", ".join(done)}, messages.SUCCESS)
        for problem in failed:
            self.message_user(request, problem, messages.ERROR)

    @admin.action(description=gettext_lazy("Cordon the selected nodes (no new work is placed there)"))
    def cordon(self, request, queryset):
        self._each(request, queryset, node_cordon, _("Cordoned: %(names)s."))

    @admin.action(description=gettext_lazy("Uncordon the selected nodes"))
    def uncordon(self, request, queryset):
        self._each(request, queryset, node_uncordon, _("Uncordoned: %(names)s."))


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
    # Warming the lab before class (labs/notebooks/prewarm.py) is set here: the course's profile and its placeholders.
    readonly_fields = [f.name for f in Reservation._meta.fields if f.name not in ("notebook_profile", "placeholders")]
    inlines = [ReservationNodeInline]
    actions = ["approve", "reject", "cancel"]

    @admin.display(description=gettext_lazy("nodes"))
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
            self.message_user(request, verb % {"names": ", ".join(done)}, messages.SUCCESS)
        for problem in failed:
            self.message_user(request, problem, messages.ERROR)

    @admin.action(description=gettext_lazy("Approve the selected pending reservations"))
    def approve(self, request, queryset):
        self._each(
            request,
            queryset.filter(status=ReservationStatus.PENDING),
            lambda r: reservation_decide(by=request.user, reservation=r, approve=True),
            _("Approved: %(names)s."),
        )

    @admin.action(description=gettext_lazy("Reject the selected pending reservations (their nodes are freed)"))
    def reject(self, request, queryset):
        self._each(
            request,
            queryset.filter(status=ReservationStatus.PENDING),
            lambda r: reservation_decide(
                by=request.user, reservation=r, approve=False, reason=_("Rejected in console.")
            ),
            _("Rejected: %(names)s."),
        )

    @admin.action(description=gettext_lazy("Cancel the selected reservations (or end them now if running)"))
    def cancel(self, request, queryset):
        self._each(
            request, queryset, lambda r: reservation_cancel(by=request.user, reservation=r), _("Cancelled: %(names)s.")
        )


# --- Telemetry


class AlertStateFilter(admin.SimpleListFilter):
    title = gettext_lazy("state")
    parameter_name = "state"

    def lookups(self, request, model_admin):
        return [("open", _("Open")), ("cleared", _("Cleared")), ("all", _("All"))]

    def choices(self, changelist):
        # Open alerts are what an admin comes for: they are the default.
        value = self.value() or "open"
        for lookup, title in self.lookup_choices:
            yield {
                "selected": value == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request, queryset):
        value = self.value() or "open"
        if value == "open":
            return queryset.filter(cleared_at__isnull=True)
        if value == "cleared":
            return queryset.filter(cleared_at__isnull=False)
        return queryset


@admin.register(GpuAlert)
class GpuAlertAdmin(admin.ModelAdmin):
    """Health alerts from the telemetry collector; each suggests cordoning the node until someone looks."""

    list_display = ["gpu", "kind", "value", "message", "suggestion", "raised_at", "last_seen_at", "acknowledged_by"]
    list_filter = [AlertStateFilter, "kind"]
    search_fields = ["gpu__node__name", "message"]
    list_select_related = ["gpu__node", "acknowledged_by"]
    actions = ["cordon_nodes", "acknowledge"]

    @admin.display(description=gettext_lazy("Suggested"))
    def suggestion(self, obj):
        node = obj.gpu.node
        if obj.cleared_at is not None:
            return "—"
        if node.status == "ready":
            return _("Cordon %(node)s") % {"node": node.name}
        return _("%(node)s is %(status)s") % {"node": node.name, "status": node.get_status_display()}

    @admin.action(description=gettext_lazy("Cordon the nodes of the selected alerts"))
    def cordon_nodes(self, request, queryset):
        nodes = {alert.gpu.node for alert in queryset.select_related("gpu__node")}
        for node in sorted(nodes, key=lambda n: n.name):
            try:
                node_cordon(node=node, by=request.user, reason=_("Cordoned for a GPU health alert."))
                self.message_user(request, _("Cordoned %(node)s.") % {"node": node.name}, messages.SUCCESS)
            except (PortalError, BackendError) as exc:
                self.message_user(request, f"{node.name}: {exc}", messages.ERROR)

    @admin.action(
        description=gettext_lazy("Acknowledge the selected alerts (Xid alerts close; temperature closes when cool)")
    )
    def acknowledge(self, request, queryset):
        for alert in queryset:
            alert_acknowledge(alert=alert, by=request.user)
        self.message_user(request, _("Acknowledged %(n)s alert(s).") % {"n": queryset.count()}, messages.SUCCESS)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(NodeAgentToken)
class NodeAgentTokenAdmin(admin.ModelAdmin):
    """Keys for the nodes' NVML agents (manage.py gpu_agent). A key is shown once, when it is made."""

    list_display = ["node", "prefix", "created_at", "created_by", "last_used_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["node__name", "prefix"]
    list_select_related = ["node", "created_by"]
    fields = ["node"]
    actions = ["revoke"]

    def save_model(self, request, obj, form, change):
        if not change:
            key = agent_key_assign(obj)
            obj.created_by = request.user
            obj.save()
            self.message_user(
                request,
                _(
                    "The agent key for %(node)s is %(key)s — copy it now, it is not shown again. On the node:"
                    " GPU_AGENT_TOKEN=%(key)s python manage.py gpu_agent --portal <this portal's URL>"
                )
                % {"node": obj.node.name, "key": key},
                messages.WARNING,
            )

    def has_change_permission(self, request, obj=None):
        return obj is None

    @admin.action(description=gettext_lazy("Revoke the selected agent keys"))
    def revoke(self, request, queryset):
        for token in queryset:
            agent_token_revoke(token=token)
        self.message_user(request, _("Revoked %(n)s key(s).") % {"n": queryset.count()}, messages.SUCCESS)


# --- Images


@admin.register(ImageRule)
class ImageRuleAdmin(admin.ModelAdmin):
    """The image allow-list beside JOBS_IMAGE_ALLOW: jobs and notebook profiles alike may use what matches."""

    list_display = ["pattern", "enabled", "gpu", "description", "created_at"]
    list_filter = ["enabled", "gpu"]
    search_fields = ["pattern", "description"]


# --- Notebooks


class NotebookProfileAdminForm(forms.ModelForm):
    """The image allow-list and the ceilings are NotebookProfile.clean()'s, which this form runs as the page does."""

    class Meta:
        model = NotebookProfile
        fields = [*PROFILE_FIELDS, "roles", "courses", "is_active"]

    def clean_image(self):
        return (self.cleaned_data.get("image") or "").strip()


@admin.register(NotebookProfile)
class NotebookProfileAdmin(admin.ModelAdmin):
    """Profiles are also written on the Notebooks › Profiles page; deactivate one rather than delete it."""

    form = NotebookProfileAdminForm

    list_display = [
        "name",
        "slug",
        "gpu_share",
        "cpu",
        "memory_gb",
        "max_session_h",
        "roles",
        "is_active",
        "created_by",
    ]
    list_filter = ["is_active", "courses"]
    search_fields = ["name", "slug", "image"]
    filter_horizontal = ["courses"]
    readonly_fields = ["created_by", "created_at", "updated_at"]
    list_select_related = ["created_by"]

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)

    def has_delete_permission(self, request, obj=None):
        return False  # sessions keep pointing at their profile: deactivate instead


@admin.register(NotebookSession)
class NotebookSessionAdmin(admin.ModelAdmin):
    """Sessions are written by the portal and the hub's pass; here they are read, and stopped."""

    list_display = ["id", "user", "profile", "course", "status", "node", "requested_at", "ready_at", "ends_at"]
    list_filter = ["status", "profile", "course"]
    search_fields = ["user__username", "node", "hub_user"]
    date_hierarchy = "requested_at"
    list_select_related = ["user", "profile", "course"]
    readonly_fields = [f.name for f in NotebookSession._meta.fields]
    actions = ["stop"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description=gettext_lazy("Stop the selected notebooks (or take them out of the queue)"))
    def stop(self, request, queryset):
        done, failed = [], []
        for session in queryset.select_related("user", "profile"):
            try:
                notebook_stop(user=request.user, session=session)
                done.append(f"#{session.pk}")
            except PortalError as exc:
                failed.append(f"#{session.pk}: {exc.message}")
        if done:
            self.message_user(request, _("Asked to stop: %(names)s.") % {"names": ", ".join(done)}, messages.SUCCESS)
        for problem in failed:
            self.message_user(request, problem, messages.ERROR)


admin.site.register(Budget, BudgetAdmin)
admin.site.register(BudgetAlert, BudgetAlertAdmin)
