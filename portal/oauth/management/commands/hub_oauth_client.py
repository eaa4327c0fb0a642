from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from portal.oauth.services import hub_client_sync


class Command(BaseCommand):
    help = "Create or update JupyterHub's OAuth client from HUB_OAUTH_CLIENT_ID/SECRET and NOTEBOOKS_HUB_PUBLIC_URL."

    def handle(self, *args, **options):
        try:
            application = hub_client_sync()
        except ValidationError as exc:
            messages = [f"{field}: {' '.join(errors)}" for field, errors in exc.message_dict.items()]
            raise CommandError("; ".join(messages)) from None
        self.stdout.write(
            f"Hub OAuth client {application.client_id}: redirect URI {application.redirect_uris}, "
            f"{application.algorithm} ID tokens, no consent page"
        )
