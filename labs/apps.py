from django.apps import AppConfig
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save
from django.utils.translation import gettext_lazy


class LabsConfig(AppConfig):
    name = "labs"
    verbose_name = gettext_lazy("The lab")

    def ready(self) -> None:
        from accounts.models import Course
        from labs import reconcile  # noqa: F401 - the ledger's reconcile steps
        from labs.budgets import checks as budgets_checks  # noqa: F401 - the start checks of the lab's settings
        from labs.budgets.receivers import on_holders_closed as budgets_on_holders_closed
        from labs.maintenance.selectors import banners_changed
        from labs.models import Allocation, Announcement, Maintenance
        from labs.notebooks import checks as notebooks_checks  # noqa: F401
        from labs.notebooks import reconcile as notebooks_reconcile  # noqa: F401 - the hub's reconcile steps
        from labs.notebooks.receivers import on_allocations_ended
        from labs.signals import allocations_ended, holders_closed
        from labs.telemetry import checks as telemetry_checks  # noqa: F401
        from labs.usage import daysums
        from labs.usage.efficiency import on_holders_closed

        # The day sums beside the ledger follow an entry saved or deleted one by one (the ledger's closes add theirs).
        pre_save.connect(daysums.before_save, sender=Allocation, dispatch_uid="labs.daysums_before_save")
        post_save.connect(daysums.after_save, sender=Allocation, dispatch_uid="labs.daysums_after_save")
        post_delete.connect(daysums.after_delete, sender=Allocation, dispatch_uid="labs.daysums_after_delete")
        post_delete.connect(daysums.course_deleted, sender=Course, dispatch_uid="labs.daysums_course_deleted")
        # Every page's banners are kept in the cache until one of these is written (labs.maintenance.selectors).
        for model in (Announcement, Maintenance):
            post_save.connect(banners_changed, sender=model, dispatch_uid=f"labs.banners_on_save_{model.__name__}")
            post_delete.connect(banners_changed, sender=model, dispatch_uid=f"labs.banners_on_delete_{model.__name__}")
        m2m_changed.connect(banners_changed, sender=Maintenance.nodes.through, dispatch_uid="labs.banners_on_nodes")
        allocations_ended.connect(on_allocations_ended, dispatch_uid="labs.notebooks_stop_on_allocations_ended")
        holders_closed.connect(on_holders_closed, dispatch_uid="labs.usage_efficiency_on_holders_closed")
        holders_closed.connect(budgets_on_holders_closed, dispatch_uid="labs.budgets_check_on_holders_closed")
