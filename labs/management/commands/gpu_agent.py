import logging
import os
import socket
import time

from django.core.management.base import BaseCommand, CommandError

from accounts.errors import BackendError
from labs.telemetry import http

log = logging.getLogger("labs.telemetry")


class Command(BaseCommand):
    help = (
        "The node agent: read this node's GPUs through NVML (nvidia-ml-py) and push the samples to the portal"
        " with the node's key (GPU_AGENT_TOKEN or --token-file; make one with gpu_agent_token)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--portal", default=os.environ.get("GPU_AGENT_PORTAL", ""), help="The portal's base URL.")
        parser.add_argument("--node", default=socket.gethostname().split(".")[0], help="This node's name in the lab.")
        parser.add_argument("--token-file", help="A file holding the node's key (else GPU_AGENT_TOKEN).")
        parser.add_argument("--interval", type=float, default=1.0, help="Seconds between pushes (default 1).")
        parser.add_argument("--once", action="store_true", help="Push one reading and stop.")
        parser.add_argument("--timeout", type=float, default=5.0, help="Seconds to wait for the portal.")

    def handle(self, *args, **options):
        if not options["portal"]:
            raise CommandError("Give the portal's URL: --portal https://portal.example or GPU_AGENT_PORTAL.")
        key = self._key(options["token_file"])
        if options["interval"] < 0.2:
            raise CommandError("--interval must be at least 0.2 s.")
        try:
            from labs.telemetry.nvml import NvmlReader

            reader = NvmlReader()
        except ImportError:
            raise CommandError("nvidia-ml-py is not installed: pip install nvidia-ml-py") from None
        except Exception as exc:  # pynvml.NVMLError: no driver, no GPU
            raise CommandError(f"NVML could not start: {exc}") from exc
        url = options["portal"].rstrip("/") + "/api/v1/agent/samples/"
        headers = {"Authorization": f"Bearer {key}"}
        failures = 0
        try:
            while True:
                started = time.monotonic()
                body = {"node": options["node"], "samples": reader.read()}
                try:
                    status, answer = http.post_json(url, body=body, timeout_s=options["timeout"], headers=headers)
                except BackendError as exc:
                    status, answer = None, str(exc)
                if status == 202:
                    failures = 0
                elif status in (401, 403):
                    raise CommandError(f"The portal refused this node's key ({status}): {answer}")
                else:
                    failures += 1
                    log.warning("gpu agent: push failed (%s): %s", status or "no answer", answer)
                if options["once"]:
                    if status != 202:
                        raise CommandError(f"The push failed: {status} {answer}")
                    self.stdout.write(f"pushed {len(body['samples'])} GPU sample(s) for {options['node']}")
                    return
                # Back off while the portal is away, up to half a minute.
                pause = options["interval"] * (2 ** min(failures, 5)) if failures else options["interval"]
                time.sleep(max(0.0, min(pause, 30.0) - (time.monotonic() - started)))
        except KeyboardInterrupt:
            pass
        finally:
            reader.close()
            http.close()

    def _key(self, token_file: str | None) -> str:
        if token_file:
            try:
                with open(token_file, encoding="utf-8") as handle:
                    key = handle.read().strip()
            except OSError as exc:
                raise CommandError(f"Cannot read {token_file}: {exc.strerror}") from None
        else:
            key = os.environ.get("GPU_AGENT_TOKEN", "").strip()
        if not key:
            raise CommandError("Give the node's key: GPU_AGENT_TOKEN or --token-file.")
        return key
