"""What the strategies and models are, as data: for the commands that must not import torch.

The strategies' and models' classes import torch, about 2 s of a process's start. The CLI's parse and
``--help``, ``check-config``, the config's checks and Snakemake's start need only their names and
facts: a strategy's module and class, family, processes per worker, plan, figure, the model kinds it
trains, its option keys, what it fixes and refuses; a model's kind. ``schemas/catalog.json`` holds
them, copied from the classes by :func:`facts_of`; ``tests/test_registries.py`` fails when the copy
drifts from the classes, and ``python tools/write_catalog.py`` writes it anew. The options' JSON
schemas are the config schema's copy (``train.<key>``), which the same tests hold to the classes.

A class registered at run time (a plugin strategy, a user's model) adds its own facts here
(:func:`add_strategy`, :func:`add_model`), so both views name the same things in every process. The
strategies' registry (:mod:`dynagnn.train.strategies`) imports a strategy's module only when its
class is asked for, by the module and class named here.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import json
import re
from importlib import resources
from typing import Any

from .config import provide, provide_train_keys, schema_node
from .errors import ConfigError, did_you_mean

# the strategy facts a class states (class attributes of dynagnn.train.strategies.base.Strategy)
STRATEGY_FACTS = ("family", "procs_per_worker", "needs_plan", "gpu_only", "baseline_of", "figure", "models", "tasks")

IMPORT_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")

_added_strategies: dict[str, dict] = {}   # name -> facts of a class registered at run time
_added_schemas: dict[str, dict] = {}      # name -> {option key: JSON schema} of that class
_dropped: set[str] = set()                # names of the file taken out of the registry at run time
_added_models: dict[str, str] = {}        # name -> kind


@functools.cache
def _file() -> dict:
    return json.loads(resources.files("dynagnn").joinpath("schemas/catalog.json").read_text())


def facts_of(cls: type) -> dict[str, Any]:
    """A strategy class's facts, as the catalog holds them (JSON's types)."""
    facts = {"module": cls.__module__, "class": cls.__qualname__}
    for key in STRATEGY_FACTS:
        value = getattr(cls, key)
        facts[key] = list(value) if isinstance(value, tuple) else value
    facts["options"] = list(cls.Options.declared())
    facts["settable"] = sorted(cls.settable())
    facts["fixed"] = dict(cls.fixed)
    facts["refuses"] = dict(cls.refuses)
    return facts


def strategies() -> dict[str, dict]:
    """Every registered strategy's facts by name, in registry order."""
    out = {name: facts for name, facts in _file()["strategies"].items() if name not in _dropped}
    return {**out, **_added_strategies}


def strategy(name: str) -> dict:
    """The facts of strategy ``name``; ConfigError naming the registered ones."""
    known = strategies()
    if name not in known:
        raise ConfigError(f"unknown strategy {name!r}{did_you_mean(name, known)}: expected one of {', '.join(known)}")
    return known[name]


def add_strategy(cls: type) -> None:
    """Record a strategy class registered at run time, with its options' schemas. Its facts are taken
    now: a class changed after it is registered must be registered again."""
    _dropped.discard(cls.name)
    _added_strategies[cls.name] = facts_of(cls)
    _added_schemas[cls.name] = {key: cls.Options.json_schema(key) for key in cls.Options.declared()}


def drop_strategy(name: str) -> None:
    """Take strategy ``name`` out (a test's or a plugin's own registration undone; a built-in one too)."""
    _added_strategies.pop(name, None)
    _added_schemas.pop(name, None)
    if name in _file()["strategies"]:
        _dropped.add(name)


def _file_keys() -> set[str]:
    """The option keys the catalog file's registered strategies declare (the config schema's copy)."""
    return {key for name, facts in _file()["strategies"].items() if name not in _dropped for key in facts["options"]}


def _added_option_schemas() -> dict[str, dict]:
    """The options only strategies registered at run time declare, each the first declarer's schema."""
    builtin, out = _file_keys(), {}
    for schemas in _added_schemas.values():
        for key, schema in schemas.items():
            if key not in builtin:
                out.setdefault(key, schema)
    return out


def option_schema(key: str) -> dict | None:
    """The JSON schema of strategy option ``key`` (with its default and help; a copy), or None where no
    registered strategy declares it. A built-in strategy's option is the config schema's, whoever
    else declares it."""
    if key in _file_keys():
        return copy.deepcopy(schema_node(f"train.{key}"))
    schema = _added_option_schemas().get(key)
    return copy.deepcopy(schema) if schema is not None else None


def option_schemas() -> dict[str, dict]:
    """Every option of the registered strategies with its JSON schema, in registry order."""
    keys = dict.fromkeys(key for facts in strategies().values() for key in facts["options"])
    return {key: option_schema(key) for key in keys}


def takers(key: str) -> list[str]:
    """The registered strategies that take option ``key``, sorted."""
    return sorted(name for name, facts in strategies().items() if key in facts["settable"])


def models() -> dict[str, str]:
    """Every model name the config's ``model`` key takes, with its kind (snapshot, event, sampled,
    baseline), the built-in ones first."""
    return {**_file()["models"], **_added_models}


def add_model(name: str, kind: str) -> None:
    _added_models[name] = kind


def is_import_path(name: str) -> bool:
    """Whether ``name`` is a ``package.module:Class`` path rather than a registered name."""
    return bool(IMPORT_PATH.match(str(name)))


def check_model_name(name: str) -> None:
    """A model name is a registered one, or an import path whose module can be found (the class behind
    it is imported and checked where the library above builds it, :mod:`dynagnn.models.registry`;
    finding the module imports no torch, only its parent packages)."""
    known = models()
    if name in known:
        return
    if not is_import_path(name):
        raise ConfigError(f"unknown model {name!r}{did_you_mean(name, known)}; known: {', '.join(known)}, "
                          "or a class of your own as package.module:Class")
    module = name.partition(":")[0]
    try:
        why = None if importlib.util.find_spec(module) is not None else f"ModuleNotFoundError: No module named {module!r}"
    except Exception as exc:   # a parent package that does not import, or is no package
        why = f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
    if why:   # the words of the registry's own refusal (models/registry.py's import_class)
        raise ConfigError(f"{name!r}: module {module} does not import ({why}); install it or put its folder on "
                          "PYTHONPATH")


provide("strategies", lambda: list(strategies()))
provide("models", lambda: list(models()), check_model_name)
provide_train_keys(_added_option_schemas)
