from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import gettext as _

from accounts.errors import BackendError
from labs.backends.inventory import KubernetesInventory, LocalInventory
from labs.inventory import InventoryError
from labs.services import inventory_sync


class Command(BaseCommand):
    help = "Load the lab's nodes and GPUs from a YAML/CSV file or from the Kubernetes nodes that advertise GPUs."

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("file", nargs="?", help="inventory.yaml or inventory.csv")
        source.add_argument("--kubernetes", action="store_true", help="Read nodes from the cluster.")
        parser.add_argument("--prune", action="store_true", help="Mark nodes missing from the source as down.")

    def handle(self, *args, **options):
        backend = KubernetesInventory() if options["kubernetes"] else LocalInventory(options["file"])
        try:
            specs = backend.list_nodes()
        except (InventoryError, BackendError) as exc:
            raise CommandError(str(exc)) from None
        if not specs:
            raise CommandError(_("The source lists no GPU nodes; nothing was changed."))
        report = inventory_sync(specs=specs, source=backend.name, prune=options["prune"])
        self.stdout.write(self.style.SUCCESS(_("Inventory loaded: %(report)s.") % {"report": report}))
