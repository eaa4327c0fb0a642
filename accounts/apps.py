from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    label = "accounts"
    verbose_name = "People and quotas"

    def ready(self) -> None:
        from accounts import checks  # noqa: F401 - the start checks of the people side's settings
