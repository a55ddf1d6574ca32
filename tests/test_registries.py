"""Each list of names has one source; where a static file must repeat it (the config schema, which
Snakemake validates against; the rules), these tests fail when the copy drifts from the source.

- models: ``dynagnn.models.MODELS`` (the train runs: ``ALL_MODELS``, with the event and sampled models);
- training keys and their defaults: the fields of ``dynagnn.train.run_config.TrainConfig``, of every
  registered strategy's ``Options`` and of the chooser's ``ChooserOptions`` (the schema file holds a copy of each option's schema);
- analyses and their settings: ``dynagnn.analysis.stage.ANALYSES`` and ``AnalysisOptions``.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from dynagnn.analysis.stage import ANALYSES, AnalysisOptions
from dynagnn.config import load_schema
from dynagnn.models import ALL_MODELS, MODELS
from tests.testing.fresh import fresh_python

ROOT = Path(__file__).resolve().parents[1]


def _model_enums(node, path="") -> dict[str, list]:
    """Every enum of the schema that lists models (holds 'tgcn'), by its path."""
    out = {}
    if isinstance(node, dict):
        if "tgcn" in (node.get("enum") or []):
            out[path] = node["enum"]
        for k, v in node.items():
            out.update(_model_enums(v, f"{path}.{k}"))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.update(_model_enums(v, f"{path}.{i}"))
    return out


def test_schema_lists_the_registered_models():
    enums = _model_enums(load_schema())
    assert enums, "the schema lists no models"
    for path, enum in enums.items():
        want, name = (ALL_MODELS, "ALL_MODELS") if ".train." in path else (MODELS, "MODELS")
        assert sorted(enum) == sorted(want), f"schema {path}: {enum} is not dynagnn.models.{name}"


def test_schema_train_section_is_trainconfig_and_the_strategies_options():
    """The schema file's train keys are TrainConfig's (defaults equal) and every registered strategy's
    options, each a copy of its Options field's schema (constraints, default and help)."""
    from dynagnn.choose.request import ChooserOptions
    from dynagnn.train.run_config import TrainConfig
    from dynagnn.train.strategies import STRATEGIES

    props = {k: v for k, v in load_schema()["properties"]["train"]["properties"].items() if k != "runs"}
    fields = {f.name: f.default for f in dataclasses.fields(TrainConfig) if f.name != "options"}
    options = {key: ChooserOptions.json_schema(key) for key in ChooserOptions.declared()}   # the chooser's own
    for name, cls in STRATEGIES.items():
        for key in cls.Options.declared():
            fragment = cls.Options.json_schema(key)
            assert options.setdefault(key, fragment) == fragment, f"{name} declares {key} unlike another strategy"
    assert not set(fields) & set(options), f"both shared and an option: {sorted(set(fields) & set(options))}"
    want = set(fields) | set(options)
    assert set(props) == want, (f"only in the schema's train section: {sorted(set(props) - want)}; "
                                f"only in TrainConfig or an Options: {sorted(want - set(props))}")
    from dynagnn.choose.request import DEFAULT_STRATEGY

    fields["strategy"] = DEFAULT_STRATEGY   # a config's run that names none: the chooser (TrainConfig's is a program's)
    for name, default in fields.items():
        assert props[name].get("default") == default, f"train.{name}: schema default {props[name].get('default')!r}, " \
                                                      f"TrainConfig's {default!r}"
    for key, fragment in options.items():
        assert props[key] == fragment, f"train.{key}: the schema file says {props[key]}, its Options field {fragment}"


def test_schema_analysis_defaults_are_analysisoptions():
    section = load_schema()["properties"]["analysis"]["properties"]
    flat = {k: v.get("default") for k, v in section.items() if v.get("type") != "object"}
    for sub in ("cache", "volume"):
        flat.update({f"{sub}_{k}": v.get("default") for k, v in section[sub]["properties"].items()})
    opts = dataclasses.asdict(AnalysisOptions())
    assert set(flat) == set(opts), f"schema analysis keys {sorted(set(flat) ^ set(opts))} differ from AnalysisOptions"
    for k, v in opts.items():
        assert flat[k] == (list(v) if isinstance(v, tuple) else v), f"analysis {k}: schema {flat[k]!r}, options {v!r}"


def test_rules_run_every_analysis():
    text = (ROOT / "rules" / "analyze.smk").read_text()
    parts = set()
    for m in re.finditer(r"--parts ([a-z ]+?)\s*\"", text):
        parts |= set(m.group(1).split())
    assert parts == set(ANALYSES), f"rules/analyze.smk runs {sorted(parts)}, dynagnn has {ANALYSES}"


