"""Run the notebooks' JupyterHub in the foreground, for the run command (scripts/run.sh).

The hub listens where the portal's settings say it is (NOTEBOOKS_HUB_API_URL, NOTEBOOKS_HUB_PUBLIC_URL), keeps its
data (database, log, the local notebooks' homes) in VAR_DIR/hub (var/hub), and logs people in through the portal at
--portal-url. Ctrl-C or SIGTERM stops it and everything it started. Local notebooks run in the portal's bubblewrap
sandbox (deploy/jupyterhub/portal_hub/spawners.py); outside DEBUG the local spawner needs SINGLE_MACHINE_LAB.
"""

from __future__ import annotations

import signal
import time
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from labs.notebooks.localhub import SPAWNERS, HubFailed, HubNotInstalled, LocalHub


def _host_port(url: str, name: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.scheme != "http" or not parts.hostname or not parts.port:
        raise CommandError(f"{name} must be an http URL with a host and a port to run a hub here, got {url!r}.")
    return parts.hostname, parts.port


class Command(BaseCommand):
    help = "Run a JupyterHub for the portal's notebooks in the foreground (local JupyterLab servers or echo ones)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--spawner",
            choices=SPAWNERS,
            default=settings.HUB_SPAWNER if settings.HUB_SPAWNER in SPAWNERS else "local",
            help="local (JupyterLab, sandboxed) or echo; default HUB_SPAWNER.",
        )
        parser.add_argument(
            "--portal-url", default="http://127.0.0.1:8000", help="The portal as browsers reach it (the login)."
        )
        parser.add_argument("--timeout", type=float, default=90, help="Seconds to wait for the hub to come up.")

    def handle(self, *args, spawner: str, portal_url: str, timeout: float, **options):
        if spawner == "local" and not settings.DEBUG and not settings.SINGLE_MACHINE_LAB:
            raise CommandError(
                "--spawner local runs students' notebooks on this machine: outside DEBUG only in a lab that is one "
                "machine (SINGLE_MACHINE_LAB=true); otherwise run the hub with HUB_SPAWNER=kubernetes."
            )
        api_host, api_port = _host_port(settings.NOTEBOOKS_HUB_API_URL, "NOTEBOOKS_HUB_API_URL")
        public_host, proxy_port = _host_port(settings.NOTEBOOKS_HUB_PUBLIC_URL, "NOTEBOOKS_HUB_PUBLIC_URL")
        if api_host != public_host:
            raise CommandError(
                "NOTEBOOKS_HUB_API_URL and NOTEBOOKS_HUB_PUBLIC_URL must name the same host to run a hub here."
            )
        try:
            hub = LocalHub(
                spawner=spawner,
                portal_url=portal_url,
                host=api_host,
                api_port=api_port,
                proxy_port=proxy_port,
                data_dir=settings.VAR_DIR / "hub",
            )
        except HubNotInstalled as missing:
            raise CommandError(str(missing)) from None

        stopping = False

        def stop(*_args):
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        try:
            try:
                hub.start(timeout=timeout)
            except (HubNotInstalled, HubFailed) as failed:
                raise CommandError(str(failed)) from None
            self.stdout.write(
                f"JupyterHub ({spawner} spawner): notebooks on {hub.public_url}/, API on {hub.api_url}, "
                f"log in {hub.log_path}"
            )
            while not stopping and hub.running:
                time.sleep(0.5)
            if not stopping:
                raise CommandError(f"JupyterHub stopped by itself; its log ends with:\n{hub.log_tail(30)}")
        finally:
            hub.stop()
