"""Link prediction of every event of a stream (the TGNN protocol of TGN, TGL and DyGLib).

* Split: chronological by time, DyGLib's way: events up to the 70% quantile of the event times
  train, up to the 85% quantile validate, the rest test (events of one timestamp never straddle).
  Where the store carries the source's own split (``events/split``: TGL's ``ext_roll``, TGB's split)
  it is used instead, as it is: 0 train, 1 validation, 2 test (``val`` and ``test`` then unused). It
  must respect time order (no training event after a validation one, no validation event after a
  test one; equal times at a boundary are fine): ``observed_end`` and the memory models assume it,
  and a shuffled split would train on the future, so the task refuses one when it is made.
* Inductive setting (TGN's and DyGLib's): 10% of the nodes (as a count of all nodes) that appear in
  validation or test are drawn by seed and hidden from training: every training event touching one is
  dropped (from the batches, the memory and the training sampler). Validation and test events that
  touch a node the kept training events never saw are the inductive events, scored separately.
* Training negatives: one uniform destination per positive from the training events' destinations,
  drawn afresh each epoch and batch from ``(seed, epoch, batch)``.
* Evaluation negatives: fixed by the seed, ``K`` per event (``eval_negatives``, 100 as TGB) uniform
  over every destination of the stream other than the event's own; for the inductive events (their
  own pass, as DyGLib's) uniform over the destinations of the split's inductive events, as DyGLib
  draws them, so that a negative is as likely as the positive to be a node unseen in training. AP and AUC score each positive
  against its first negative (a balanced set, as DyGLib); MRR ranks each positive among its K
  negatives, ties taking the mean of the best and worst rank (TGB's rule, :func:`metrics.mrr`).
  ``negative_kind`` historical or inductive (Poursafaei et al.; :mod:`dynagnn.tasks.negatives`):
  instead, one negative edge per event, both ends drawn from the stream's past edges of that kind
  over the batch's period; AP and AUC only (an MRR needs K corruptions of one source).

* Stored negatives: where the store carries pre-generated evaluation negatives (``negatives/event``,
  ``negatives/dst``: TGB's protocol, written by a reader of TGB's files), they replace the random
  ones: each listed event against its K stored destinations (AP and AUC on the first, MRR among all),
  and the metrics say ``eval_negative_kind: stored`` (a reported random kind is them too: ``stored_``
  columns). The inductive events' pass scores them against their stored rows as well: TGB has no
  inductive setting, so ``ind_*`` there is TGB's negatives over the events touching unseen nodes,
  not DyGLib's pool.

The task holds indices only; a batch unit is an integer, the index of a batch of ``batch_size``
consecutive events of its split (training batches of the kept training events).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynagnn.errors import ConfigError, StoreError
from dynagnn.sortedkeys import isin_sorted, unique_sorted
from dynagnn.tasks import metrics as M
from dynagnn.tasks.negatives import EdgeHistory, NegativeKinds


@dataclass
class EventSplit:
    """Batch units per split: ``train``, ``val``, ``test`` are lists of batch indices."""

    train: list[int]
    val: list[int]
    test: list[int]


def check_events(events, path) -> None:
    """StoreError unless the stream is non-empty and in time order (never trained on unsorted)."""
    if events is None or len(events) == 0:
        raise ConfigError(f"{path}: the store has no event stream (events/src, events/dst, events/t), which "
                          "the event models tgn, jodie and apan train on; ingest a source with events or "
                          "train a snapshot model")
    t = np.asarray(events.t)
    bad = np.flatnonzero(t[1:] < t[:-1])
    if bad.size:
        i = int(bad[0]) + 1
        raise StoreError(f"{path}: events/t is not in time order: event {i} at {t[i]} comes after event {i - 1} "
                         f"at {t[i - 1]}; re-ingest the source (ingest sorts events by time)")


def check_split_order(t: np.ndarray, masks, path) -> None:
    """ConfigError, in one line naming the store, unless the stored split's training, validation and
    test events (``masks``: bool [E] each) follow each other in time: the latest training event no
    later than the earliest validation one, the latest validation event no later than the earliest test
    one (equal times at a boundary are fine). An empty part is skipped."""
    names = ("training", "validation", "test")
    parts = [(name, t[m]) for name, m in zip(names, masks) if m.any()]
    for (a, ta), (b, tb) in zip(parts, parts[1:]):
        last, first = ta.max(), tb.min()
        if last > first:
            at = [int(v) if float(v).is_integer() else float(v) for v in (last, first)]
            raise ConfigError(f"{path}: the stored split (events/split) does not respect time order: a {a} event "
                              f"at t={at[0]} comes after a {b} event at t={at[1]}; the event task and the memory "
                              "models need training, then validation, then test events in time (a shuffled split "
                              "trains on the future): make the source's split (TGL's ext_roll) follow the times "
                              "and ingest it again")


class EventLinkTask(NegativeKinds):
    """The event link-prediction task over an :class:`~dynagnn.data.types.EventStream`.

    Attributes: ``src``, ``dst`` int64 [E], ``t`` float64 [E]; ``train_events``, ``val_events``,
    ``test_events`` int64 event indices (training ones without the hidden nodes' events);
    ``inductive`` bool [E] (an evaluation event touching a node unseen in training);
    ``split`` an :class:`EventSplit` of batch units.

    The events split by time quantiles (``val``, ``test``: the shares of validation and test), or,
    when ``events.split`` is given (the store's ``events/split``, a source's own split such as TGL's
    ``ext_roll``), by it exactly: 0 train, 1 validation, 2 test; a ConfigError, in one line naming the
    store, when it does not respect time order (:func:`check_split_order`).
    """

    name = "link"
    unit = "event batch"
    primary = "ap"
    maximize = True

    def __init__(self, events, num_nodes: int, batch_size: int = 200, eval_negatives: int = 100,
                 seed: int = 0, val: float = 0.15, test: float = 0.15, new_node_share: float = 0.1,
                 path: str = "store", negative_kind: str = "random", report_kinds=()):
        check_events(events, path)
        self.events = events   # the stream (its edge features are the event models' input)
        self.src = np.asarray(events.src, dtype=np.int64)
        self.dst = np.asarray(events.dst, dtype=np.int64)
        self.t = np.asarray(events.t, dtype=np.float64)
        self.num_nodes, self.seed, self.path = int(num_nodes), int(seed), str(path)
        self.batch_size, self.eval_negatives = int(batch_size), int(eval_negatives)
        if self.eval_negatives < 1:
            raise ConfigError(f"eval_negatives {eval_negatives}: evaluation needs at least 1 negative per event")
        n = self.t.size
        idx = np.arange(n, dtype=np.int64)
        stored_split = getattr(events, "split", None)
        if stored_split is not None:   # the source's own split (TGL's ext_roll, TGB's), as it is
            stored_split = np.asarray(stored_split)
            in_train, in_val, in_test = (stored_split == k for k in (0, 1, 2))
            check_split_order(self.t, (in_train, in_val, in_test), path)
        else:
            val_time, test_time = np.quantile(self.t, [1 - val - test, 1 - test])
            in_train, in_test = self.t <= val_time, self.t > test_time
            in_val = ~in_train & ~in_test
        # the hidden nodes: a share of all nodes, drawn from those active after training
        later = unique_sorted(np.concatenate([self.src[~in_train], self.dst[~in_train]]))
        rng = np.random.default_rng([self.seed, 14])
        hide = int(new_node_share * unique_sorted(np.concatenate([self.src, self.dst])).size)
        self.hidden = np.sort(rng.choice(later, size=min(hide, later.size), replace=False))
        touches = isin_sorted(self.src, self.hidden) | isin_sorted(self.dst, self.hidden)
        self.train_events = idx[in_train & ~touches]
        self.val_events, self.test_events = idx[in_val], idx[in_test]
        seen = unique_sorted(np.concatenate([self.src[self.train_events], self.dst[self.train_events]]))
        self.inductive = ~(isin_sorted(self.src, seen) & isin_sorted(self.dst, seen)) & ~in_train
        b = self.batch_size
        if b < 1:
            raise ConfigError(f"event_batch {b}: a batch needs at least 1 event")
        if b > self.train_events.size:
            raise ConfigError(f"event_batch {b} is larger than the {self.train_events.size} training events of "
                              f"{path}; use at most {self.train_events.size}")
        if self.val_events.size == 0 or self.test_events.size == 0:
            why = ("its stored split (events/split) has no 1 (validation) or no 2 (test)" if stored_split is not None
                   else "their times are too few distinct values for a 70/15/15 split")
            raise ConfigError(f"{path}: the {n} events leave no validation or test events ({why})")
        self.train_dst = unique_sorted(self.dst[self.train_events])
        self.all_dst = unique_sorted(self.dst.copy())
        self._units = {"train": self.train_events, "val": self.val_events, "test": self.test_events}
        nb = {k: -(-v.size // b) for k, v in self._units.items()}
        # units: one integer range per split, so that a unit names its split
        self.offsets = {"train": 0, "val": nb["train"], "test": nb["train"] + nb["val"]}
        self.split = EventSplit(*(list(range(self.offsets[k], self.offsets[k] + nb[k])) for k in ("train", "val", "test")))
        self._eval_neg: dict[tuple[str, bool], np.ndarray] = {}
        # TGB's pre-generated negatives, where the store carries them, stand for the random ones (the
        # run's or a reported kind): checked here, before a model trains, to list every evaluation event
        self.stored = getattr(events, "negatives", None)
        self.set_kinds(negative_kind, report_kinds)
        if self.stored is not None:
            self.eval_negatives = int(self.stored[1].shape[1])
            needed = np.concatenate([self.val_events, self.test_events])
            listed = isin_sorted(needed, np.asarray(self.stored[0], dtype=np.int64))
            if not listed.all():
                raise StoreError(f"{self.path}: {int((~listed).sum())} of the {needed.size} validation and test "
                                 f"events have no stored evaluation negatives (event {int(needed[~listed][0])} first): "
                                 "negatives/event lists every one, or the store carries none")
        # historical and inductive negatives: edges of the whole stream (a batch sees only its past);
        # observed = up to the end of training for validation, of validation for test (DyGLib's)
        self._history: EdgeHistory | None = None
        self.observed_end = {"val": float(self.t[self.train_events].max()), "test": float(self.t[self.val_events].max())}
        self._ind_history: dict[str, EdgeHistory] = {}  # the inductive pass's: its events alone (DyGLib's)
        self.negatives_drawn = {"of_kind": 0, "all": 0}  # evaluation negatives of the asked kind, of all drawn

    def resolve_kind(self, kind: str) -> str:
        """"stored" for "random" on a store that carries TGB's negatives (they are its random ones), else
        ``kind``."""
        return "stored" if kind == "random" and self.stored is not None else kind

    def stored_negatives_of(self, events: np.ndarray) -> np.ndarray:
        """int64 [B, K]: the store's pre-generated negative destinations of ``events`` (TGB's), every
        one listed (checked when the task is made)."""
        event, dst = self.stored
        return dst[np.searchsorted(event, events)]

    def history(self) -> EdgeHistory:
        """The stream's edges by first time seen (built on first use: random negatives need none)."""
        if self._history is None:
            self._history = EdgeHistory(self.src, self.dst, self.t, self.num_nodes)
        return self._history

    def unit_events(self, unit: int) -> tuple[str, np.ndarray]:
        """(split name, event indices int64 [<= B]) of a batch unit."""
        for name in ("test", "val", "train"):
            if unit >= self.offsets[name]:
                i = unit - self.offsets[name]
                ev = self._units[name][i * self.batch_size:(i + 1) * self.batch_size]
                if ev.size == 0:
                    break
                return name, ev
        raise IndexError(f"batch unit {unit} out of range")

    def train_negatives(self, events: np.ndarray, epoch: int, unit: int) -> np.ndarray:
        """int64 [B, 1]: one uniform training destination per event, from (seed, epoch, unit)."""
        rng = np.random.default_rng([self.seed, epoch, unit, 1])
        return self.train_dst[rng.integers(0, self.train_dst.size, size=(events.size, 1))]

    def eval_negatives_of(self, split: str, events: np.ndarray, inductive: bool = False) -> np.ndarray:
        """The fixed negatives of a batch of evaluation events of ``split`` (``inductive``: of the
        inductive pass). Random: int64 [B, K] destinations for each event's source (never the true
        dst, unless the pool has a single destination). Historical or inductive: int64 [B, 1, 2],
        one negative edge (source, destination) per event (DyGLib's: as many as the batch's
        positives, from :class:`~dynagnn.tasks.negatives.EdgeHistory` over the batch's period; the
        inductive pass from a history of its own events, as DyGLib's new-node samplers),
        drawn from ``(seed, split, pass, first event)``; :attr:`negatives_drawn` counts them."""
        if self.negative_kind == "stored":
            return self.stored_negatives_of(events)
        if self.negative_kind != "random":
            history = self.history()
            if inductive:
                if split not in self._ind_history:
                    ev = self._units[split][self.inductive[self._units[split]]]
                    self._ind_history[split] = EdgeHistory(self.src[ev], self.dst[ev], self.t[ev], self.num_nodes)
                history = self._ind_history[split]
            rng = np.random.default_rng([self.seed, {"val": 2, "test": 3}[split], int(inductive), int(events[0]), 5])
            neg = history.sample(self.negative_kind, events.size, float(self.t[events[0]]), float(self.t[events[-1]]),
                                 rng, self.observed_end[split], self.src[events], self.dst[events])
            self.negatives_drawn["of_kind"] += int(neg.of_kind.sum())
            self.negatives_drawn["all"] += int(neg.of_kind.size)
            return np.stack([neg.src, neg.dst], axis=1).reshape(-1, 1, 2)
        key = (split, inductive)
        if key not in self._eval_neg:  # drawn once per split and pass (with their events, for lookups)
            ev = self._units[split]
            if inductive:
                ev = ev[self.inductive[ev]]
            pool = unique_sorted(self.dst[ev]) if inductive else self.all_dst
            rng = np.random.default_rng([self.seed, {"val": 2, "test": 3}[split], int(inductive)])
            neg = pool[rng.integers(0, pool.size, size=(ev.size, self.eval_negatives))]
            for _ in range(20):  # redraw the true destination
                bad = neg == self.dst[ev][:, None]
                if not bad.any() or pool.size < 2:
                    break
                neg[bad] = pool[rng.integers(0, pool.size, size=int(bad.sum()))]
            self._eval_neg[key] = (ev, neg)
        ev, neg = self._eval_neg[key]
        return neg[np.searchsorted(ev, events)]


