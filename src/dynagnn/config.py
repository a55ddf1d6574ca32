"""Loading and validating config.yaml against the JSON schema, with defaults filled in.

The schema is package data (``dynagnn/schemas/config.schema.yaml``); the workflow's
``workflow/schemas/config.schema.yaml`` is a link to it, so Snakemake and the library validate
against one file. The command line's flags go through the same schema (:func:`check_value`,
:func:`check_options`): a flag and the config key it stands for are refused alike. Names that a
registry of the library defines (models, strategies) are marked ``x-registry`` in the schema and
checked against the registry itself, so a newly registered one needs no schema edit. Checks a schema
cannot express (a time window needs a width) are in :func:`check_dataset`.
"""

from __future__ import annotations

import copy
import functools
import importlib
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .errors import ConfigError, did_you_mean, one_line


@functools.cache
def _schema() -> dict:
    return yaml.safe_load(resources.files("dynagnn").joinpath("schemas/config.schema.yaml").read_text())


def load_schema() -> dict:
    """The config schema (a fresh copy: callers may change it)."""
    return copy.deepcopy(_schema())


def schema_node(key: str) -> dict:
    """The schema of config key ``key``, dotted (``train.hidden``, ``analysis.cache.fractions``); a
    part ``items`` steps into an array's items (``schedule.workers.items``)."""
    node = _schema()
    for part in key.split("."):
        node = node["items"] if part == "items" else node["properties"][part]
    return node


def _registered(validator, registry, instance, schema):
    """The ``x-registry`` keyword, ``{names: <module>.<mapping>, what: <one entry>, resolve: <module>.<function>}``:
    a string value must be a key of that mapping, or one that ``resolve`` (optional) registers into it
    without a ConfigError (a model's import path). The schema names the registry and it is imported only when a value
    is checked: the registries live in layers above this one (models, train) and pull in torch."""
    if isinstance(instance, str):
        module, _, attr = registry["names"].rpartition(".")
        names = getattr(importlib.import_module(module), attr)
        if instance not in names and registry.get("resolve"):   # a user's package.module:Class, loaded and checked
            module, _, attr = registry["resolve"].rpartition(".")
            try:
                getattr(importlib.import_module(module), attr)(instance)
            except ConfigError as exc:
                yield jsonschema.ValidationError(str(exc))
            return
        if instance not in names:
            yield jsonschema.ValidationError(f"unknown {registry['what']} {instance!r}{did_you_mean(instance, names)}; "
                                             f"known: {', '.join(names)}")


@functools.cache  # built once per kind: flags are checked one by one
def _validator_class(fill_defaults: bool = False):
    """The validator of the schema's draft with the ``x-registry`` keyword and, when asked, filling in
    the schema's defaults while it validates (jsonschema FAQ)."""
    cls = jsonschema.validators.validator_for(_schema())
    extra = {"x-registry": _registered}
    if fill_defaults:
        validate_properties = cls.VALIDATORS["properties"]

        def set_defaults(validator, properties, instance, schema):
            if isinstance(instance, dict):
                for key, sub in properties.items():
                    if "default" in sub and key not in instance:
                        instance[key] = copy.deepcopy(sub["default"])
            yield from validate_properties(validator, properties, instance, schema)

        extra["properties"] = set_defaults
    return jsonschema.validators.extend(cls, extra)


def _explain(err: jsonschema.ValidationError) -> str:
    """What is wrong with the value, in words (where it is, the caller says)."""
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = list(err.schema.get("properties", {}))
        unknown = [k for k in err.instance if k not in allowed]
        hints = [f"{k!r}{did_you_mean(k, allowed)}" for k in unknown]
        return f"unknown key {', '.join(hints)}; allowed: {', '.join(allowed) or 'none'}"
    if err.validator == "enum":
        return err.message + did_you_mean(err.instance, err.validator_value)
    if err.validator == "pattern" and err.schema.get("description"):
        return f"{err.instance!r} is not {err.schema['description']}"
    return err.message


def _train_keys():
    """The router of train keys (:mod:`dynagnn.train.run_config`), imported when a config is checked:
    it lives above this layer, beside the strategies whose options it knows."""
    return importlib.import_module("dynagnn.train.run_config")


