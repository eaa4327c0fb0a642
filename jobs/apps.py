from django.apps import AppConfig
from django.utils.translation import gettext_lazy


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = gettext_lazy("Training jobs")

    def ready(self) -> None:
        # The deploy checks; the jobs' reconcile steps and ledger judge.
        from jobs import checks, reconcile  # noqa: F401
        from jobs.receivers import on_allocations_ended
        from jobs.selectors import job_queue_waits
        from labs.signals import allocations_ended
        from labs.usage.waits import queue_wait_register

        queue_wait_register("job", job_queue_waits)

        allocations_ended.connect(on_allocations_ended, dispatch_uid="jobs.preempt_on_allocations_ended")
