"""Negative edges for evaluating temporal link prediction: random, historical and inductive.

Poursafaei et al. (NeurIPS 2022) showed that random negatives saturate: on UCI every memory model
scores 89-97 AP against them, while negatives drawn from the graph's own past separate the models.
DyGLib evaluates with three samplers, reproduced here per batch of evaluation events
``[start, end]`` (the times of its first and last event):

- ``random``: the positive's source against a destination drawn uniformly (:mod:`dynagnn.tasks.events`
  draws these itself, K per positive, for AP and MRR; this module serves the other two);
- ``historical``: edges seen at or before ``start`` that do not occur anywhere in ``[start, end]``:
  links that were and are not now;
- ``inductive``: the same, restricted to edges first seen after ``observed_end`` (the end of
  training for validation, of validation for test): links the model never saw in training.

Like DyGLib, a batch that has fewer such edges than it needs fills the rest with distinct edges
drawn uniformly from (distinct sources × distinct destinations of the history) other than the
batch's own positives; unlike DyGLib, which says nothing of it, :class:`NegativeEdges.of_kind` marks
which negatives were drawn from the kind's pool, so that a run reports how much fell back to random
(the silent fallback is the bug DyGLib's users report; a filled edge may happen to be of the kind
too, and is not counted). The inductive setting's own pass (events touching unseen nodes) draws
from a history of its events alone, as DyGLib's new-node samplers do. Every batch's draw comes from its own generator
``(seed, batch)``, so the negatives are fixed whatever else runs.

Edges are directed (src, dst) keys ``src * N + dst``; the stream's distinct edges are kept sorted by
the time each was first seen, so the edges seen by a time are a prefix and each batch costs one pass
over them.

Users: :class:`dynagnn.tasks.events.EventLinkTask` (the event models' validation and test batches)
and :class:`dynagnn.tasks.snapshot.LinkPrediction` (the snapshot link task: an edge's time is its
snapshot, and a batch is the target snapshot t+1), both by option ``eval_negative_kind``, and
through :class:`NegativeKinds` by ``report_negative_kinds``: the other kinds scored beside it in the
same evaluation (DyGLib trains once and evaluates the kept model under each kind). It sits in
``tasks/`` beside the metrics it feeds and imports only :mod:`dynagnn.sortedkeys` and the errors.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np

from dynagnn.errors import ConfigError
from dynagnn.sortedkeys import isin_sorted, unique_inverse, unique_sorted

KINDS = ("random", "historical", "inductive")


class NegativeKinds:
    """A link task's evaluation negatives: the run's kind (``negative_kind``, which picks the kept
    epoch) and the kinds reported beside it (``report_kinds``), each scored from the same model state
    with its metrics prefixed ``<kind>_`` (``val_historical_ap``)."""

    negative_kind: str = "random"
    report_kinds: tuple[str, ...] = ()

    def set_kinds(self, negative_kind: str, report_kinds: Sequence[str] = ()) -> None:
        """The run's kind and the reported ones, each as :meth:`resolve_kind` resolves it on this task's
        data; ConfigError, in one line, for an unknown kind or a reported kind that is the run's own."""
        for kind in (negative_kind, *report_kinds):
            if kind not in KINDS:
                raise ConfigError(f"negative kind {kind!r}: expected one of {', '.join(KINDS)}")
        if negative_kind in report_kinds or len(set(report_kinds)) != len(report_kinds):
            raise ConfigError(f"report_negative_kinds {list(report_kinds)}: each kind once, and not the run's "
                              f"eval_negative_kind ({negative_kind}), whose metrics are the unprefixed ones")
        self.negative_kind = self.resolve_kind(negative_kind)
        self.report_kinds = tuple(self.resolve_kind(k) for k in report_kinds)

    def resolve_kind(self, kind: str) -> str:
        """The negatives ``kind`` stands for on this task's data (a task with stored ones says so)."""
        return kind

    @contextmanager
    def kind(self, kind: str) -> Iterator[None]:
        """Within the block the evaluation negatives are of ``kind``."""
        saved = self.negative_kind
        self.negative_kind = self.resolve_kind(kind)
        try:
            yield
        finally:
            self.negative_kind = saved

    def every_kind(self, metrics_of: Callable[[], dict[str, float]]) -> dict[str, float]:
        """``metrics_of()`` under the run's kind, then under each reported kind with its keys
        prefixed ``<kind>_``; ``metrics_of`` restores whatever state its scoring changes."""
        out = dict(metrics_of())
        for kind in self.report_kinds:
            with self.kind(kind):
                out.update({f"{kind}_{k}": v for k, v in metrics_of().items()})
        return out


@dataclass
class NegativeEdges:
    """One batch's negatives: ``src``, ``dst`` int64 [n]; ``of_kind`` bool [n], False where an edge
    was drawn at random because the batch had too few edges of the asked kind."""

    src: np.ndarray
    dst: np.ndarray
    of_kind: np.ndarray


