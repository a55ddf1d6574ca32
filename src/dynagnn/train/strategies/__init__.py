"""Training strategies: where the windows, snapshots or vertices of a step go (one module each).

The chooser (``auto``) is not one of them: it lives above training (:mod:`dynagnn.choose`) and hands
the engine the config of the strategy it chose.

:data:`STRATEGIES` maps the names the workflow uses to classes, importing a strategy's module when its
class is first asked for (the names and facts are :mod:`dynagnn.catalog`'s: a process imports the
strategy it trains, not every one); :func:`strategy_class` looks one up, :func:`register` adds one (each class declares its ``Options`` and what it serves: ``base.py``), and
:func:`workflow_family` answers the workflow's questions about one.

- ``sequential``: one worker, one snapshot at a time (the PyTorch Geometric Temporal loop).
- ``vertex``: vertices split by METIS or hash; halo exchange before every aggregation.
- ``snapshot``: ESDG's split of a step's snapshots; two all-to-alls per layer.
- ``events``: the event models (TGN, JODIE, APAN) on one worker, a step per batch of events.
- ``frames``: PiPAD's frame engine on one worker: parallel aggregation over the snapshots of a frame,
  inter-frame reuse of ``Â_t X_t``, a pipelined feed, the tuner deciding S at run time.
- ``group``: BLAD's snapshot groups per worker, two co-located processes per worker with the
  planned split, a deferred-backward queue and the planned operator order; its baselines
  ``blad_nm`` (no reordering) and ``blad_even`` (even groups and split, no reordering);
  ``group_frames``: BLAD × PiPAD, each of the two processes running its parts through the frame engine.
- ``tgnn``: Sven's event models on several workers: memory and mailbox partitioned (Re-FlexBiCut),
  redundancy-free dispatch, micro-batch pipelining, an optional one-step-stale all-reduce; its
  baselines ``tgnn_depcomm`` (per-occurrence fetch of the owner-updated memory) and
  ``tgnn_depcache`` (replicated memory, writes all-gathered), and ``tgnn_hash``, ``tgnn_range`` (Sven with
  the memory hashed or split by id ranges instead of Re-FlexBiCut).
- ``sampled``: BGL's sampled training of a static GNN (graphsage, gcn) through a two-level feature
  cache, seeds in proximity-aware order, isolated stages, seeds partitioned by BGL's BFS blocks; its
  baselines ``sampled_nocache``, ``sampled_static`` (PaGraph) and ``sampled_random`` (random order).
"""

from __future__ import annotations

from collections.abc import MutableMapping
import importlib

from dynagnn import catalog
from dynagnn.errors import ConfigError


class _Registry(MutableMapping):
    """The strategies by name, each class imported from its module on first lookup: the names and
    facts are the catalog's (:mod:`dynagnn.catalog`), so a process that trains one strategy imports
    that strategy's module, and one that only checks a config imports none."""

    def __init__(self):
        self._classes: dict[str, type] = {}

    def __getitem__(self, name: str) -> type:
        cls = self._classes.get(name)
        if cls is None:
            facts = catalog.strategies().get(name)
            if facts is None:
                raise KeyError(name)
            cls = self._classes[name] = getattr(importlib.import_module(facts["module"]), facts["class"])
        return cls

    def __setitem__(self, name: str, cls: type) -> None:
        if name != cls.name:
            raise ConfigError(f"strategy class {cls.__name__} is named {cls.name!r}, not {name!r}")
        self._classes[name] = cls
        catalog.add_strategy(cls)

    def __delitem__(self, name: str) -> None:
        if name not in catalog.strategies():
            raise KeyError(name)
        self._classes.pop(name, None)
        catalog.drop_strategy(name)

    def __contains__(self, name) -> bool:   # without importing the strategy's module
        return name in catalog.strategies()

    def __iter__(self):
        return iter(catalog.strategies())

    def __len__(self) -> int:
        return len(catalog.strategies())


STRATEGIES: MutableMapping[str, type] = _Registry()


def strategy_class(name: str) -> type:
    catalog.strategy(name)   # ConfigError for a name it does not hold
    return STRATEGIES[name]


def register(cls: type) -> type:
    """Add a strategy class to the registry under ``cls.name`` (what the CLI's flags, the config's
    checks and the workflow's families are generated from); returns it, so it decorates."""
    if not cls.name:
        raise ConfigError(f"strategy class {cls.__name__} has no name")
    STRATEGIES[cls.name] = cls
    return cls


def serving_strategies(model_cls: type, contract) -> list[str]:
    """The registered strategies that can train the snapshot model ``model_cls`` with ``contract``
    (what the contract check found), in registry order."""
    return [name for name, cls in STRATEGIES.items() if cls.model_refusal(model_cls, contract) is None]


def workflow_family(name: str) -> dict:
    """What the workflow asks of strategy ``name`` (``rules/common.smk``): its family (strategies
    compared side by side), processes per worker, whether it trains by the schedule stage's plan, the
    family figure its runs draw, the model contracts it trains, and that it trains (``chooses``: False;
    the chooser's answer is the API's). From the catalog: no strategy module is imported."""
    facts = catalog.strategy(name)
    return {"family": facts["family"], "procs_per_worker": facts["procs_per_worker"],
            "needs_plan": facts["needs_plan"], "figure": facts["figure"], "models": list(facts["models"]),
            "chooses": False}


def __getattr__(name: str):
    if name in ("Run", "Strategy"):   # the contract's classes import torch: loaded where asked for
        from dynagnn.train.strategies import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["STRATEGIES", "Run", "Strategy", "register", "serving_strategies", "strategy_class", "workflow_family"]
