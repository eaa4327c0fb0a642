"""The import graph of accounts/, labs/, jobs/, portal/ and bench/, read with `ast` (nothing is imported), and the
rules it must keep.

The graph: one node per module (`labs/models/__init__.py` is `labs.models`); one edge per import statement found
anywhere in the module, at module level, inside functions and methods, under `if TYPE_CHECKING:` too. `import a.b`
and `from a import b` point at the most specific module they name: `from labs import ledger` points at
`labs.ledger` when that is a module, and at the package `labs` (its `__init__`'s public names) when it is a name
defined there. The parent packages Python runs on the way are not edges (a package's `__init__` re-exporting its
modules, which import each other by their full names, is not a cycle). Relative imports are resolved against the
importing module's package. Imports of anything outside those folders (Django, the standard library,
tests) are left out, and so are dotted strings (Celery task names, `settings.INSTALLED_APPS`, mock targets): they
are not imports.

a. Layers (floors), bottom to top, one top-level folder each: `accounts` (people, with the shared helpers `errors`,
   `dates`, `env`, `addresses` — the client's address —, `csvsafe` — spreadsheet-safe CSV cells — and `prepared` —
   queries compiled once) <- `labs` <-
   `jobs` <- `portal`, the SHELL that composes them (settings, urls, asgi, routing, celery, wsgi, web, api, ops,
   oauth, ws_auth) <- `bench` (the benchmarks, which nothing imports). A module imports only modules of its own
   floor or below.

b. Capabilities: `accounts`; `labs` (the core: inventory, ledger, placement, reconciler, image rules, and
   every labs module outside the three folders below); `labs.reservations`, `labs.notebooks`, `labs.telemetry`
   (each a package and everything inside it); `jobs`. A module of one capability imports a module of ANOTHER
   capability only when that module is one of the other's entry points, listed in ENTRY_POINTS: its package
   (`__init__`, for the public names it re-exports), its `models`, `selectors` and `services` (a module, or a
   package and its topic modules), and the few core modules named there that every capability builds on. Inside a
   capability anything goes. `accounts.errors`, `accounts.dates` and `accounts.env` are shared helpers, open to all.
   A capability's models live in its app's models package (MODEL_HOMES: `labs.models.notebooks` is the notebooks').
   An app's wiring modules, which Django and Celery find by name at the app's root (APP_WIRING: `apps`, `admin`,
   `management`, `tasks`), may import any module of their own app; towards other apps they keep to entry points.
   The shell composes capabilities (urls, routing, the Celery app, the dashboards, ops): rule (b) does not bind it;
   rule (a) keeps capabilities from reaching up into it.

c. No cycles: no module reaches itself through its imports; each cycle is reported as a path a -> b -> a.

d. No module of those folders outside migrations is longer than MAX_LINES, except LONG_MODULE_EXCEPTIONS
   (declarations, not logic), and every exception is still there and still long.

e. The settings (the `portal.settings` package) import no app code: only the shared env helpers and each other
   (SETTINGS_MAY_IMPORT); the checks of values that are wrong together live in the apps (`<app>/checks.py`).

f. The checker itself is tested on synthetic module maps and on a fake package written to tmp_path.
"""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("accounts", "labs", "jobs", "portal", "bench")
MAX_LINES = 400

# d. Files allowed past MAX_LINES, with why. Only data (declarations) or tests; product logic never. None today: the
# settings, the last one, are a package of small modules (portal/settings/).
LONG_MODULE_EXCEPTIONS: dict[str, str] = {}

BASE, LABS, JOBS, SHELL, BENCH = 0, 1, 2, 3, 4
LAYER_NAMES = {BASE: "accounts", LABS: "labs", JOBS: "jobs", SHELL: "the shell", BENCH: "bench"}
BASE_MODULES = ("accounts",)
SHARED_HELPERS = (
    "accounts.errors",
    "accounts.dates",
    "accounts.env",
    "accounts.addresses",
    "accounts.csvsafe",
    "accounts.prepared",
)

