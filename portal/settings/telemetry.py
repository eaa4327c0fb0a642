"""Live GPU telemetry (labs/telemetry): where samples come from, who collects them, how long they are kept, alerts,
and the live grid's clients. Combinations that cannot work stop the start (labs/telemetry/checks.py)."""

from __future__ import annotations

from accounts.env import envchoice, envint, envintlist, envlist, envmatch, envstr
from portal.settings.data import REDIS_URL
from portal.settings.usage import USAGE_EFFICIENCY_DAYS

# --- Telemetry -------------------------------------------------------------------------
# Where live GPU samples come from: a simulator of the lab's RTX 4090s (the default: run command, demo,
# tests), a scrape of each node's dcgm-exporter, a Prometheus server that scrapes them, or the NVML
# agents' pushes (manage.py gpu_agent on each node, with a node token).
TELEMETRY_SOURCE = envchoice("TELEMETRY_SOURCE", "simulator", ("simulator", "dcgm", "prometheus", "agent"))
# Who runs the collector: the web server's process (embedded: the in-memory channel layer is per process),
# a process of its own (manage.py telemetry_collect, publishing through Redis; needs REDIS_URL: labs.E002), or nobody.
TELEMETRY_COLLECTOR = envchoice(
    "TELEMETRY_COLLECTOR", "process" if REDIS_URL else "embedded", ("embedded", "process", "off")
)
TELEMETRY_INTERVAL_MS = envint("TELEMETRY_INTERVAL_MS", 1000, minimum=100, maximum=60_000)
TELEMETRY_STALE_AFTER_S = envint("TELEMETRY_STALE_AFTER_S", 30, minimum=2)
# Kept at least USAGE_EFFICIENCY_DAYS + 7 days whatever is set here: the efficiency refresh reads that far back.
TELEMETRY_HISTORY_DAYS = max(envint("TELEMETRY_HISTORY_DAYS", 14, minimum=1), USAGE_EFFICIENCY_DAYS + 7)
TELEMETRY_DCGM_URL = envmatch(
    "TELEMETRY_DCGM_URL",
    "http://{node}:9400/metrics",
    r".*\{node\}.*",
    "must contain {node}, e.g. http://{node}:9400/metrics",
)
# Required with TELEMETRY_SOURCE=prometheus (labs.E003).
TELEMETRY_PROMETHEUS_URL = envstr("TELEMETRY_PROMETHEUS_URL", "")
TELEMETRY_PROMETHEUS_NODE_LABELS = envlist(
    "TELEMETRY_PROMETHEUS_NODE_LABELS", ["Hostname", "kubernetes_node", "node", "instance"]
)
TELEMETRY_SCRAPE_TIMEOUT_MS = envint("TELEMETRY_SCRAPE_TIMEOUT_MS", 800, minimum=50)
TELEMETRY_SIMULATOR_FAULTS = envlist("TELEMETRY_SIMULATOR_FAULTS", [])  # e.g. gpu07:temp,gpu13:xid
TELEMETRY_TEMP_ALERT_C = envint("TELEMETRY_TEMP_ALERT_C", 87, minimum=40, maximum=130)
TELEMETRY_TEMP_ALERT_AFTER_S = envint("TELEMETRY_TEMP_ALERT_AFTER_S", 10, minimum=0)
# Xid codes that are usually the application's doing, not the GPU's: no alert.
TELEMETRY_XID_IGNORED = envintlist("TELEMETRY_XID_IGNORED", ["13", "31", "43", "45"], what="Xid numbers")
# Updates waiting for one slow WebSocket client before it gets a fresh snapshot instead of the backlog.
TELEMETRY_CLIENT_QUEUE = envint("TELEMETRY_CLIENT_QUEUE", 30, minimum=2)
TELEMETRY_VIEWER_REFRESH_S = envint("TELEMETRY_VIEWER_REFRESH_S", 300, minimum=5)
# A client's {"type": "resync"} gets a snapshot at most once per this many seconds per connection (0: every time);
# one asked for sooner comes in place of the first update after the interval, however many were asked meanwhile.
TELEMETRY_RESYNC_MIN_S = envint("TELEMETRY_RESYNC_MIN_S", 5, minimum=0, maximum=3600)
TELEMETRY_AGENT_MAX_GPUS = envint("TELEMETRY_AGENT_MAX_GPUS", 16, minimum=1)
