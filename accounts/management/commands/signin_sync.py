import json

from django.core.management.base import BaseCommand
from django.utils.translation import gettext as _

from accounts.signin import ldap_enabled
from accounts.tasks import signin_sync


class Command(BaseCommand):
    help = "Apply the LDAP directory's groups again to everyone who signs in through it (what beat runs nightly)."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print the counts as JSON")

    def handle(self, *args, **options):
        if not ldap_enabled():
            self.stderr.write(_("LDAP_SERVER_URI is not set: nothing to sync."))
        counts = signin_sync()  # the task, run here
        if options["json"]:
            self.stdout.write(json.dumps(counts))
        else:
            self.stdout.write(_("%(synced)s synced, %(gone)s gone from the directory, %(failed)s failed") % counts)