class EdgeHistory:
    """The distinct directed edges of a stream, ordered by the time each was first seen.

    ``src``, ``dst`` int64 [E], ``t`` float [E] in time order; ``num_nodes`` N (keys ``src·N + dst``).
    """

    def __init__(self, src: np.ndarray, dst: np.ndarray, t: np.ndarray, num_nodes: int):
        self.n = int(num_nodes)
        self.src, self.dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        self.t = np.asarray(t, dtype=np.float64)
        if self.t.size > 1 and (self.t[1:] < self.t[:-1]).any():
            raise ValueError("EdgeHistory needs events in time order")
        self.keys = self.src * self.n + self.dst
        uniq, inv = unique_inverse(self.keys)
        first = np.full(uniq.size, np.inf)
        np.minimum.at(first, inv, self.t)
        order = np.argsort(first, kind="stable")
        self.edge_keys, self.first_seen = uniq[order], first[order]     # by first time seen
        self.sources, self.destinations = unique_sorted(self.src), unique_sorted(self.dst)

    def seen_by(self, time: float) -> int:
        """How many distinct edges were first seen at or before ``time`` (a prefix of edge_keys)."""
        return int(np.searchsorted(self.first_seen, time, side="right"))

    def occurring(self, start: float, end: float) -> np.ndarray:
        """Sorted distinct keys of the edges with an event in ``[start, end]``."""
        lo, hi = np.searchsorted(self.t, start, side="left"), np.searchsorted(self.t, end, side="right")
        return unique_sorted(self.keys[lo:hi])

    def candidates(self, kind: str, start: float, end: float, observed_end: float | None = None) -> np.ndarray:
        """Keys of the edges of ``kind`` (historical or inductive) for a batch over ``[start, end]``."""
        seen = self.edge_keys[:self.seen_by(start)]
        if kind == "inductive":
            if observed_end is None:
                raise ValueError("inductive negatives need observed_end (the end of the observed period)")
            seen = self.edge_keys[self.seen_by(observed_end):self.seen_by(start)] if start > observed_end else seen[:0]
        elif kind != "historical":
            raise ValueError(f"negative kind {kind!r}: candidates exist for historical and inductive")
        return seen[~isin_sorted(seen, self.occurring(start, end))]

    def sample(self, kind: str, size: int, start: float, end: float, rng: np.random.Generator,
               observed_end: float | None, batch_src: np.ndarray, batch_dst: np.ndarray,
               loops: bool = True) -> NegativeEdges:
        """``size`` negatives of ``kind`` for a batch over ``[start, end]`` whose positives are
        ``batch_src`` -> ``batch_dst``: distinct edges of the kind drawn without replacement, the rest
        (if too few) distinct edges drawn uniformly from sources × destinations other than the
        batch's positives (``loops`` False: and no self-loop)."""
        if kind not in ("historical", "inductive"):
            raise ValueError(f"negative kind {kind!r}: expected historical or inductive (random negatives are "
                             "the task's own)")
        pool = self.candidates(kind, start, end, observed_end)
        take = min(int(size), pool.size)
        keys = rng.choice(pool, size=take, replace=False) if take else pool[:0]
        own = unique_sorted(np.asarray(batch_src, dtype=np.int64) * self.n + np.asarray(batch_dst, dtype=np.int64))
        fill = self._random_fill(int(size) - take, own, rng, loops)
        keys = np.concatenate([keys, fill])
        of_kind = np.arange(keys.size) < take
        return NegativeEdges(keys // self.n, keys % self.n, of_kind)

    def _random_fill(self, size: int, excluded: np.ndarray, rng: np.random.Generator,
                     loops: bool = True) -> np.ndarray:
        """``size`` keys uniform over sources × destinations, none in the sorted ``excluded`` (nor a
        self-loop, unless ``loops``), distinct while there are enough (DyGLib draws without
        replacement unless too few remain)."""
        out = np.zeros(0, dtype=np.int64)
        if size <= 0:
            return out
        # the keys a fill may draw: sources × destinations, less the excluded ones among them (and loops)
        ex = excluded[isin_sorted(excluded // self.n, self.sources) & isin_sorted(excluded % self.n, self.destinations)]
        room = self.sources.size * self.destinations.size - ex.size
        if not loops:
            room -= int(isin_sorted(self.sources, self.destinations).sum()) - int(np.count_nonzero(ex // self.n == ex % self.n))
        if room <= 0:
            raise ValueError("every possible edge is a positive of the batch: no negative can be drawn")
        while out.size < size:
            need = size - out.size
            keys = (self.sources[rng.integers(0, self.sources.size, 2 * need)] * self.n
                    + self.destinations[rng.integers(0, self.destinations.size, 2 * need)])
            keys = keys[~isin_sorted(keys, excluded)]
            if not loops:
                keys = keys[keys // self.n != keys % self.n]
            if out.size + need <= room:  # distinct: drop repeats, keeping the first draw of each
                keys = np.concatenate([out, keys])
                _, first = np.unique(keys, return_index=True)
                keys = keys[np.sort(first)][out.size:]
            out = np.concatenate([out, keys[:need]])
        return out
