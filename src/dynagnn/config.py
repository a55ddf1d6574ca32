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


# What the layers above answer for the schema, each given by the module that owns it when it is
# imported (this module imports none of them: they live above it and pull in torch). A registry's
# names are the union of its providers' (the strategies' registry and the chooser both name strategies).
_NAMES: dict[str, list] = {}      # registry -> [() -> names]
_RESOLVERS: dict[str, list] = {}  # registry -> [(name) -> None or raises ConfigError]: a name loaded on first use
_TRAIN_KEYS: list = []            # [() -> {key: JSON schema}]: the train section's keys beyond the file's copy


def provide(registry: str, names, resolve=None) -> None:
    """Answer the schema's ``x-registry: {registry: <registry>}`` keyword: ``names() -> iterable`` of
    the names it holds, and ``resolve(name)`` (optional) to load one it does not hold yet (a model's
    import path), raising ConfigError where it cannot. Called by the registry's own module."""
    if names not in _NAMES.setdefault(registry, []):
        _NAMES[registry].append(names)
    if resolve is not None and resolve not in _RESOLVERS.setdefault(registry, []):
        _RESOLVERS[registry].append(resolve)


def provide_train_keys(schemas) -> None:
    """``schemas() -> {key: JSON schema}``: train keys a registry declares (every strategy's options,
    the chooser's), added to the train section where the schema file has no copy (a strategy
    registered later: a plugin, a test). Called by the registry's own module."""
    if schemas not in _TRAIN_KEYS:
        _TRAIN_KEYS.append(schemas)


def registry_names(registry: str) -> list[str]:
    """The names of ``registry``, in its providers' order; ConfigError where no module provided it."""
    if registry not in _NAMES:
        raise ConfigError(f"the {registry} registry is not loaded: check configs through dynagnn.api.runs "
                          "(or import the registry's module first)")
    return list(dict.fromkeys(n for names in _NAMES[registry] for n in names()))


def _registered(validator, registry, instance, schema):
    """The ``x-registry`` keyword, ``{registry: <name>, what: <one entry>}``: a string value must be
    one of the registry's names (:func:`provide`), or one a resolver loads without a ConfigError."""
    if isinstance(instance, str):
        names = registry_names(registry["registry"])
        if instance in names:
            return
        resolvers = _RESOLVERS.get(registry["registry"], [])
        if resolvers:   # a user's package.module:Class, loaded and checked
            try:
                for resolve in resolvers:
                    resolve(instance)
            except ConfigError as exc:
                yield jsonschema.ValidationError(str(exc))
            return
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


def _with_options(schema: dict) -> dict:
    """``schema`` with every provided train key in the train section (:func:`provide_train_keys`): the
    schema file holds a copy of the built-in ones (for Snakemake); a strategy registered later adds its
    own."""
    schema = copy.deepcopy(schema)
    props = schema["properties"]["train"]["properties"]
    for schemas in _TRAIN_KEYS:
        for key, fragment in schemas().items():
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
    """Validate a config (a dict as read from YAML) against the schema, with the datasets' own rules,
    and return a copy with the defaults filled in. The train section's runs, which need the
    strategies' registry, are checked above this layer (:func:`dynagnn.api.runs.validate`, which calls
    this first). Raises ConfigError naming the first offending key and what was expected.
    """
    cfg = copy.deepcopy(config) if config is not None else {}
    err = _first_error(_validator_class(fill_defaults=True)(_with_options(_schema())), cfg)
    if err is not None:
        raise ConfigError(_message(err))
    for name, spec in cfg["datasets"].items():
        check_dataset(name, spec)
    for i, run in enumerate((cfg.get("schedule") or {}).get("runs") or []):
        check_run_dataset(cfg, run, f"schedule.runs.{i}")
    return cfg


def check_run_dataset(cfg: dict[str, Any], run: dict[str, Any], where: str) -> None:
    """A run names a dataset of the config."""
    if run["dataset"] not in cfg["datasets"]:
        hint = did_you_mean(run["dataset"], cfg["datasets"])
        raise ConfigError(f"config key {where}.dataset: no dataset {run['dataset']!r}{hint}")


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


def read_config(path: str | Path, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """A YAML config as written, ``overrides`` merged in (as Snakemake's --config does), not validated
    (:func:`dynagnn.api.runs.load_config` reads and validates it)."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: config file not found")
    cfg = load_yaml(path.read_text(), path) or {}
    if not isinstance(cfg, dict):
        raise ConfigError(f"{path}: expected a mapping of keys at the top level")
    cfg.update(overrides or {})
    return cfg


def dataset_spec(config: dict[str, Any], name: str) -> dict[str, Any]:
    """The validated entry of dataset ``name``."""
    datasets = config.get("datasets", {})
    if name not in datasets:
        raise ConfigError(f"no dataset {name!r} in the config; it has: {', '.join(datasets) or 'none'}")
    return datasets[name]
