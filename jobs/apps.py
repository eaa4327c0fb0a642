from django.apps import AppConfig
from django.utils.translation import gettext_lazy


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = gettext_lazy("Training jobs")

    def ready(self) -> None:
        # The deploy checks; the jobs' reconcile steps and ledger judge.
        from jobs import checks, reconcile  # noqa: F401
        from jobs.datasets import notebook_volumes_for
        from jobs.receivers import on_allocations_ended
        from jobs.selectors import job_queue_waits
        from jobs.storage import storage_of
        from labs.notebooks.volumes import register_volume_source
        from labs.signals import allocations_ended
        from labs.usage.storage import storage_register
        from labs.usage.waits import queue_wait_register

        queue_wait_register("job", job_queue_waits)
        register_volume_source(notebook_volumes_for)
        storage_register(storage_of)

        allocations_ended.connect(on_allocations_ended, dispatch_uid="jobs.preempt_on_allocations_ended")
