from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"
    verbose_name = "Training jobs"

    def ready(self) -> None:
        from jobs import checks  # noqa: F401 - registers the deploy checks
        from jobs.signals import on_allocations_ended
        from labs.signals import allocations_ended

        allocations_ended.connect(on_allocations_ended, dispatch_uid="jobs.preempt_on_allocations_ended")
