from django.apps import AppConfig


class LabsConfig(AppConfig):
    name = "labs"
    verbose_name = "The lab"
