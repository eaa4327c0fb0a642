"""manage.py run_hub: outside DEBUG it runs students' notebooks on this machine only in a declared one-machine lab."""

import pytest
from django.core.management import CommandError, call_command

from tests.test_layers import ROOT, build_graph, read_sources

# labs/notebooks/localhub.py is harness: the run command's hub and the class-start benchmark use it, the product not.
LOCAL_HUB_USERS = {
    "labs.management.commands.run_hub",
    "bench.management.commands.bench_class_start",
    "bench.management.commands.bench_portal",
}


def test_outside_debug_the_local_spawner_needs_a_single_machine_lab(settings):
    settings.DEBUG = False
    settings.SINGLE_MACHINE_LAB = False
    with pytest.raises(CommandError, match="SINGLE_MACHINE_LAB=true"):
        call_command("run_hub", "--spawner", "local", "--timeout", "0.01")  # no hub would come up in time


def test_only_the_run_command_and_the_benchmarks_import_the_local_hub():
    graph = build_graph(read_sources(ROOT))
    users = {module for module, targets in graph.items() if "labs.notebooks.localhub" in targets}
    assert users == LOCAL_HUB_USERS
    assert {t for t in graph["labs.notebooks.localhub"] if t.startswith(("portal", "labs", "jobs"))} == set()
