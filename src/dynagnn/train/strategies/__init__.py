"""Training strategies: where the windows, snapshots or vertices of a step go (one module each).

:data:`STRATEGIES` maps the names the workflow uses to classes; :func:`strategy_class` looks one up.

- ``sequential``: one worker, one snapshot at a time (the PyTorch Geometric Temporal loop).
- ``vertex``: vertices split by METIS or hash; halo exchange before every aggregation.
- ``snapshot``: ESDG's split of a step's snapshots; two all-to-alls per layer.
"""

from __future__ import annotations

from dynagnn.errors import ConfigError, did_you_mean
from dynagnn.train.strategies.base import Run, Strategy
from dynagnn.train.strategies.sequential import Sequential
from dynagnn.train.strategies.snapshot import SnapshotPartition
from dynagnn.train.strategies.vertex import VertexPartition

STRATEGIES: dict[str, type[Strategy]] = {cls.name: cls for cls in (Sequential, VertexPartition, SnapshotPartition)}


def strategy_class(name: str) -> type[Strategy]:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ConfigError(f"unknown strategy {name!r}{did_you_mean(name, STRATEGIES)}: expected one of "
                          f"{', '.join(STRATEGIES)}") from None


def make_strategy(name: str, **options) -> Strategy:
    return strategy_class(name)(**options)


__all__ = ["STRATEGIES", "Run", "Strategy", "make_strategy", "strategy_class"]
