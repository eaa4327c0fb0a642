from django.apps import AppConfig


class BenchConfig(AppConfig):
    """Only its management commands: the benchmarks the README runs, each with a smoke run in tests/bench/."""

    name = "bench"
    label = "bench"