# b. Capabilities, most specific first, and the modules each lets other capabilities import. An entry names a module
# and, when it is a package, the modules inside it (`labs.models` covers `labs.models.nodes`), except the capability's
# own root package, which stands for its `__init__` only.
CAPABILITIES = (
    "labs.reservations",
    "labs.notebooks",
    "labs.telemetry",
    "labs.budgets",
    "labs.usage",
    "labs.maintenance",
    "accounts.notify",
    "labs.coursework",
    "accounts",
    "labs",
    "jobs",
)
# The models of a capability live in its app's models package (one app, one set of migrations), one module per topic.
MODEL_HOMES = {
    "labs.models.reservations": "labs.reservations",
    "labs.models.notebooks": "labs.notebooks",
    "labs.models.telemetry": "labs.telemetry",
    "labs.models.budgets": "labs.budgets",
    "labs.models.usage": "labs.usage",
    "labs.models.maintenance": "labs.maintenance",
    "accounts.models.notify": "accounts.notify",
    "labs.models.coursework": "labs.coursework",
}
ENTRY_POINTS = {
    "accounts": (
        "accounts",
        "accounts.models",
        "accounts.selectors",
        "accounts.quotas",  # the quota rule: the limits that apply to a person (or many at once), and their sources
        "accounts.services",
        "accounts.permissions",  # the role checks and their refusals, for every capability's selectors and API
        "accounts.ratelimit",  # the one rate limiter services call before a write
        "accounts.credentials",  # what open streams (the GPU WebSocket, followed logs) look at again
        "accounts.timefmt",  # the one rule for time: the lab's zone, one format per kind, the person's language
        "accounts.locale",  # a person's language (e-mails and notices speak it) and numbers as it writes them
        "accounts.audit",  # the audit trail's one writer: every capability's services record their changes there
        "accounts.audit_admin",  # the admin console's save/delete hooks that record its edits
        "accounts.audit_selectors",  # who reads which entries, the filters, the CSV
        "accounts.more_requests",  # requests for more: ask, decide, expire
        "accounts.more_requests_selectors",  # the overrides in force, for the quota and budget checks
    ),
    # Telling people: notify() and the channel names (its package), the choices (services, selectors).
    "accounts.notify": (
        "accounts.notify",
        "accounts.notify.selectors",
        "accounts.notify.services",
        "accounts.models.notify",
    ),
    "labs": (
        "labs",
        "labs.models",  # every model of the app, re-exported
        "labs.selectors",
        "labs.services",
        # The core every capability builds on:
        "labs.inventory",  # nodes, their GPUs and what a GPU is
        "labs.ledger",  # the allocation ledger: every capability opens and closes its GPU time there
        "labs.placement",  # which GPUs are free, and who may use a reservation's nodes
        "labs.images",  # the image allow-list jobs and notebook profiles share
        "labs.signals",  # what the lab announces (allocations ended) for the capabilities that run work to act on
        "labs.reconcile",  # the reconciler: capabilities register their steps with it
        "labs.ledger_check",  # the reconciler's judge of ledger holders: capabilities register their holder kinds
        "labs.backends.kube",  # the one Kubernetes API client and its error mapping
    ),
    "labs.reservations": (
        "labs.reservations",
        "labs.reservations.selectors",
        "labs.reservations.services",
        "labs.models.reservations",
    ),
    "labs.notebooks": (
        "labs.notebooks",
        "labs.notebooks.selectors",
        "labs.notebooks.services",
        "labs.notebooks.volumes",  # where capabilities register what notebooks mount (datasets: jobs/apps.py)
        "labs.models.notebooks",
    ),
    "labs.telemetry": (
        "labs.telemetry",
        "labs.telemetry.selectors",
        "labs.telemetry.services",
        "labs.models.telemetry",
    ),
    "labs.budgets": (
        "labs.budgets",
        "labs.budgets.selectors",
        "labs.budgets.services",  # the guard notebooks and jobs call before they queue
        "labs.models.budgets",
    ),
    "labs.maintenance": (
        "labs.maintenance",
        "labs.maintenance.selectors",  # the windows placement and bookings keep out of
        "labs.maintenance.services",
        "labs.models.maintenance",
    ),
    "labs.usage": (
        "labs.usage",
        "labs.usage.selectors",
        "labs.usage.waits",  # where capabilities that queue work register their queue waits (jobs/apps.py)
        "labs.usage.storage",  # where capabilities that store files register what they hold (jobs/apps.py)
        "labs.usage.daysums",  # the day sums beside the ledger: the ledger's close adds to them, its check compares
        "labs.models.usage",
    ),
    "labs.coursework": (
        "labs.coursework",
        "labs.coursework.selectors",
        "labs.coursework.services",  # the notebook pass hands course work out before a server starts
        "labs.models.coursework",
    ),
    "jobs": ("jobs", "jobs.models", "jobs.selectors", "jobs.services"),
}
# Modules Django and Celery look up by name at an app's root (its AppConfig, the admin site's registrations, the
# management commands, the tasks Celery autodiscovers): they wire up every capability of their app, so inside their
# own app they may import any module; towards other apps they keep to the entry points.
APP_WIRING = ("apps", "admin", "management", "tasks")
APPS = ("accounts", "labs", "jobs")

