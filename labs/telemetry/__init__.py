"""Live GPU telemetry: where samples come from, how they are checked, joined to the ledger and streamed.

Other capabilities use it through selectors.py (reads) and services.py (writes) only.

- samples.py       the GpuSample and GpuTarget dataclasses, and the one check that drops absurd values
- exposition.py    a tolerant reader of the Prometheus text format
- dcgm.py          dcgm-exporter metrics (scraped text or Prometheus rows) to samples
- prometheus.py    a Prometheus server's query API (JSON) to samples
- simulator.py     forty RTX 4090s at work, for the run command, the demo and the tests
- nvml.py          reading NVML on a node (the gpu_agent command); nvidia-ml-py is imported lazily
- sources.py       the sources behind one interface, chosen by TELEMETRY_SOURCE
- http.py          the one HTTP client for scrapes, queries and pushes
- agents.py        node agents' keys (hashed): issue, revoke, check
- store.py         the latest state of every GPU (cache: Redis, or local memory embedded) and the agents' inbox
- holders.py       the GPUs to watch and who holds each one, read from the allocation ledger
- state.py         one GPU's record as the collector publishes it, and what changed since the last tick
- visibility.py    what each viewer may know of the holders (students, teachers, admins)
- collector.py     the loop: sample, check, join, diff, store, publish one message per tick
- history.py       one-minute buckets in the database, and their retention
- health.py        temperature and Xid alerts for the admin console
- fanout.py        one subscriber per server process that fans each tick out to its WebSocket consumers
- selectors.py     reads for the API, the pages (the grid, the core's node page) and /metrics
- services.py      writes: a node agent's push, checked once (samples.problem_with) before it is kept
- charts.py        the node page's last-hour charts as SVG
- api.py           GET /api/v1/gpus/ and the agents' POST /api/v1/agent/samples/ (thin)
- views.py         the live grid page, /lab/gpus/
- consumers.py     the /ws/gpus/ WebSocket consumer, fed by the process's fan-out
- urls.py          the page, API and WebSocket routes, included by portal/urls.py and portal/routing.py
"""
