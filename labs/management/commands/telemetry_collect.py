import asyncio
import signal

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from labs.telemetry.collector import Collector
from labs.telemetry.sources import get_telemetry_source


class Command(BaseCommand):
    help = (
        "Run the live GPU telemetry collector: sample every GPU at TELEMETRY_INTERVAL_MS, keep the latest state"
        " in Redis and the one-minute history in the database, and publish changes to the web servers."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--source", choices=["simulator", "dcgm", "prometheus", "agent"], help="Override TELEMETRY_SOURCE."
        )
        parser.add_argument("--interval-ms", type=int, help="Override TELEMETRY_INTERVAL_MS.")
        parser.add_argument("--ticks", type=int, help="Stop after this many ticks (default: run until stopped).")

    def handle(self, *args, **options):
        if not settings.REDIS_URL:
            raise CommandError(
                "telemetry_collect publishes through Redis; set REDIS_URL. Without Redis the web server runs the"
                " collector itself (TELEMETRY_COLLECTOR=embedded)."
            )
        interval_ms = options["interval_ms"]
        if interval_ms is not None and interval_ms < 100:
            raise CommandError("--interval-ms must be at least 100.")
        collector = Collector(
            source=get_telemetry_source(options["source"]),
            interval_s=interval_ms / 1000 if interval_ms else None,
        )
        asyncio.run(self._run(collector, options["ticks"]))

    async def _run(self, collector: Collector, ticks: int | None) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await collector.run(stop=stop, ticks=ticks)
        self.stdout.write(f"telemetry collector stopped at update {collector.seq}")
