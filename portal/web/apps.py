from django.apps import AppConfig
from django.core import checks
from django.utils.translation import gettext_lazy


class WebConfig(AppConfig):
    name = "portal.web"
    label = "web"
    verbose_name = gettext_lazy("Pages")

    def ready(self) -> None:
        from portal import checks as shell_checks  # noqa: F401 - the shell's start checks (settings)
        from portal.ops import check_metrics_token

        # Registered here, not where it is defined: the checks run before the URLconf (and ops) is imported. Here, in
        # the shell, and not in accounts' ready(): the people side imports nothing above it.
        checks.register(check_metrics_token, checks.Tags.security, deploy=True)
