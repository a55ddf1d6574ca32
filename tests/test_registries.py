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
