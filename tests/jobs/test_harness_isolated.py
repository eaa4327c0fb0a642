"""The benchmark and replay harness (jobs.bench, jobs.simulate, jobs.traces) stays out of the product: only its
management commands and the harness itself import it (it moves out of the app in one go later)."""

from tests.test_layers import ROOT, build_graph, read_sources

HARNESS = {"jobs.bench", "jobs.simulate", "jobs.traces"}
HARNESS_COMMANDS = {"jobs.management.commands.bench_scheduler", "jobs.management.commands.replay_trace"}


def test_only_the_harness_and_its_commands_import_the_harness():
    graph = build_graph(read_sources(ROOT))
    assert set(graph) >= HARNESS | HARNESS_COMMANDS
    importers = {module for module, imports in graph.items() if imports & HARNESS}
    assert importers - HARNESS - HARNESS_COMMANDS == set()
    assert importers >= HARNESS_COMMANDS  # the check sees the imports it guards
