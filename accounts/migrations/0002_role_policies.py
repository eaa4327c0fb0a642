"""Write the built-in role policies as rows, so admins see and edit them in the console."""

from decimal import Decimal

from django.db import migrations

POLICIES = {
    "student": dict(max_notebooks=1, notebook_gpu_share=Decimal("0.25"), gpu_hours_week=Decimal("20"), max_jobs=2,
                    max_gpus_per_job=1, reservation_max_nodes=0, reservation_max_hours=Decimal("0")),
    "teacher": dict(max_notebooks=2, notebook_gpu_share=Decimal("1"), gpu_hours_week=Decimal("200"), max_jobs=8,
                    max_gpus_per_job=8, reservation_max_nodes=40, reservation_max_hours=Decimal("8")),
    "admin": dict(max_notebooks=4, notebook_gpu_share=Decimal("1"), gpu_hours_week=Decimal("10000"), max_jobs=40,
                  max_gpus_per_job=40, reservation_max_nodes=40, reservation_max_hours=Decimal("168")),
}


def create(apps, schema_editor):
    Quota = apps.get_model("accounts", "Quota")
    for role, limits in POLICIES.items():
        Quota.objects.get_or_create(role=role, defaults={**limits, "note": "Policy for the role"})


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial")]
    operations = [migrations.RunPython(create, migrations.RunPython.noop)]