def split_metrics(task: EventLinkTask, split: str, events: np.ndarray, score_pass) -> dict[str, float]:
    """The metrics of ``split``'s ``events`` from ``score_pass(events, inductive)`` -> (positive
    scores [P], negative scores [P, K]) over the task's fixed negatives: AP, AUC and MRR of all of
    them (:func:`link_metrics`), the same of the inductive events' own pass (``ind_`` prefix, after
    the first pass), no MRR for one negative edge per event, and the share of negatives of the kind.
    A model's memory (the events strategy) and EdgeBank score alike."""
    metrics = link_metrics(*score_pass(events, False), task.batch_size)
    ind = events[task.inductive[events]]
    metrics.update({f"ind_{k}": v for k, v in link_metrics(*score_pass(ind, True), task.batch_size).items()})
    metrics["ind_events"] = float(ind.size)
    if task.negative_kind in ("historical", "inductive"):  # one negative edge per event: no MRR to take
        metrics["mrr"] = metrics["ind_mrr"] = float("nan")
    drawn = task.negatives_drawn
    metrics["negatives_of_kind"] = drawn["of_kind"] / drawn["all"] if drawn["all"] else 1.0
    drawn.update(of_kind=0, all=0)
    return metrics


def _ap_auc(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float]:
    scores = np.concatenate([pos, neg])
    labels = np.concatenate([np.ones(pos.size), np.zeros(neg.size)])
    return M.average_precision(scores, labels), M.auc(scores, labels)


def link_metrics(pos: np.ndarray, neg: np.ndarray, batch: int | None = None) -> dict[str, float]:
    """AP and AUC of positives [P] against their first negative, MRR against all [P, K]; with
    ``batch``, also ``ap_batch``/``auc_batch``: their mean over consecutive batches of that many
    events, which is how DyGLib reports AP and AUC (a score scale drifting over time costs the
    global figures, not these)."""
    keys = ("ap", "auc", "mrr") + (("ap_batch", "auc_batch") if batch else ())
    pos = np.asarray(pos, dtype=np.float64)
    if pos.size == 0:  # a pass without events (a split with no inductive events): nothing to score
        return dict.fromkeys(keys, float("nan"))
    neg = np.asarray(neg, dtype=np.float64).reshape(pos.size, -1)
    ap, auc = _ap_auc(pos, neg[:, 0])
    out = {"ap": ap, "auc": auc, "mrr": M.mrr(pos, neg)}
    if batch:
        per = np.array([_ap_auc(pos[i:i + batch], neg[i:i + batch, 0]) for i in range(0, pos.size, batch)])
        out.update(ap_batch=float(per[:, 0].mean()), auc_batch=float(per[:, 1].mean()))
    return out
