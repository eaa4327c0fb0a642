"""User names are unique whatever their case: first refuse while two accounts differ only in case, then the constraint.

The check comes first so that `migrate` stops with a sentence naming the accounts (and what to do), not with the
database's "could not create unique index". Nothing is renamed or merged here: which account is which person is an
admin's call.
"""

from django.core.management.base import CommandError
from django.db import migrations, models
from django.db.models import Count
from django.db.models.functions import Lower


def username_collisions(user_model, using: str = "default") -> list[list[tuple[int, str]]]:
    """Groups of accounts whose names differ only in case: [[(id, username), ...], ...], by name."""
    users = user_model._base_manager.using(using)
    lowered = (
        users.annotate(lowered=Lower("username"))
        .values("lowered")
        .annotate(count=Count("id"))
        .filter(count__gt=1)
        .values_list("lowered", flat=True)
    )
    groups: dict[str, list[tuple[int, str]]] = {}
    rows = users.annotate(lowered=Lower("username")).filter(lowered__in=list(lowered)).order_by("lowered", "id")
    for pk, username, key in rows.values_list("id", "username", "lowered"):
        groups.setdefault(key, []).append((pk, username))
    return list(groups.values())


def collisions_sentence(groups: list[list[tuple[int, str]]]) -> str:
    listed = "\n".join("  - " + ", ".join(f"“{username}” (id {pk})" for pk, username in group) for group in groups)
    return (
        "User names must be unique whatever their case (sign-in, rosters and the API find “Student2” and "
        "“student2” as one person), and these accounts differ only in case:\n"
        f"{listed}\n"
        "Decide which account is the person's and rename the others before migrating again: "
        "`python manage.py portal_user <exact name> --rename <new name>`, or the admin console (People → the "
        "account → Username). Nothing was changed."
    )


def refuse_case_collisions(apps, schema_editor):
    User = apps.get_model("accounts", "User")
    groups = username_collisions(User, using=schema_editor.connection.alias)
    if groups:
        raise CommandError(collisions_sentence(groups))


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0008_roster_requests_to_join"),
    ]

    operations = [
        migrations.RunPython(refuse_case_collisions, migrations.RunPython.noop, elidable=False),
        migrations.AddConstraint(
            model_name="user",
            constraint=models.UniqueConstraint(Lower("username"), name="user_username_unique_ignoring_case"),
        ),
    ]
