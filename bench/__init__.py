"""The benchmarks and their loopback plumbing, apart from the product (no product module imports this package).

- management/commands/  bench_scheduler, replay_trace, bench_class_start, bench_fanout, bench_portal
- kit.py        free ports, throwaway databases and secrets, servers that must answer, stopping what was started
- scheduler.py  the scheduling pass on a synthetic queue (bench_scheduler)
- simulate.py, traces.py  replaying real GPU-cluster traces through the queue policy (replay_trace)
- ws_client.py  the WebSocket clients of bench_fanout and bench_portal (no Django)
- load.py       bench_portal's HTTP clients (students, submitters, teachers)
- ledger.py     bench_portal's ledger check
"""
