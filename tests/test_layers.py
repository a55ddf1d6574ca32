"""Imports point down the layer order of DESIGN.md: the package-root helpers (the leaves first:
errors, atomic, sortedkeys, timing, allocator, host_memory; then splits, tables, config and cpu_load, which use them; the catalog above config), data, distributed, graph,
models, tasks, then the stages in pipeline order (analysis, cost, schedule, train), the chooser above
training (choose), report, the API that sequences stages and plans a config's runs (api), and the CLI.

A stage reads another stage's files, not its internals: a later stage may use an earlier stage's
reader of its files (the schedule stage loads the profile stage's predictor), never the reverse.
Every import counts, also one inside a function, and one made through ``importlib.import_module``
(a module named by a string): a name computed at run time is allowed only where :data:`DYNAMIC` says why."""

from __future__ import annotations

import ast
from pathlib import Path

import dynagnn

from tests.testing.source import parse

SRC = Path(dynagnn.__file__).parent

# Lowest first. A module may import from its own package and from any package of a lower layer.
LAYERS = [
    {"__init__", "errors", "atomic", "sortedkeys", "timing", "allocator", "host_memory"},
    {"splits", "tables", "config", "versioned", "cpu_load"},
    {"catalog"},
    {"data"},
    {"distributed"},
    {"graph"},
    {"models"},
    {"tasks"},
    {"analysis"},
    {"cost"},
    {"schedule"},
    {"train"},
    {"choose"},
    {"report"},
    {"api"},
    {"cli"},
    {"__main__"},
]
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}

# Imports allowed to point up, each with why: (module, the unit it imports) -> reason.
UPWARD = {
    # `import dynagnn; dynagnn.fit(...)`: the root package re-exports the Python API (fit, ingest, open_store,
    # from_pyg, FitResult) by a PEP 562 __getattr__ that imports dynagnn.api on first use, so `import dynagnn`
    # itself stays below every layer (no torch) while the API's names live at the top
    ("__init__.py", "api"): "the root package's lazy re-export of the Python API",
}


# Modules that import a module whose name is computed at run time, each with why: the rule above cannot
# see where such an import points, so each is one that cannot point up.
DYNAMIC = {
    "models/registry.py": "a user's model class, package.module:Class (never dynagnn's own)",
    "data/sources/safe_pickle.py": "the classes a pickle of plain data may name (numpy's, never dynagnn's)",
    "api/__init__.py": "its own modules, each loaded on first use (the same package)",
    "train/strategies/__init__.py": "a strategy's module, named by the catalog, loaded where its class is asked for",
}


def _import_module_calls(tree):
    """Each ``importlib.import_module(...)`` (or ``import_module(...)``) call: (line, its first argument)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name == "import_module":
                yield node.lineno, node.args[0]


def _unit(parts: list[str]) -> str:
    """The layer unit of module ``dynagnn.<parts>``: its sub-package, or the root module's name."""
    return parts[0] if parts else "__init__"


def _imports(path: Path, text: str | None = None):
    rel = path.relative_to(SRC).with_suffix("").parts
    package = list(rel[:-1]) if rel[-1] != "__init__" else list(rel[:-1])
    tree = parse(path.read_text() if text is None else text, str(path))
    for line, arg in _import_module_calls(tree):   # importlib's imports, where the name is written out
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and arg.value.split(".")[0] == "dynagnn":
            yield line, arg.value.split(".")[1:] or ["__init__"]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = base + (node.module.split(".") if node.module else [])
                if not target and not node.module:  # from . import x (at the package root)
                    target = [node.names[0].name]
            elif node.module and node.module.split(".")[0] == "dynagnn":
                target = node.module.split(".")[1:]
                if not target:
                    target = [node.names[0].name]
            else:
                continue
            yield node.lineno, target
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "dynagnn":
                    yield node.lineno, a.name.split(".")[1:]


def test_every_import_by_name_is_written_out():
    """``importlib.import_module`` of a name computed at run time hides where it points: only the
    modules of :data:`DYNAMIC` may make one, and each of them does."""
    bad, used = [], set()
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        for line, arg in _import_module_calls(parse(path.read_text(), str(path))):
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                used.add(rel)
                if rel not in DYNAMIC:
                    bad.append(f"{rel}:{line}: import_module of a computed name")
    assert not bad, "imports the layer rule cannot see:\n" + "\n".join(bad)
    assert set(DYNAMIC) <= used, f"DYNAMIC entries no module needs any more: {sorted(set(DYNAMIC) - used)}"


def test_the_rule_sees_an_import_made_by_name():
    """The config module once reached up into train/ through ``importlib.import_module("dynagnn.train...")``,
    a circle its import statements did not show: such an import is one the rule counts, and points up."""
    text = 'import importlib\n\ndef f():\n    return importlib.import_module("dynagnn.train.run_config")\n'
    found = list(_imports(SRC / "config.py", text))
    assert found == [(4, ["train", "run_config"])]
    assert RANK[_unit(found[0][1])] > RANK["config"]


def test_every_module_is_in_a_layer():
    units = {p.stem if p.parent == SRC else p.relative_to(SRC).parts[0] for p in SRC.rglob("*.py")}
    assert not units - set(RANK), f"put these in a layer of {__file__}: {sorted(units - set(RANK))}"


