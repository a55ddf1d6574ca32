"""Loading and validating config.yaml against the JSON schema, with defaults filled in.

The schema is package data (``dynagnn/schemas/config.schema.yaml``); the workflow's
``workflow/schemas/config.schema.yaml`` is a link to it, so Snakemake and the library validate
against one file. Checks a schema cannot express (a time window needs a width) are in
:func:`check_dataset`.
"""

from __future__ import annotations

import copy
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .errors import ConfigError, did_you_mean


def load_schema() -> dict:
    return yaml.safe_load(resources.files("dynagnn").joinpath("schemas/config.schema.yaml").read_text())


def _with_defaults(cls):
    """A validator class that fills in the schema's defaults while it validates (jsonschema FAQ)."""
    validate_properties = cls.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for key, sub in properties.items():
                if "default" in sub and key not in instance:
                    instance[key] = copy.deepcopy(sub["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(cls, {"properties": set_defaults})


def _message(err: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = list(err.schema.get("properties", {}))
        unknown = [k for k in err.instance if k not in allowed]
        hints = [f"{k!r}{did_you_mean(k, allowed)}" for k in unknown]
        return f"config key {where}: unknown key {', '.join(hints)}; allowed: {', '.join(allowed)}"
    return f"config key {where}: {err.message}"


def validate(config: dict[str, Any]) -> dict[str, Any]:
    """Validate a config (a dict as read from YAML) and return a copy with the defaults filled in.

    Raises ConfigError naming the first offending key and what was expected.
    """
    schema = load_schema()
    cfg = copy.deepcopy(config) if config is not None else {}
    cls = _with_defaults(jsonschema.validators.validator_for(schema))
    errors = sorted(cls(schema).iter_errors(cfg), key=lambda e: list(e.absolute_path))
    if errors:
        raise ConfigError(_message(errors[0]))
    for name, spec in cfg["datasets"].items():
        check_dataset(name, spec)
    check_train(cfg, schema)
    for i, run in enumerate((cfg.get("schedule") or {}).get("runs") or []):
        _check_run_dataset(cfg, run, f"schedule.runs.{i}")
    return cfg


def _check_run_dataset(cfg: dict[str, Any], run: dict[str, Any], where: str) -> None:
    if run["dataset"] not in cfg["datasets"]:
        hint = did_you_mean(run["dataset"], cfg["datasets"])
        raise ConfigError(f"config key {where}.dataset: no dataset {run['dataset']!r}{hint}")


def check_train(cfg: dict[str, Any], schema: dict[str, Any]) -> None:
    """Each run names a dataset of the config, and its options are keys of the train section with
    values of the right type (checked without filling defaults: a run states only what differs)."""
    section = schema["properties"]["train"]
    option_schema = {"type": "object", "additionalProperties": False,
                     "properties": {k: v for k, v in section["properties"].items() if k != "runs"}}
    for i, run in enumerate(cfg.get("train", {}).get("runs", [])):
        where = f"train.runs.{i}"
        _check_run_dataset(cfg, run, where)
        errors = list(jsonschema.Draft202012Validator(option_schema).iter_errors(run.get("options", {})))
        if errors:
            err = errors[0]
            raise ConfigError(_message(err).replace("config key ", f"config key {where}.options.", 1)
                              .replace(f"{where}.options.(top level)", f"{where}.options"))


def train_runs(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Every (dataset, model, strategy, workers) the config trains, with its full options (section
    defaults overridden by the run's own)."""
    section = cfg.get("train", {})
    base = {k: v for k, v in section.items() if k != "runs"}
    out = []
    for run in section.get("runs", []):
        opts = {**base, **run.get("options", {})}
        for model in run.get("models") or [opts["model"]]:
            for strategy in run.get("strategies") or [opts["strategy"]]:
                for workers in run.get("workers") or [opts.get("workers", 1)]:
                    out.append({"dataset": run["dataset"], "model": model, "strategy": strategy,
                                "workers": int(workers),
                                "options": {**opts, "model": model, "strategy": strategy, "workers": int(workers)}})
    return out


def schedule_runs(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Every (dataset, model, workers) the schedule stage plans, with its window and hidden width.

    ``schedule.runs`` null (the default): each distinct (dataset, model) of :func:`train_runs`, with
    the window and hidden width of its first training run; else the listed pairs, whose window and
    hidden default to the train section's."""
    sched = cfg.get("schedule") or {}
    workers = sched.get("workers", [2, 4])
    section = cfg.get("train", {})
    pairs: dict[tuple[str, str], dict[str, int]] = {}
    if sched.get("runs") is None:
        for run in train_runs(cfg):
            opts = run["options"]
            pairs.setdefault((run["dataset"], run["model"]), {"window": int(opts.get("window", 4)),
                                                              "hidden": int(opts.get("hidden", 32))})
    else:
        for run in sched["runs"]:
            for model in run["models"]:
                pairs.setdefault((run["dataset"], model), {"window": int(run.get("window", section.get("window", 4))),
                                                           "hidden": int(run.get("hidden", section.get("hidden", 32)))})
    return [{"dataset": d, "model": m, "workers": int(w), **opts} for (d, m), opts in pairs.items() for w in workers]


def check_dataset(name: str, spec: dict[str, Any]) -> None:
    """Cross-field rules of one dataset entry."""
    fmt = spec["format"]
    where = f"config key datasets.{name}"
    if fmt == "synthetic":
        if "generator" not in spec:
            raise ConfigError(f"{where}: format synthetic needs a generator (blad, esdg or churn)")
    elif not spec.get("path"):
        raise ConfigError(f"{where}: format {fmt} needs a path")
    win = spec.get("snapshots", {})
    by = win.get("by")
    if by == "time" and "width" not in win:
        raise ConfigError(f"{where}.snapshots: by time needs a width (in the source's time unit)")
    if by == "count" and "size" not in win:
        raise ConfigError(f"{where}.snapshots: by count needs a size (events per snapshot)")
    if by is None and fmt not in ("as733", "pyg-temporal-json", "synthetic"):
        raise ConfigError(f"{where}.snapshots: say how to cut the events: by time (with width) or by count (with size)")


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Read a YAML config, merge ``overrides`` (as Snakemake's --config does) and validate it."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: config file not found")
    try:
        cfg = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(cfg, dict):
        raise ConfigError(f"{path}: expected a mapping of keys at the top level")
    cfg.update(overrides or {})
    return validate(cfg)


def dataset_spec(config: dict[str, Any], name: str) -> dict[str, Any]:
    """The validated entry of dataset ``name``."""
    datasets = config.get("datasets", {})
    if name not in datasets:
        raise ConfigError(f"no dataset {name!r} in the config; it has: {', '.join(datasets) or 'none'}")
    return datasets[name]