def _with_options(schema: dict) -> dict:
    """``schema`` with every registered strategy's options in the train section: the schema file holds a
    copy of the built-in ones (for Snakemake), a strategy registered later (a plugin, a test) adds its
    own."""
    schema = copy.deepcopy(schema)
    props = schema["properties"]["train"]["properties"]
    for key, fragment in _train_keys().option_schemas().items():
        props.setdefault(key, fragment)
    return schema


def check_schema(schema: dict, value: Any, label: str) -> None:
    """Validate ``value`` against the JSON ``schema`` of one key; ConfigError ``<label>: <what>``."""
    err = _first_error(_validator_class()(schema), value)
    if err is not None:
        raise ConfigError(f"{label}: {_explain(err)}")


def _first_error(validator, instance) -> jsonschema.ValidationError | None:
    errors = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
    return errors[0] if errors else None


def _message(err: jsonschema.ValidationError, prefix: str = "") -> str:
    """``config key <prefix><path>: <what>``; the path of the offending value inside the config."""
    where = ".".join([prefix.rstrip(".")] * bool(prefix) + [str(p) for p in err.absolute_path]) or "(top level)"
    return f"config key {where}: {_explain(err)}"


def check_value(key: str, value: Any, flag: str) -> None:
    """Validate a command-line flag's value against the schema of config key ``key``, the one check
    the flag and the key share. A list given for a key that takes one value (``--hidden 16 32`` for
    ``train.hidden``) is checked item by item. Raises ConfigError naming the flag and the key."""
    node = schema_node(key)
    items = value if isinstance(value, list) and "array" not in str(node.get("type", "")) else [value]
    validator = _validator_class()(node)
    for item in items:
        err = _first_error(validator, item)
        if err is not None:
            raise ConfigError(f"{flag}: {_explain(err)} (config key {key})")


def check_options(section: str, options: Any, where: str) -> None:
    """Validate a partial ``section`` of the config: keys of that section (its ``runs`` excepted) with
    values the schema allows, no defaults filled in (a run's options, ``train --options``, a
    TrainConfig). ``where`` names the options in the message (``config key train.runs.0.options``,
    ``--options``)."""
    props = (_with_options(_schema()) if section == "train" else _schema())["properties"][section]["properties"]
    schema = {"type": "object", "additionalProperties": False,
              "properties": {k: v for k, v in props.items() if k != "runs"}}
    err = _first_error(_validator_class()(schema), options)
    if err is not None:
        path = ".".join(str(p) for p in err.absolute_path)
        sep = " " if where.startswith("--") else "."  # "--options lr", "config key train.runs.0.options.lr"
        raise ConfigError(f"{where}{sep + path if path else ''}: {_explain(err)}")


def validate(config: dict[str, Any]) -> dict[str, Any]:
    """Validate a config (a dict as read from YAML) and return a copy with the defaults filled in.

    Raises ConfigError naming the first offending key and what was expected.
    """
    cfg = copy.deepcopy(config) if config is not None else {}
    given = dict((cfg.get("train") or {}) if isinstance(cfg.get("train"), dict) else {})  # before the defaults
    err = _first_error(_validator_class(fill_defaults=True)(_with_options(_schema())), cfg)
    if err is not None:
        raise ConfigError(_message(err))
    for name, spec in cfg["datasets"].items():
        check_dataset(name, spec)
    check_train(cfg, given)
    for i, run in enumerate((cfg.get("schedule") or {}).get("runs") or []):
        _check_run_dataset(cfg, run, f"schedule.runs.{i}")
    return cfg


def _check_run_dataset(cfg: dict[str, Any], run: dict[str, Any], where: str) -> None:
    if run["dataset"] not in cfg["datasets"]:
        hint = did_you_mean(run["dataset"], cfg["datasets"])
        raise ConfigError(f"config key {where}.dataset: no dataset {run['dataset']!r}{hint}")


def _strategies_of(section: dict[str, Any], run: dict[str, Any]) -> list[str]:
    return list(run.get("strategies") or [section.get("strategy", _train_keys().DEFAULT_STRATEGY)])


