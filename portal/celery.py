import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Capabilities inside an app keep their tasks in their own folder.
app.autodiscover_tasks(["labs.reservations"])
app.autodiscover_tasks(["labs.notebooks"])
app.autodiscover_tasks(["labs.budgets"])
app.autodiscover_tasks(["labs.usage"])
