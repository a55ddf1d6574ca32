"""EdgeBank (Poursafaei et al., "Towards Better Evaluation for Dynamic Link Prediction", NeurIPS 2022):
the memorisation baseline every temporal link-prediction leaderboard shows beside the models.

EdgeBank is trained by nothing. It keeps a bank of the edges seen so far and scores a queried edge 1
when it is in the bank, else 0. Two variants, as DyGLib runs them:

- ``unlimited``: the bank holds every edge seen before the query;
- ``window``: it holds only those seen within the last ``W`` time units, where ``W`` is the span of
  the test period (the paper's time-window EdgeBank with DyGLib's fixed proportion: its test share of
  the stream is the test span).

What "seen before the query" means follows each task's own protocol, so that EdgeBank is scored by
the same code and on the same fixed negatives as every model:

- event link task (:class:`~dynagnn.tasks.events.EventLinkTask`): a batch of evaluation events is
  scored against the kept training events, the validation events (for test) and the events of the
  split's earlier batches (DyGLib's EdgeBank adds each batch to its history after scoring it); the
  inductive pass's batches against the same bank, every event before the batch (EdgeBank forgets no
  edge for touching a seen node); the metrics are :func:`~dynagnn.tasks.events.split_metrics`';
- snapshot link task (:class:`~dynagnn.tasks.snapshot.LinkPrediction`): the window ending at t is
  scored on snapshot t+1's edges against the edges of snapshots 0..t (what a snapshot model's window
  can have read), the window variant keeping the last ``W`` snapshots, W the test targets' count;
  the metrics are :meth:`~dynagnn.tasks.snapshot.LinkPrediction.score_units`'.

Ties: every edge in the bank scores 1, so AP counts a tie group once at its threshold and MRR takes
the mean of the optimistic and pessimistic rank (:mod:`dynagnn.tasks.metrics`), the rule TGB states.

It sits in ``tasks/`` beside the two tasks whose evaluation it reuses, and imports nothing above
them. Users: :func:`edgebank_events`, :func:`edgebank_snapshots` (the Python API of the baseline).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dynagnn.errors import ConfigError
from dynagnn.sortedkeys import isin_sorted, unique_sorted

MEMORIES = ("unlimited", "window")


def _check(memory: str) -> None:
    if memory not in MEMORIES:
        raise ConfigError(f"EdgeBank memory {memory!r}: expected one of {', '.join(MEMORIES)}")


def edge_key(src: np.ndarray, dst: np.ndarray, num_nodes: int, directed: bool = True) -> np.ndarray:
    """int64 keys ``u·N + v`` of the edges (u, v); undirected: of (min, max)."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if not directed:
        src, dst = np.minimum(src, dst), np.maximum(src, dst)
    return src * np.int64(num_nodes) + dst


def bank_scores(bank: np.ndarray, src: np.ndarray, dst: np.ndarray, num_nodes: int,
                directed: bool = True) -> np.ndarray:
    """float64 [M]: 1 where the edge (src, dst) is in the sorted key array ``bank``, else 0."""
    return isin_sorted(edge_key(src, dst, num_nodes, directed), bank).astype(np.float64)


def edgebank_events(task, split: str, memory: str = "unlimited") -> dict[str, float]:
    """EdgeBank's metrics on the event task's ``split`` ("val" or "test"), the keys of the events
    strategy's evaluation, on the task's fixed negatives of its ``negative_kind`` (and, prefixed, of
    its ``report_kinds``)."""
    _check(memory)
    if split not in ("val", "test"):
        raise ValueError(f"split {split!r}: EdgeBank is evaluated on val or test")
    before = [task.train_events] + ([task.val_events] if split == "test" else [])
    past = np.concatenate(before)
    span = float(task.t[task.test_events].max() - task.t[task.test_events].min())
    units = task.split.val if split == "val" else task.split.test
    events = np.concatenate([task.unit_events(u)[1] for u in units])
    b = task.batch_size

    def score_pass(ev, inductive):
        pos_all, neg_all = [], []
        for i in range(0, ev.size, b):
            batch = ev[i:i + b]
            first = int(np.searchsorted(events, batch[0]))       # the split's events before this batch
            seen = np.concatenate([past, events[:first]])
            if memory == "window":
                seen = seen[task.t[seen] >= task.t[batch[0]] - span]
            bank = unique_sorted(edge_key(task.src[seen], task.dst[seen], task.num_nodes))
            neg = task.eval_negatives_of(split, batch, inductive)
            pos_all.append(bank_scores(bank, task.src[batch], task.dst[batch], task.num_nodes))
            if neg.ndim == 3:     # one negative edge (source, destination) per event
                neg_all.append(bank_scores(bank, neg[:, :, 0], neg[:, :, 1], task.num_nodes).reshape(-1, 1))
            else:                 # destinations for the event's own source
                src = np.repeat(task.src[batch], neg.shape[1]).reshape(neg.shape)
                neg_all.append(bank_scores(bank, src, neg, task.num_nodes).reshape(neg.shape))
        if not pos_all:
            return np.zeros(0), np.zeros((0, task.eval_negatives))
        return np.concatenate(pos_all), np.concatenate(neg_all)

    from dynagnn.tasks.events import split_metrics

    return task.every_kind(lambda: split_metrics(task, split, events, score_pass))


def edgebank_snapshots(task, units: Sequence[int], memory: str = "unlimited",
                       window: int | None = None) -> dict[str, float]:
    """EdgeBank's metrics on the snapshot link task's windows ending at ``units`` (each scored on
    t+1 against snapshots 0..t; ``window``: the snapshots the window variant keeps, required for it:
    the test targets' count), the keys of the task's evaluation."""
    _check(memory)
    if memory == "window" and (window is None or int(window) < 1):
        raise ConfigError("EdgeBank's window memory needs window: the snapshots it keeps (the test span), at least 1")
    directed = bool(task.store.directed)
    keys, banks = {}, {}   # per snapshot, per window end: the positives, the negatives and every kind share them

    def snapshot_keys(s: int) -> np.ndarray:
        if s not in keys:
            row, col, _ = task.store.edges(s)
            keys[s] = unique_sorted(edge_key(row, col, task.num_nodes, directed))
        return keys[s]

    def score(t, src, dst):
        if t not in banks:
            first = 0 if memory == "unlimited" else max(0, t + 1 - int(window))
            banks[t] = unique_sorted(np.concatenate([snapshot_keys(s) for s in range(first, t + 1)]))
        return bank_scores(banks[t], src, dst, task.num_nodes, directed)

    return task.every_kind(lambda: task.score_units(list(units), score))
