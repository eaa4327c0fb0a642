"""The benchmarks stay apart from the product: nothing outside bench imports it, and its commands are found."""

from django.core.management import get_commands

from tests.test_layers import ROOT, build_graph, read_sources

COMMANDS = {"bench_scheduler", "replay_trace", "bench_class_start", "bench_fanout", "bench_portal"}


def test_nothing_of_the_product_imports_the_benchmarks():
    graph = build_graph(read_sources(ROOT))
    bench = {module for module in graph if module == "bench" or module.startswith("bench.")}
    assert "bench.kit" in bench and "bench.simulate" in bench  # the check sees what it guards
    importers = {module for module, imports in graph.items() if imports & bench}
    assert importers - bench == set()
    assert "bench.kit" in graph["bench.management.commands.bench_fanout"]


def test_every_benchmark_command_lives_in_the_bench_app():
    commands = get_commands()
    assert {name: commands[name] for name in COMMANDS} == dict.fromkeys(COMMANDS, "bench")