def check_train(cfg: dict[str, Any], given: dict[str, Any] | None = None) -> None:
    """Each run names a dataset of the config, and its options are keys of the train section with
    values the schema allows (checked without filling defaults: a run states only what differs).
    A key a run (or the section, ``given`` as written) sets must be one every run shares or an option
    of at least one strategy it trains; it reaches only the strategies that take it."""
    keys = _train_keys()
    section = cfg.get("train", {})
    runs = section.get("runs", [])
    trained = {s for run in runs for s in _strategies_of(section, run)} or set(keys.STRATEGIES)
    for key in given or {}:
        if key != "runs" and key not in keys.shared_fields() and not any(
                key in keys.strategy_class(s).settable() for s in trained):
            raise ConfigError(keys.refusal(key, sorted(trained), f"config key train.{key}"))
    for i, run in enumerate(runs):
        where = f"train.runs.{i}"
        _check_run_dataset(cfg, run, where)
        check_options("train", run.get("options", {}), f"config key {where}.options")
        strategies = _strategies_of(section, run)
        _check_baselines(section, run, strategies, where)
        for key in run.get("options", {}):
            if key not in keys.shared_fields() and not any(key in keys.strategy_class(s).settable()
                                                           for s in strategies):
                raise ConfigError(keys.refusal(key, strategies, f"config key {where}.options.{key}"))
    _check_one_run_per_folder(section)


def _check_baselines(section: dict[str, Any], run: dict[str, Any], strategies: list[str], where: str) -> None:
    """A baseline model name (EdgeBank) is scored by the strategies that build its task only."""
    for model in run.get("models") or [section.get("model", "tgcn")]:
        reason = _train_keys().baseline_refusal(model, strategies)
        if reason:
            raise ConfigError(f"config key {where}: {reason}")


def _check_one_run_per_folder(section: dict[str, Any]) -> None:
    """Two runs that would train into one folder (``<dataset>/<model>/<strategy>-<slot>``) with other
    options: one would silently replace the other."""
    seen: dict[tuple, tuple[int, dict]] = {}
    for i, run in enumerate(section.get("runs", [])):
        for r in train_runs({"train": {**section, "runs": [run]}}):
            folder = (r["dataset"], r["model"], f"{r['strategy']}-{r['slot']}")
            mine = {**r["options"], "seeds": r["seeds"]}   # a run with seeds is its seeds' folders
            if folder in seen and seen[folder][1] != mine:
                j, other = seen[folder]
                differ = sorted(k for k in set(other) | set(mine) if other.get(k) != mine.get(k))
                raise ConfigError(f"config key train.runs.{i}: trains {'/'.join(folder)} as train.runs.{j} does, "
                                  f"with other {', '.join(differ)}: one run would replace the other; "
                                  "give one of them another dataset, model, strategy or worker count")
            seen.setdefault(folder, (i, mine))


def keys_for(strategy: str, options: dict[str, Any]) -> dict[str, Any]:
    """The keys of ``options`` a run of ``strategy`` takes: the shared ones and its own options (what
    the workflow passes to ``train --options``; a section's key for other strategies stays behind)."""
    keys = _train_keys()
    takes = set(keys.shared_fields()) | keys.strategy_class(strategy).settable()
    return {k: v for k, v in options.items() if k in takes}