def test_the_upward_exceptions_are_used():
    """Each exception of :data:`UPWARD` is an import that exists (a stale one would hide a new one)."""
    found = {(str(p.relative_to(SRC)), _unit(t)) for p in SRC.rglob("*.py") for _, t in _imports(p)}
    assert set(UPWARD) <= found, f"exceptions no import uses any more: {sorted(set(UPWARD) - found)}"


def test_imports_point_down():
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("").parts
        here = _unit(list(rel)) if len(rel) > 1 else rel[0]
        for line, target in _imports(path):
            there = _unit(target)
            if there == "__version__":
                there = "__init__"
            if (str(path.relative_to(SRC)), there) in UPWARD:
                continue
            if there != here and RANK.get(there, -1) >= RANK.get(here, -1):
                bad.append(f"{path.relative_to(SRC.parent)}:{line}: {here} imports {'.'.join(target)} "
                           f"({there} is not below {here})")
    assert not bad, "imports that point up or sideways:\n" + "\n".join(bad)


# The stage rule: a stage (analysis, cost, schedule, train, report) may import from another stage only the
# modules that stage offers: the readers of its files (the plan, the predictor) and the algorithms it
# shares (the tuner, the balance, the operator order); never its entry point (``stage.py``), never a
# private name. Sequencing stages (a plan made at start) is the API's job, above them all.
STAGES = {"analysis", "cost", "schedule", "train", "report"}
OFFERED = {
    # the predictor and its channel costs; each model's operator calls; a model's steps timed (the chooser
    # predicts from them, as a plan at start does for a model with no operator list)
    "cost": {"predictor", "link", "models", "step_times"},
    "schedule": {"plan", "tuner", "balance", "topology", "measured"},
    "analysis": {"commvolume"},   # the closed-form communication volumes (the chooser's prediction)
    "train": set(),
    "report": set(),
}


def _names(path: Path):
    for node in ast.walk(parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            yield node.lineno, [a.name for a in node.names]


def test_a_stage_uses_only_what_another_stage_offers():
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("").parts
        here = rel[0] if len(rel) > 1 else rel[0]
        if here not in STAGES:
            continue
        names = dict(_names(path))
        for line, target in _imports(path):
            there = _unit(target)
            if there == here or there not in STAGES:
                continue
            module = target[1] if len(target) > 1 else None
            private = [n for n in names.get(line, []) if n.startswith("_")]
            if module not in OFFERED[there] or private:
                bad.append(f"{path.relative_to(SRC.parent)}:{line}: {here} imports {'.'.join(target)}"
                           f"{' ' + ', '.join(private) if private else ''} (the {there} stage offers "
                           f"{', '.join(sorted(OFFERED[there])) or 'nothing'})")
    assert not bad, "a stage reaching into another's entry point or internals:\n" + "\n".join(bad)


def test_no_private_name_crosses_packages():
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("").parts
        here = rel[0] if len(rel) > 1 else rel[0]
        names = dict(_names(path))
        for line, target in _imports(path):
            if _unit(target) != here and any(n.startswith("_") and n != "__version__" for n in names.get(line, [])):
                bad.append(f"{path.relative_to(SRC.parent)}:{line}: {', '.join(names[line])} from {'.'.join(target)}")
    assert not bad, "private names imported from another package:\n" + "\n".join(bad)


#: the most lines a module of src/ may have: past it, a module holds more than one job (issue 54)
MAX_LINES = 550


def test_no_module_is_over_the_line_limit():
    over = {str(p.relative_to(SRC)): n for p in SRC.rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines (split them by responsibility): {over}"


def test_the_chooser_is_told_apart_by_name_in_two_places():
    """A run that names auto is routed once for the library (``request_of``) and once for the workflow
    (``workflow_family``); everything else asks what they answer, and no strategy is called auto."""
    import re

    from dynagnn.train.strategies import STRATEGIES

    root = SRC.parents[1]
    tests = re.compile(r"[!=]=\s*(AUTO\b|[\"']auto[\"'])\s*(?:$|:|\))|(AUTO|[\"']auto[\"'])\s*[!=]=\s*(strategy|keys)")
    files = [*SRC.rglob("*.py"), *(root / "rules").glob("*.smk"), root / "Snakefile"]
    sites = [f"{p.relative_to(root)}:{i}" for p in files for i, line in enumerate(p.read_text().splitlines(), 1)
             if tests.search(line) and "strategy" in line]
    assert sorted(s.split(":")[0] for s in sites) == ["src/dynagnn/api/runs.py", "src/dynagnn/choose/request.py"], sites
    assert "auto" not in STRATEGIES


def test_test_modules_import_helpers_from_the_testing_package():
    """A test module's helpers come from ``tests/testing`` (or its own folder's ``common.py``), never from
    another test module or a conftest: a helper in a test module runs that module's imports and
    fixtures in every importer, and a conftest is pytest's, not an importable module."""
    tests = Path(__file__).resolve().parent
    wrong = []
    for path in sorted(tests.rglob("*.py")):
        for node in ast.walk(parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module:
                last = node.module.split(".")[-1]
                local = node.level > 0 or node.module.startswith("tests.")
                if local and (last.startswith("test_") or last == "conftest"):
                    wrong.append(f"{path.relative_to(tests)}:{node.lineno} from {'.' * node.level}{node.module}")
    assert wrong == [], wrong
