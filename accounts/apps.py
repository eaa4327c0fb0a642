from django.apps import AppConfig
from django.utils.translation import gettext_lazy


class AccountsConfig(AppConfig):
    name = "accounts"
    label = "accounts"
    verbose_name = gettext_lazy("People and quotas")

    def ready(self) -> None:
        from accounts import audit, checks  # noqa: F401 - the start checks of the people side's settings; audit's receivers