def train_runs(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Every (dataset, model, strategy, workers) the config trains, with its options: the shared keys
    and the strategy's own, section defaults overridden by the run's (a key reaches only the
    strategies that take it); ``threads`` per process (the run's option, else 1), ``slot`` (its
    folder's suffix: ``2``, or ``1t2`` with threads), ``cores`` (workers × processes per worker ×
    threads: what the compare rule pairs runs by) and ``seeds`` (the run's seeds: one job each into
    ``seed-<k>/``; [] for one run of the section's seed).

    An ``auto`` run (family auto: the chooser, which picks workers and threads itself) is one process
    that may fill ``cores``: its option ``cores``, else the run's workers × threads (the hardware of the
    strategies it runs beside); its slot is ``1t<cores>`` (``1`` on one core), its options name the
    cores and neither workers nor threads (the library refuses them with auto)."""
    keys = _train_keys()
    section = cfg.get("train", {})
    base = {k: v for k, v in section.items() if k != "runs"}
    out = []
    for run in section.get("runs", []):
        opts = {**base, **run.get("options", {})}
        for model in run.get("models") or [opts["model"]]:
            for strategy in run.get("strategies") or [opts["strategy"]]:
                cls = keys.strategy_class(strategy)
                ppw = cls.procs_per_worker
                threads = int(opts.get("threads") or 1)
                for workers in run.get("workers") or [opts.get("workers", 1)]:
                    w = int(workers)
                    options = {**keys_for(strategy, opts), "model": model, "strategy": strategy, "workers": w}
                    if cls.family == "auto":
                        cores = int(opts.get("cores") or w * threads)
                        options = {k: v for k, v in options.items() if k not in ("workers", "threads")}
                        out.append({"dataset": run["dataset"], "model": model, "strategy": strategy, "workers": 1,
                                    "threads": cores, "slot": "1" if cores == 1 else f"1t{cores}", "cores": cores,
                                    "seeds": [int(k) for k in run.get("seeds") or []],
                                    "options": {**options, "cores": cores}})
                        continue
                    out.append({"dataset": run["dataset"], "model": model, "strategy": strategy, "workers": w,
                                "threads": threads, "slot": f"{w}" if threads == 1 else f"{w}t{threads}",
                                "cores": w * ppw * threads, "seeds": [int(k) for k in run.get("seeds") or []],
                                "options": options})
    return out


def schedule_runs(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Every (dataset, model, workers) the schedule stage plans, with its window, hidden width and task
    (whose training windows the plan covers).

    ``schedule.runs`` null (the default): each distinct (dataset, model) of :func:`train_runs` whose
    model the schedule plans (a snapshot model: the schema's ``schedule.runs`` models, not an event or
    sampled one), with the window and hidden width of its first training run; else the listed pairs,
    whose window and hidden default to the train section's."""
    sched = cfg.get("schedule") or {}
    workers = sched.get("workers", [2, 4])
    section = cfg.get("train", {})
    pairs: dict[tuple[str, str], dict[str, int]] = {}
    if sched.get("runs") is None:
        planned = set(schema_node("schedule.runs.items.models.items")["enum"])
        for run in train_runs(cfg):
            if run["model"] not in planned:
                continue
            opts = run["options"]
            pairs.setdefault((run["dataset"], run["model"]), {"window": int(opts.get("window", 4)),
                                                              "hidden": int(opts.get("hidden", 32)),
                                                              "task": str(opts.get("task", "auto"))})
    else:
        for run in sched["runs"]:
            for model in run["models"]:
                pairs.setdefault((run["dataset"], model), {"window": int(run.get("window", section.get("window", 4))),
                                                           "hidden": int(run.get("hidden", section.get("hidden", 32))),
                                                           "task": str(section.get("task", "auto"))})
    return [{"dataset": d, "model": m, "workers": int(w), **opts} for (d, m), opts in pairs.items() for w in workers]


def check_dataset(name: str, spec: dict[str, Any]) -> None:
    """Cross-field rules of one dataset entry."""
    fmt = spec["format"]
    where = f"config key datasets.{name}"
    if fmt == "synthetic":
        if "generator" not in spec:
            raise ConfigError(f"{where}: format synthetic needs a generator (blad, esdg, churn or bgl)")
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


class DuplicateKeyError(yaml.MarkedYAMLError):
    """A key given twice in one mapping of a YAML document."""


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's SafeLoader, except that a key given twice in one mapping is an error: PyYAML keeps the
    last value silently, so a config that sets ``hidden`` twice would train with whichever came last.
    Keys merged in with ``<<`` may still be overridden (that is what a merge is for)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: the SafeLoader refuses it below
                    continue
                if first is not None:
                    raise DuplicateKeyError(problem=f"duplicate key {key!r} (first given at line {first})",
                                            problem_mark=key_node.start_mark)
                seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, UniqueKeyLoader.construct_mapping)


def load_yaml(text: str, path: str | Path = "<yaml>") -> Any:
    """Parse YAML text with :class:`UniqueKeyLoader`; ConfigError naming ``path`` and the line on a
    syntax error or a duplicate key."""
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except DuplicateKeyError as exc:
        raise ConfigError(f"{path}, line {exc.problem_mark.line + 1}: {exc.problem}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}, line {mark.line + 1}" if mark is not None else f"{path}"
        raise ConfigError(f"{where}: not valid YAML ({exc.problem or exc.context})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({one_line(exc)})") from None


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Read a YAML config, merge ``overrides`` (as Snakemake's --config does) and validate it."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: config file not found")
    cfg = load_yaml(path.read_text(), path) or {}
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
