"""In-memory forms of a temporal graph between reading and storing.

A reader returns a :class:`RawGraph`: either a time-stamped event stream (SNAP, Bitcoin, Reddit,
JODIE, CollegeMsg), or a list of ready snapshots (AS-733, PyTorch Geometric Temporal JSON), or both,
always with dense node ids ``0..N-1`` and the table that maps them back to the source's ids.
Discretisation (:mod:`dynagnn.data.discretize`) turns it into :class:`Snapshots`, the form the
store writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class EventStream:
    """Time-sorted events ``src -> dst`` at time ``t``.

    src, dst: int64 [E], dense node ids. t: int64 or float64 [E], non-decreasing.
    w: float32 [E] or None (weight of each event, e.g. a Bitcoin rating).
    label: int64 [E] or None (JODIE state label, Reddit link sentiment).
    features: float32 [E, Fe] or None (JODIE/Reddit edge features).
    order: int64 [E] or None: the source row of each event when the source was not in time order
    (event i is the source's data row ``order[i]``; None: event i is row i). Ingest's checks use
    it to name a bad event's line, then drop it.
    negatives: (event int64 [M], dst int64 [M, K]) or None: pre-generated evaluation negatives (TGB's):
    K negative destinations for the source of each listed event, events in increasing order. The
    event task scores those events against them instead of drawing its own random negatives.
    split: int8 [E] or None: the source's own split of the events (TGL's ``ext_roll``, TGB's): 0 train,
    1 validation, 2 test. The event task then uses it instead of its time quantiles.
    """

    src: np.ndarray
    dst: np.ndarray
    t: np.ndarray
    w: np.ndarray | None = None
    label: np.ndarray | None = None
    features: np.ndarray | None = None
    order: np.ndarray | None = None
    negatives: tuple[np.ndarray, np.ndarray] | None = None
    split: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.src.shape[0])


@dataclass
class SnapshotList:
    """Snapshots as the source gives them: one (row, col, weight) triple per snapshot.

    rows[t], cols[t]: int64 [nnz_t] dense node ids. weights[t]: float32 [nnz_t] or None.
    times: int64 or float64 [T], the time each snapshot stands for (a date as YYYYMMDD, or the
    index).
    """

    rows: list[np.ndarray]
    cols: list[np.ndarray]
    weights: list[np.ndarray] | None
    times: np.ndarray

    def __len__(self) -> int:
        return len(self.rows)


@dataclass
class RawGraph:
    """What a reader returns.

    num_nodes: N. node_ids: [N] original id of each dense id (int64 or str objects).
    node_labels: [N] (static, e.g. PubMed's class) or [T, N] (per snapshot) or None.
    node_features: float32 [N, F] or [T, N, F] or None.
    time_unit: what one unit of ``events.t`` means ("s", "year", "day", "index", ...).
    directed: whether the source's edges have a direction.
    sources: the input files, hashed into the store's checksum.
    row_source: where a text reader's data rows came from (see :class:`RowSource`), so that a check
    after reading can name the line of a bad event; None for other sources.
    """

    num_nodes: int
    node_ids: np.ndarray
    events: EventStream | None = None
    snapshots: SnapshotList | None = None
    node_labels: np.ndarray | None = None
    node_features: np.ndarray | None = None
    time_unit: str = "index"
    directed: bool = True
    sources: list[Path] = field(default_factory=list)
    name: str = ""
    row_source: RowSource | None = None


class RowSource:
    """Maps a data row of a text source (0-based, in file order) to its 1-based line number.

    ``line_of`` re-reads the file up to that row; it runs only on the error path, so a reader
    keeps no per-row line table.
    """

    def __init__(self, path: Path, line_of: Callable[[int], int | None]):
        self.path = Path(path)
        self.line_of = line_of


@dataclass
class Snapshots:
    """T snapshots in the store's layout: edges of all snapshots concatenated.

    offsets: int64 [T+1]; row, col: int64 [nnz], each snapshot sorted by (row, col) without
    duplicates; weight: float32 [nnz]; time: int64 [T], or float64 [T] when the windows start at
    fractional times (float source times, or a fractional width or start). directed: False when every snapshot is
    symmetric (each undirected edge stored in both directions).
    """

    offsets: np.ndarray
    row: np.ndarray
    col: np.ndarray
    weight: np.ndarray
    time: np.ndarray
    num_nodes: int
    directed: bool = True

    @property
    def num_snapshots(self) -> int:
        return int(self.offsets.shape[0] - 1)

    def edges(self, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row, col, weight) of snapshot t, views into the concatenated arrays."""
        a, b = int(self.offsets[t]), int(self.offsets[t + 1])
        return self.row[a:b], self.col[a:b], self.weight[a:b]
