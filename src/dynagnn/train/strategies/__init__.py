"""Training strategies: where the windows, snapshots or vertices of a step go (one module each).

The chooser (``auto``) is not one of them: it lives above training (:mod:`dynagnn.choose`) and hands
the engine the config of the strategy it chose.

:data:`STRATEGIES` maps the names the workflow uses to classes; :func:`strategy_class` looks one up,
:func:`register` adds one (each class declares its ``Options`` and what it serves: ``base.py``), and
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

from dynagnn.config import provide
from dynagnn.errors import ConfigError, did_you_mean
from dynagnn.train.strategies.base import Run, Strategy
from dynagnn.train.strategies.events import EventStrategy
from dynagnn.train.strategies.frames import Frames
from dynagnn.train.strategies.group import BladEven, BladNM, GroupFrames, GroupPipeline
from dynagnn.train.strategies.sampled import Sampled, SampledNoCache, SampledRandom, SampledStatic
from dynagnn.train.strategies.sequential import Sequential
from dynagnn.train.strategies.snapshot import SnapshotPartition
from dynagnn.train.strategies.tgnn import TGNNDepCache, TGNNDepComm, TGNNHash, TGNNRange, TGNNStrategy
from dynagnn.train.strategies.vertex import VertexPartition

STRATEGIES: dict[str, type[Strategy]] = {cls.name: cls for cls in (Sequential, VertexPartition, SnapshotPartition,
                                                                   GroupPipeline, BladNM, BladEven, GroupFrames, EventStrategy, Frames,
                                                                   Sampled, SampledNoCache, SampledStatic, SampledRandom,
                                                                   TGNNStrategy, TGNNDepComm, TGNNDepCache, TGNNHash, TGNNRange)}


provide("strategies", lambda: STRATEGIES)


def strategy_class(name: str) -> type[Strategy]:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ConfigError(f"unknown strategy {name!r}{did_you_mean(name, STRATEGIES)}: expected one of "
                          f"{', '.join(STRATEGIES)}") from None


def register(cls: type[Strategy]) -> type[Strategy]:
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
    the chooser's answer is the API's)."""
    cls = strategy_class(name)
    return {"family": cls.family, "procs_per_worker": cls.procs_per_worker, "needs_plan": cls.needs_plan,
            "figure": cls.figure, "models": list(cls.models), "chooses": False}


__all__ = ["STRATEGIES", "Run", "Strategy", "register", "serving_strategies", "strategy_class", "workflow_family"]
