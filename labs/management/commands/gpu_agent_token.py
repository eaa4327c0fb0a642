from django.core.management.base import BaseCommand, CommandError
from django.utils.translation import gettext as _

from labs.models import Node, NodeAgentToken
from labs.telemetry.agents import agent_token_issue, agent_token_revoke


class Command(BaseCommand):
    help = "Make (or revoke) the key a node's gpu_agent pushes its samples with. The last line printed is the key."

    def add_arguments(self, parser):
        parser.add_argument("node", help="The node's name, e.g. gpu01.")
        parser.add_argument("--revoke", action="store_true", help="Revoke the node's keys instead of making one.")
        parser.add_argument("--replace", action="store_true", help="Revoke the node's other keys when making this one.")

    def handle(self, *args, **options):
        node = Node.objects.filter(name=options["node"]).first()
        if node is None:
            raise CommandError(_("No node named %(node)r.") % {"node": options["node"]})
        if options["revoke"]:
            tokens = list(NodeAgentToken.objects.filter(node=node, revoked_at__isnull=True))
            for token in tokens:
                agent_token_revoke(token=token)
            self.stdout.write(_("Revoked %(n)s key(s) of %(node)s.") % {"n": len(tokens), "node": node.name})
            return
        _token, key = agent_token_issue(node=node, revoke_others=options["replace"])
        self.stdout.write(
            _("Agent key for %(node)s (shown once; set GPU_AGENT_TOKEN on the node):") % {"node": node.name}
        )
        self.stdout.write(key)
