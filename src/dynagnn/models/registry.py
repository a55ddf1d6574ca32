"""The model registry: every name the config's ``model`` key and ``--model`` take, and the classes behind them.

One path for every model. The built-in ones register here from :mod:`dynagnn.models` at import
(:func:`register_model`), each under its class's ``name`` and its kind; a user's model is named by
import path, ``mypkg.cells:MyCell``, and :func:`model_class` imports it on first use, checks that it
subclasses :class:`~dynagnn.models.base.DynamicGNN` or :class:`~dynagnn.models.base.StackedGNN`
(the steps on a tiny graph, :mod:`.contract`, run at the run's widths before it trains) and
registers it under that path, so that every later lookup, in this process or a worker
process that is handed the same name, finds it the same way.

Kinds (which strategies train a model, ``Strategy.models``): ``snapshot`` (a recurrence over
snapshots, :mod:`.base`), ``event`` (TGN, JODIE, APAN: :mod:`.tgnn`), ``sampled`` (BGL's static GNNs:
:mod:`.sage`), ``baseline`` (EdgeBank: scores, trains nothing). A user's model is a snapshot model.

It sits in ``models`` because the classes do: the config layer below checks names against
:data:`ALL_MODELS` through the schema's ``x-registry`` keyword (imported only when a value is checked),
and :func:`resolve_model` is the hook it calls for a name not registered yet.
"""

from __future__ import annotations

import importlib

from dynagnn.catalog import add_model, is_import_path
from dynagnn.errors import ConfigError, did_you_mean

# the snapshot models (one step per snapshot): what the window strategies train
MODELS: dict[str, type] = {}
# every name the config's model key takes, of every kind
ALL_MODELS: dict[str, type] = {}
KINDS: dict[str, str] = {}
KIND_WORDS = {"event": "an event model (TGN, JODIE, APAN)", "sampled": "a static GNN trained on sampled blocks (BGL)",
              "baseline": "a baseline that trains nothing (EdgeBank)", "snapshot": "a snapshot model"}

def register_model(cls: type, kind: str = "snapshot", name: str | None = None) -> type:
    """Add ``cls`` to the registry under ``name`` (its class's ``name`` by default) as a model of
    ``kind``; returns it, so that it decorates. A second class under a taken name is refused."""
    key = name or getattr(cls, "name", "")
    if not key:
        raise ConfigError(f"model class {cls.__qualname__} has no name: set its class attribute name")
    if kind not in KIND_WORDS:
        raise ConfigError(f"model kind {kind!r}: expected one of {', '.join(KIND_WORDS)}")
    if ALL_MODELS.get(key, cls) is not cls:
        raise ConfigError(f"model name {key!r} is taken by {ALL_MODELS[key].__module__}.{ALL_MODELS[key].__qualname__}")
    ALL_MODELS[key], KINDS[key] = cls, kind
    add_model(key, kind)   # the catalog's names: what a check that imports no model sees
    if kind == "snapshot":
        MODELS[key] = cls
    return cls


def import_class(path: str) -> type:
    """The class ``module:Qual.Name`` names, imported; ConfigError, in one line, where the module does
    not import, has no such name, or the name is not a class."""
    module_name, _, attr = path.partition(":")
    try:
        obj = importlib.import_module(module_name)
    except Exception as exc:   # a user's module may raise anything while it imports
        raise ConfigError(f"model: {path!r}: module {module_name} does not import ({type(exc).__name__}: "
                          f"{' '.join(str(exc).split())[:160]}); install it or put its folder on PYTHONPATH") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"model: {path!r}: module {module_name} has no {attr}; name a class defined in it "
                              f"({module_name}:ClassName)")
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise ConfigError(f"model: {path!r} is a {type(obj).__name__}, not a class: name a subclass of "
                          "dynagnn.models.DynamicGNN or StackedGNN")
    return obj


def unimportable(cls: type, name: str) -> str | None:
    """Why another process cannot get model class ``cls``, registered as ``name``, back by importing
    that name (a class defined in ``__main__``, in a function, or made with ``type()`` where its
    module's names do not lead to it), in words that follow the class's name; None where it can (a
    built-in or an import path: every process resolves the name itself)."""
    if name.partition(":")[0] != cls.__module__:
        return None
    if cls.__module__ == "__main__":
        return "is defined in a script or notebook (__main__), which other processes cannot import"
    if "<locals>" in cls.__qualname__:
        return "is defined in a function, which other processes cannot import"
    try:
        if import_class(name) is cls:
            return None
    except ConfigError:
        pass
    return (f"is registered as {name}, but importing that does not give this class back (a class made with "
            "type(), or one replaced after its module ran)")


def resolve_model(name: str) -> type:
    """The class registered as ``name``; an import path not registered yet is imported, checked to be a
    DynamicGNN or StackedGNN subclass and registered under the path (its steps are checked at the run's
    widths before it trains: :meth:`dynagnn.train.strategies.base.Strategy.check_model`). ConfigError,
    in one line, for an unknown name, a path that does not import, names no class, or a class that
    implements neither contract."""
    cls = ALL_MODELS.get(name)
    if cls is not None:
        return cls
    if not is_import_path(name):
        raise ConfigError(f"unknown model {name!r}{did_you_mean(name, ALL_MODELS)}; known: {', '.join(ALL_MODELS)}, "
                          "or a class of your own as package.module:Class")
    cls = import_class(name)
    from .contract import check_class

    check_class(cls, where=name)   # its steps are checked at the run's widths before it trains
    return register_model(cls, "snapshot", name=name)


def model_class(name: str) -> type:
    """The snapshot model class ``name`` (a registered name or an import path); ConfigError naming the
    known models, or what an event, sampled or baseline model is trained with."""
    if name not in ALL_MODELS and not is_import_path(name):
        raise ConfigError(f"model: unknown model {name!r}{did_you_mean(name, MODELS)}; known: {', '.join(MODELS)}, "
                          "or a class of your own as package.module:Class")
    cls = resolve_model(name)
    kind = KINDS[name]
    if kind == "event":
        raise ConfigError(f"model: {name!r} is an event model (TGN, JODIE, APAN), not a snapshot model: train it "
                          "with the events strategy (--strategy events, or strategies: [events] in a run)")
    if kind != "snapshot":
        raise ConfigError(f"model: {name!r} is {KIND_WORDS[kind]}, not a snapshot model")
    return cls


def model_kind(name: str) -> str:
    """The kind of model ``name`` (importing an import path first)."""
    resolve_model(name)
    return KINDS[name]


def build_model(name: str, in_dim: int, hidden_dim: int, **kw):
    """The snapshot model ``name``, built with (in_dim, hidden_dim) and its own keyword options."""
    return model_class(name)(in_dim, hidden_dim, **kw)
