from django.apps import AppConfig
from django.core import checks


class AccountsConfig(AppConfig):
    name = "portal.accounts"
    label = "accounts"
    verbose_name = "People and quotas"

    def ready(self) -> None:
        from portal.ops import check_metrics_token

        # Registered here, not where it is defined: the checks run before the URLconf (and ops) is imported.
        checks.register(check_metrics_token, checks.Tags.security, deploy=True)
