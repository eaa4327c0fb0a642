"""Telemetry sources behind one interface, chosen by TELEMETRY_SOURCE.

A source is asked once per tick for the samples of the GPUs it can see; it returns GpuSamples
(unchecked: the collector checks them). A source that cannot reach anything raises BackendError;
one node that cannot be reached is logged and left out (it turns stale).

- simulator   forty simulated RTX 4090s (the default: run command, demo, tests)
- dcgm        scrape every node's dcgm-exporter (TELEMETRY_DCGM_URL, "http://{node}:9400/metrics")
- prometheus  one instant query to a Prometheus server that scrapes the exporters
- agent       what the nodes' NVML agents pushed (manage.py gpu_agent) since the last tick
"""

from __future__ import annotations

import concurrent.futures
from typing import Protocol

from django.conf import settings

from accounts.errors import BackendError
from labs.telemetry import http, store
from labs.telemetry.dcgm import parse_scrape
from labs.telemetry.prometheus import QUERY, PrometheusAnswerError, parse_answer
from labs.telemetry.samples import GpuSample, GpuTarget, throttled
from labs.telemetry.simulator import GpuSimulator


class TelemetrySource(Protocol):
    name: str
    # False when collect() does no I/O and may run on the event loop.
    blocking: bool

    def collect(self, targets: list[GpuTarget], now: float) -> list[GpuSample]: ...


def _watched_nodes(targets: list[GpuTarget]) -> list[str]:
    # Down nodes are asked too: a node that answers again shows it is back.
    return sorted({target.node for target in targets})


class SimulatorSource:
    name = "simulator"
    blocking = False

    def __init__(self, simulator: GpuSimulator | None = None) -> None:
        self.simulator = simulator or GpuSimulator(faults=settings.TELEMETRY_SIMULATOR_FAULTS)

    def collect(self, targets: list[GpuTarget], now: float) -> list[GpuSample]:
        return self.simulator.sample(targets, now)


class DcgmSource:
    name = "dcgm"
    blocking = True

    def __init__(self, url_template: str | None = None, timeout_s: float | None = None) -> None:
        self.url_template = url_template or settings.TELEMETRY_DCGM_URL
        self.timeout_s = timeout_s or settings.TELEMETRY_SCRAPE_TIMEOUT_MS / 1000
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="dcgm-scrape")

    def _scrape(self, node: str, now: float) -> list[GpuSample]:
        text = http.get_text(self.url_template.format(node=node), timeout_s=self.timeout_s)
        return parse_scrape(text, node=node, now=now)

    def collect(self, targets: list[GpuTarget], now: float) -> list[GpuSample]:
        nodes = _watched_nodes(targets)
        futures = {self._pool.submit(self._scrape, node, now): node for node in nodes}
        samples: list[GpuSample] = []
        failed = 0
        for future in concurrent.futures.as_completed(futures):
            node = futures[future]
            try:
                samples.extend(future.result())
            except BackendError as exc:
                failed += 1
                throttled.warning(f"dcgm:{node}", "unreachable", "telemetry: scraping %s failed: %s", node, exc)
            except Exception as exc:  # one node's page that breaks the parser must not cost the other nodes
                failed += 1
                throttled.warning(f"dcgm:{node}", "unreadable", "telemetry: %s's page could not be read: %r", node, exc)
        if nodes and failed == len(nodes):
            raise BackendError(f"no dcgm-exporter answered ({len(nodes)} nodes)", retryable=True)
        return samples


class PrometheusSource:
    name = "prometheus"
    blocking = True

    def __init__(self, url: str | None = None, timeout_s: float | None = None) -> None:
        self.url = (url or settings.TELEMETRY_PROMETHEUS_URL).rstrip("/") + "/api/v1/query"
        self.timeout_s = timeout_s or settings.TELEMETRY_SCRAPE_TIMEOUT_MS / 1000
        self.node_labels = tuple(settings.TELEMETRY_PROMETHEUS_NODE_LABELS)

    def collect(self, targets: list[GpuTarget], now: float) -> list[GpuSample]:
        answer = http.get_json(self.url, params={"query": QUERY}, timeout_s=self.timeout_s)
        uuid_index = {target.uuid: (target.node, target.index) for target in targets if target.uuid}
        try:
            return parse_answer(answer, now=now, node_labels=self.node_labels, uuid_index=uuid_index)
        except PrometheusAnswerError as exc:
            raise BackendError(f"Prometheus at {self.url}: {exc}", retryable=True) from exc


class AgentSource:
    name = "agent"
    blocking = True

    def collect(self, targets: list[GpuTarget], now: float) -> list[GpuSample]:
        return store.read_inboxes(_watched_nodes(targets))


def get_telemetry_source(name: str | None = None) -> TelemetrySource:
    name = name or settings.TELEMETRY_SOURCE
    sources = {"simulator": SimulatorSource, "dcgm": DcgmSource, "prometheus": PrometheusSource, "agent": AgentSource}
    return sources[name]()