# e. What the settings package's modules may import: the typed env helpers, and one another.
SETTINGS = "portal.settings"
SETTINGS_MAY_IMPORT = ("accounts.env", SETTINGS)


# --- The checker ----------------------------------------------------------------------------------------------------


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def discover(root: Path, packages=PACKAGES) -> dict[str, Path]:
    """Module name -> file, for every .py under the packages (migrations included: they import too)."""
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imports_of(name: str, source: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of `known` that `source` (module `name`) imports, anywhere in it."""
    package = name if is_package else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            candidates = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for candidate in candidates:
            # A name that is no module of ours (a third-party module, or a class of `from x import Class`) counts as
            # the nearest enclosing module of ours, if there is one.
            while candidate and candidate not in known:
                candidate = candidate.rpartition(".")[0]
            if candidate and candidate != name:
                targets.add(candidate)
    return targets


def build_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """`sources`: module name -> (its source, whether it is a package's __init__)."""
    known = set(sources)
    return {name: imports_of(name, source, is_package, known) for name, (source, is_package) in sources.items()}


def read_sources(root: Path, packages=PACKAGES) -> dict[str, tuple[str, bool]]:
    return {
        name: (path.read_text(encoding="utf-8"), path.name == "__init__.py")
        for name, path in discover(root, packages).items()
    }


def layer_of(module: str) -> int:
    if any(_within(module, base) for base in BASE_MODULES):
        return BASE
    if _within(module, "labs"):
        return LABS
    if _within(module, "jobs"):
        return JOBS
    if _within(module, "bench"):
        return BENCH
    return SHELL


def capability_of(module: str) -> str | None:
    """The capability a module belongs to; None for the shell and the shared helpers."""
    if any(_within(module, helper) for helper in SHARED_HELPERS):
        return None
    for models, capability in MODEL_HOMES.items():
        if _within(module, models):
            return capability
    return next((cap for cap in CAPABILITIES if _within(module, cap)), None)


def app_of(module: str) -> str | None:
    return next((app for app in APPS if _within(module, app)), None)


def is_wiring(module: str) -> bool:
    app = app_of(module)
    return app is not None and any(_within(module, f"{app}.{name}") for name in APP_WIRING)


def is_entry_point(module: str, capability: str) -> bool:
    return any(
        module == entry or (entry != capability and module.startswith(entry + "."))
        for entry in ENTRY_POINTS[capability]
    )


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{source} ({LAYER_NAMES[layer_of(source)]}) imports {target} ({LAYER_NAMES[layer_of(target)]})"
        for source, targets in graph.items()
        for target in targets
        if layer_of(target) > layer_of(source)
    )


def capability_violations(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for source, targets in graph.items():
        mine = capability_of(source)
        if mine is None:
            continue
        for target in targets:
            theirs = capability_of(target)
            if theirs is None or theirs == mine or is_entry_point(target, theirs):
                continue
            if is_wiring(source) and app_of(target) == app_of(source):
                continue
            found.append(f"{source} ({mine}) imports {target}, an internal module of {theirs}")
    return sorted(found)


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (the graph has hundreds of modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def _shortest_cycle_through(graph: dict[str, set[str]], start: str, members: set[str]) -> list[str]:
    previous = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph.get(node, ())):
            if child == start:
                path = [node]
                while previous[path[-1]] is not None:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if child in members and child not in previous:
                previous[child] = node
                queue.append(child)
    raise AssertionError(f"{start} is in a strongly connected component but on no cycle")


def find_cycles(graph: dict[str, set[str]]) -> list[str]:
    """Every module that is on a cycle gets its shortest cycle reported, as "a -> b -> a"; duplicates dropped."""
    cycles = set()
    for component in _strongly_connected(graph):
        if len(component) < 2:
            continue
        members = set(component)
        for module in component:
            path = _shortest_cycle_through(graph, module, members)[:-1]
            first = path.index(min(path))  # one rotation per cycle, whichever module it was found from
            path = path[first:] + path[:first]
            cycles.add(" -> ".join([*path, path[0]]))
    return sorted(cycles)


def settings_violations(graph: dict[str, set[str]]) -> list[str]:
    """Imports of app code (anything of ours but the env helpers) by a module of the settings package."""
    found = []
    for module, targets in graph.items():
        if not _within(module, SETTINGS):
            continue
        for target in sorted(targets):
            if not any(_within(target, allowed) for allowed in SETTINGS_MAY_IMPORT):
                found.append(f"{module} (the settings) imports {target}")
    return sorted(found)


def stale_long_module_exceptions(root: Path, limit=MAX_LINES, exceptions=LONG_MODULE_EXCEPTIONS) -> list[str]:
    """Exceptions that are no longer needed (the file is gone, or no longer long): they go from the list."""
    found = []
    for relative in exceptions:
        path = root / relative
        if not path.is_file():
            found.append(f"{relative}: not there")
        elif len(path.read_text(encoding="utf-8").splitlines()) <= limit:
            found.append(f"{relative}: no longer long")
    return sorted(found)


def long_modules(root: Path, packages=PACKAGES, limit=MAX_LINES, exceptions=LONG_MODULE_EXCEPTIONS) -> list[str]:
    found = []
    for path in discover(root, packages).values():
        relative = path.relative_to(root).as_posix()
        if "migrations" in path.relative_to(root).parts or relative in exceptions:
            continue
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append(f"{relative}: {lines} lines")
    return sorted(found)


# --- The rules, on the real code ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph():
    return build_graph(read_sources(ROOT))


def test_the_graph_reads_every_module(graph):
    # Guards the checker against reading nothing: the apps, their models and a function-level import are all seen.
    assert {"portal.settings", "labs.models", "labs.models.nodes", "jobs.models", "accounts.models"} <= set(graph)
    assert {"labs.models", "accounts.selectors"} <= graph["jobs.selectors"]
    assert {"labs.metrics", "jobs.metrics"} <= graph["portal.ops"]
    assert "portal.ops" in graph["portal.web.apps"]  # imported inside ready()


def test_layers_import_only_downwards(graph):
    assert layer_violations(graph) == []


def test_capabilities_use_each_other_only_through_their_entry_points(graph):
    assert capability_violations(graph) == []


def test_no_import_cycles(graph):
    assert find_cycles(graph) == []


def test_no_module_is_longer_than_the_limit():
    assert long_modules(ROOT) == []


def test_the_long_module_exceptions_are_still_long_and_still_there():
    # An exception that is no longer needed goes: the list stays the short list of what is really long.
    assert stale_long_module_exceptions(ROOT) == []


def test_the_settings_import_no_app_code(graph):
    assert {"portal.settings.base", "portal.settings.workers"} <= set(graph)  # the package is read
    assert settings_violations(graph) == []


# --- f. The checker, shown failing ---------------------------------------------------------------------------------


def _graph_of(**modules: str) -> dict[str, set[str]]:
    """Synthetic modules by name (dots as double underscores); a name ending in __init is a package."""
    sources = {}
    for key, source in modules.items():
        name = key.replace("__", ".")
        is_package = name.endswith(".init")
        sources[name.removesuffix(".init")] = (source, is_package)
    return build_graph(sources)


def test_the_checker_reports_a_base_module_importing_labs():
    graph = _graph_of(
        accounts__init="",
        accounts__x="def later():\n    from labs.models import Node\n",
        labs__init="",
        labs__models="",
    )
    assert layer_violations(graph) == ["accounts.x (accounts) imports labs.models (labs)"]


def test_the_checker_reports_labs_importing_jobs_and_jobs_importing_the_shell():
    graph = _graph_of(
        labs__init="",
        labs__ledger="import jobs.models",
        jobs__init="",
        jobs__models="",
        jobs__tasks="from portal import ops",
        portal__init="",
        portal__ops="from labs import ledger\nfrom jobs.models import Job",
    )
    assert layer_violations(graph) == [
        "jobs.tasks (jobs) imports portal.ops (the shell)",
        "labs.ledger (labs) imports jobs.models (jobs)",
    ]


def test_the_checker_resolves_relative_imports_and_submodules_named_in_from_imports():
    graph = _graph_of(
        labs__init="",
        labs__notebooks__init="from .hub import client",
        labs__notebooks__hub="",
        labs__notebooks__services="from . import hub\nfrom ..models import Node\nfrom labs.notebooks import thing",
        labs__models="",
    )
    assert graph["labs.notebooks"] == {"labs.notebooks.hub"}
    assert graph["labs.notebooks.services"] == {"labs.notebooks.hub", "labs.models", "labs.notebooks"}


def test_the_checker_reports_a_capability_reaching_into_another_ones_internals():
    graph = _graph_of(
        labs__init="",
        labs__notebooks__init="",
        labs__notebooks__hub="",
        labs__notebooks__services="",
        labs__telemetry__init="",
        labs__telemetry__collector="",
        labs__ledger="from labs.notebooks import services",  # an entry point: fine
        jobs__init="",
        jobs__services__init="",
        jobs__services__dispatch="from labs.notebooks.hub import x\nfrom labs.ledger import open_allocation",
        jobs__api="import labs.telemetry.collector\nfrom labs import telemetry",
    )
    assert capability_violations(graph) == [
        "jobs.api (jobs) imports labs.telemetry.collector, an internal module of labs.telemetry",
        "jobs.services.dispatch (jobs) imports labs.notebooks.hub, an internal module of labs.notebooks",
    ]


def test_the_checker_lets_an_apps_wiring_and_a_capabilitys_models_in_but_no_further():
    graph = _graph_of(
        labs__init="",
        labs__admin="from labs.telemetry import health",  # the app's admin registers every capability's models
        labs__models__init="from labs.models.notebooks import NotebookProfile",
        labs__models__notebooks="def clean():\n    from labs.notebooks.ceilings import problems\n",
        labs__notebooks__init="",
        labs__notebooks__ceilings="",
        labs__telemetry__init="",
        labs__telemetry__health="from labs.models.notebooks import NotebookProfile",
        jobs__init="",
        jobs__admin="from labs.telemetry import health",
    )
    assert capability_violations(graph) == [
        "jobs.admin (jobs) imports labs.telemetry.health, an internal module of labs.telemetry",
    ]


def test_the_checker_reports_each_cycle_as_a_path():
    graph = _graph_of(
        jobs__init="",
        jobs__policy__init="",
        jobs__policy__model="def sentence():\n    from jobs.policy.reasons import words\n",
        jobs__policy__reasons="from jobs.policy.model import Waiting",
        jobs__a="import jobs.b",
        jobs__b="import jobs.c",
        jobs__c="import jobs.a\nimport jobs.policy",
    )
    assert find_cycles(graph) == [
        "jobs.a -> jobs.b -> jobs.c -> jobs.a",
        "jobs.policy.model -> jobs.policy.reasons -> jobs.policy.model",
    ]


def test_the_checker_reads_a_fake_package_on_disk_and_counts_its_lines(tmp_path):
    (tmp_path / "accounts").mkdir(parents=True)
    (tmp_path / "accounts" / "__init__.py").write_text("")
    (tmp_path / "accounts" / "models.py").write_text("from jobs import models\n" + "x = 1\n" * 401)
    (tmp_path / "jobs" / "migrations").mkdir(parents=True)
    (tmp_path / "jobs" / "__init__.py").write_text("")
    (tmp_path / "jobs" / "models.py").write_text("from accounts.models import User\n")
    (tmp_path / "jobs" / "migrations" / "0001_initial.py").write_text("x = 1\n" * 999)
    graph = build_graph(read_sources(tmp_path, ("accounts", "jobs")))
    assert layer_violations(graph) == ["accounts.models (accounts) imports jobs.models (jobs)"]
    assert find_cycles(graph) == ["accounts.models -> jobs.models -> accounts.models"]
    assert long_modules(tmp_path, ("accounts", "jobs"), exceptions={}) == ["accounts/models.py: 402 lines"]
    # An exception lets a long file through, and is reported once it is short again or gone.
    exceptions = {"accounts/models.py": "declarations", "jobs/models.py": "declarations", "jobs/gone.py": "gone"}
    assert long_modules(tmp_path, ("accounts", "jobs"), exceptions=exceptions) == []
    assert stale_long_module_exceptions(tmp_path, exceptions=exceptions) == [
        "jobs/gone.py: not there",
        "jobs/models.py: no longer long",
    ]
    assert stale_long_module_exceptions(tmp_path, exceptions={"accounts/models.py": "declarations"}) == []


def test_the_checker_reports_settings_that_import_app_code():
    graph = _graph_of(
        accounts__init="",
        accounts__env="",
        labs__init="",
        labs__budgets__init="",
        labs__budgets__validation="",
        portal__init="",
        portal__oauth__init="",
        portal__oauth__keys="",
        portal__settings__init="from portal.settings.base import *\nfrom portal.settings.usage import *",
        portal__settings__base="from accounts.env import envstr\nfrom portal.oauth.keys import key",
        portal__settings__usage="from portal.settings.base import DEBUG\n"
        "def later():\n    from labs.budgets.validation import parse\n",
    )
    assert settings_violations(graph) == [
        "portal.settings.base (the settings) imports portal.oauth.keys",
        "portal.settings.usage (the settings) imports labs.budgets.validation",
    ]
