from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import gettext as _

from accounts.models import Role
from accounts.services import token_issue, user_rename, user_upsert


class Command(BaseCommand):
    help = (
        "Create or update a portal user with a role; with --token, the last line printed is their API token. The "
        "user is found by name whatever its case (names that differ only in case are one name)."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", choices=Role.values, help="Required for a new user; kept when left out.")
        parser.add_argument(
            "--rename",
            metavar="NEW_NAME",
            help="Give the user a new name (their notebooks' hub account and home stay theirs).",
        )
        parser.add_argument("--password", help="Set this password (otherwise new users cannot log in by password).")
        parser.add_argument("--email")
        parser.add_argument(
            "--course",
            action="append",
            default=[],
            metavar="CODE",
            help="Enroll (students) or add as teacher (others); repeat for several courses.",
        )
        parser.add_argument("--token", action="store_true", help="Print the user's API token as the last line.")

    def handle(self, *args, **options):
        others = ("role", "password", "email", "token")
        if options["rename"] and not options["course"] and not any(options[name] for name in others):
            # A rename alone touches the name only: it works before the database has every later column (the
            # case-insensitive names migration asks for renames before it applies).
            try:
                _pk, role = user_rename(username=options["username"], new_name=options["rename"])
            except ValidationError as exc:
                raise CommandError("; ".join(f"{f}: {' '.join(e)}" for f, e in exc.message_dict.items())) from None
            self.stdout.write(
                _("Updated %(role)s %(name)s (was %(old)s)")
                % {"role": role, "name": options["rename"], "old": options["username"]}
            )
            return
        try:
            user, created = user_upsert(
                username=options["username"],
                role=options["role"],
                password=options["password"],
                email=options["email"],
                course_codes=options["course"],
                rename=options["rename"],
            )
        except ValidationError as exc:
            messages = [f"{field}: {' '.join(errors)}" for field, errors in exc.message_dict.items()]
            raise CommandError("; ".join(messages)) from None
        values = {"role": user.role, "name": user.username, "old": options["username"]}
        if options["rename"]:
            self.stdout.write(_("Updated %(role)s %(name)s (was %(old)s)") % values)
        else:
            self.stdout.write((_("Created %(role)s %(name)s") if created else _("Updated %(role)s %(name)s")) % values)
        if options["token"]:
            self.stdout.write(token_issue(user=user))
