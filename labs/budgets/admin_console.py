"""The admin console's pages for budgets (registered by labs/admin.py): set them, see their use, the alerts told.

The form checks what the API's services check (Budget.clean asks labs.budgets.validation); the list shows each
budget's use in its current period, from the ledger.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.utils.text import format_lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.audit_admin import AUDITED, Audited, AuditedModelAdmin
from accounts.locale import fmt_number
from labs.budgets.selectors import BudgetUse, budget_use
from labs.budgets.services import BUDGET_FIELDS
from labs.models.budgets import Budget


def _use(obj: Budget) -> BudgetUse:
    """The row's use, read once for its two columns (the list calls each column with the same row)."""
    if not hasattr(obj, "_use"):
        obj._use = budget_use(obj)
    return obj._use


AUDITED[Budget] = Audited(
    "budget.create", "budget.change", "budget.delete", BUDGET_FIELDS, course=lambda obj: obj.course_id
)


class BudgetAdmin(AuditedModelAdmin):
    list_display = ["name", "scope", "period", "starts_on", "ends_on", "gpu_hours", "used", "cost", "on_exceed"]
    list_filter = ["period", "on_exceed"]
    search_fields = ["name", "course__code", "user__username"]
    autocomplete_fields = ["course", "user"]
    fieldsets = [
        (None, {"fields": ["name", "course", "user", "note"]}),
        (gettext_lazy("Period"), {"fields": ["period", "starts_on", "ends_on"]}),
        (gettext_lazy("Amount and prices"), {"fields": ["gpu_hours", "price_per_gpu_hour", "price_per_kwh"]}),
        (gettext_lazy("Alerts and the 100 % mark"), {"fields": ["thresholds", "on_exceed"]}),
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("course", "user")

    @admin.display(description=gettext_lazy("for"))
    def scope(self, obj: Budget) -> str:
        return obj.scope_label

    @admin.display(description=gettext_lazy("used this period"))
    def used(self, obj: Budget) -> str:
        use = _use(obj)
        if use.period is None:
            return _("not in force")
        return _("%(hours)s GPU-h (%(pct)s %%)") % {"hours": fmt_number(use.used_gpu_hours), "pct": use.pct}

    @admin.display(description=format_lazy("{} ({})", gettext_lazy("cost"), settings.USAGE_CURRENCY))
    def cost(self, obj: Budget) -> str:
        use = _use(obj)
        return "—" if use.cost is None else fmt_number(use.cost, 2)


class BudgetAlertAdmin(admin.ModelAdmin):
    """What was told: read-only (the check writes these rows)."""

    list_display = ["budget", "period_start", "threshold", "used_gpu_hours", "sent_at", "notices", "emails"]
    list_filter = ["threshold"]
    search_fields = ["budget__name"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