def test_catalog_is_the_classes_facts():
    """schemas/catalog.json, what the commands that import no torch know of the strategies and models,
    is what the classes state (tools/write_catalog.py writes it anew)."""
    import json
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import write_catalog
    finally:
        sys.path.remove(str(ROOT / "tools"))
    built = write_catalog.build()
    stored = json.loads(write_catalog.CATALOG.read_text())
    assert list(stored["strategies"]) == list(built["strategies"]), "run python tools/write_catalog.py"
    for name, facts in built["strategies"].items():
        assert stored["strategies"][name] == facts, f"{name}: the catalog drifted; run python tools/write_catalog.py"
    assert stored["models"] == built["models"], "run python tools/write_catalog.py"


def test_catalog_option_schemas_are_the_classes():
    """An option's schema as the catalog answers it (the config schema's copy) is its class's."""
    from dynagnn import catalog
    from dynagnn.train.strategies import STRATEGIES

    for name in catalog.strategies():
        cls = STRATEGIES[name]
        for key in cls.Options.declared():
            assert catalog.option_schema(key) == cls.Options.json_schema(key), f"{name}.{key}"
        assert catalog.takers(next(iter(cls.settable()), "")) == sorted(
            n for n in catalog.strategies() if next(iter(cls.settable()), "") in STRATEGIES[n].settable())


def test_commands_that_only_read_import_no_torch():
    """The CLI's parse and --help, check-config and the workflow's run planning know the strategies and
    models from the catalog: a fresh interpreter running them never imports torch."""

    code = ("import sys, contextlib, io\n"
            "from dynagnn.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['check-config', {str(ROOT / 'config.yaml')!r}]) == 0\n"
            "    try:\n"
            "        main(['train', '--help'])\n"
            "    except SystemExit:\n"
            "        pass\n"
            "from dynagnn.api.runs import load_config, train_runs\n"
            f"runs = train_runs(load_config({str(ROOT / 'config.yaml')!r}))\n"
            "assert runs, 'the default config trains nothing'\n"
            "print(sorted(m for m in ('torch', 'pandas', 'matplotlib') if m in sys.modules))\n")
    out = fresh_python(code)
    assert out.strip().splitlines()[-1] == "[]", out


def test_a_plugin_model_path_whose_module_is_missing_is_refused_without_torch():
    """check-config finds a user's model module without importing it (nor torch): a misspelt one is one
    line; a built-in name or a findable module passes."""

    code = ("import sys\n"
            "from dynagnn.api.runs import validate\n"
            "from dynagnn.errors import ConfigError\n"
            "base = {'datasets': {'d': {'format': 'synthetic', 'generator': 'churn'}}}\n"
            "validate({**base, 'train': {'model': 'json:JSONDecoder'}})\n"
            "try:\n"
            "    validate({**base, 'train': {'model': 'no_such_pkg.cells:Cell'}})\n"
            "except ConfigError as e:\n"
            "    print('refused', 'module no_such_pkg.cells does not import' in str(e), 'torch' in sys.modules)\n")
    assert fresh_python(code).split() == ["refused", "True", "False"]


def test_registering_dropping_and_registering_again():
    """The registry is a mapping: a built-in strategy deleted stays deleted (also after a class was set
    under its name), and a plugin's options leave the schema with it, its new schema replacing the old."""
    import dataclasses

    from dynagnn import catalog
    from dynagnn.train.options import Options, option
    from dynagnn.train.strategies import STRATEGIES
    from dynagnn.train.strategies.sequential import Sequential

    def plugin(minimum):
        opts = dataclasses.make_dataclass("PluginOptions", [("alpha_knob", int, option(5, "a knob", type="integer",
                                                                                       minimum=minimum))],
                                          bases=(Options,), frozen=True)
        return type("Plugin", (Sequential,), {"name": "plugin_x", "Options": opts})

    vertex = STRATEGIES["vertex"]
    try:
        del STRATEGIES["vertex"]
        assert "vertex" not in STRATEGIES and "vertex" not in catalog.strategies()
        STRATEGIES["vertex"] = vertex
        del STRATEGIES["vertex"]
        assert "vertex" not in catalog.strategies()
    finally:
        STRATEGIES["vertex"] = vertex
    try:
        STRATEGIES["plugin_x"] = plugin(1)
        assert catalog.option_schema("alpha_knob")["minimum"] == 1
        del STRATEGIES["plugin_x"]
        assert catalog.option_schema("alpha_knob") is None
        STRATEGIES["plugin_x"] = plugin(0)
        assert catalog.option_schema("alpha_knob")["minimum"] == 0
    finally:
        STRATEGIES.pop("plugin_x", None)
    assert catalog.option_schema("alpha_knob") is None and "plugin_x" not in catalog.strategies()
