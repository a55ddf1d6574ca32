"""Training tasks over snapshot windows: what a window's last embedding is asked to predict.

A window ends at snapshot t (it holds t-l+1..t). The tasks:

* ``link``: link prediction of snapshot t+1 from the embeddings at t (EvolveGCN's setting). The
  positives are t+1's edges (each undirected edge once, no self-loops); training draws ``neg_ratio``
  uniform non-edges per positive, afresh every epoch; evaluation draws, once and seeded,
  ``eval_negatives`` corrupted destinations per positive. AUC and AP score the positives against
  the first corruption of each (a balanced set); MRR ranks each positive among all of its own
  corruptions. A training window whose t+1 has no edge (an empty day kept at ingest) is *scored on
  its negatives*: every pair of an empty snapshot is a non-edge, so the loss is that of
  ``neg_ratio`` uniform non-self pairs per vertex (``neg_ratio·N``, or ``neg_ratio·max_edges`` when
  ``max_edges`` is smaller), all labelled 0. Such windows are counted in the log when the run is
  prepared (:meth:`LinkPrediction.empty_windows`). Evaluation has no positive to rank there, so an
  evaluation window with an empty t+1 adds nothing to AUC, AP or MRR.
* ``classify``: node classification. The targets at t are the labelled vertices active in snapshot
  t (degree > 0), so a step asks for the class of the vertices the graph shows at that time (for
  PubMed: papers cited or citing within the edge life). Accuracy and macro-F1. The labels must be
  stored as integers (or booleans): real-valued targets are refused, never truncated to classes, and
  ``auto`` picks ``classify`` only for integer labels.
* ``regress``: node regression of ``labels[t]`` for every vertex (england_covid case counts). MSE, MAE.

Time steps are split chronologically: the first 70% of the valid window ends train, the next 15%
validate, the last 15% test (at least one step each).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from dynagnn.errors import ConfigError
from dynagnn.sortedkeys import isin_sorted
from dynagnn.models.heads import LinkPredictor, NodeClassifier, NodeRegressor
from dynagnn.tasks import metrics as M
from dynagnn.tasks.negatives import KINDS, EdgeHistory, NegativeKinds

TASKS = ("link", "classify", "regress")

log = logging.getLogger("dynagnn.tasks")


@dataclass
class Split:
    train: list[int]
    val: list[int]
    test: list[int]


def chronological_split(steps: list[int], val: float = 0.15, test: float = 0.15) -> Split:
    n = len(steps)
    if n < 3:
        raise ConfigError(f"only {n} time step(s) can end a window: need at least 3 (train, validation, "
                          "test); use a shorter window or more snapshots")
    n_test = max(1, round(test * n))
    n_val = max(1, round(val * n))
    n_train = n - n_val - n_test
    if n_train < 1:
        raise ConfigError(f"{n} time steps leave none for training after validation and test")
    return Split(steps[:n_train], steps[n_train:n_train + n_val], steps[n_train + n_val:])


def class_labels(dtype) -> bool:
    """Whether labels of ``dtype`` are class labels: integers or booleans. A float array is a
    real-valued target even when its values happen to be whole (case counts): it is not classified."""
    return np.dtype(dtype).kind in "iub"


def infer_task(store) -> str:
    """``classify`` for integer (or boolean) labels, ``regress`` for any other labels, else ``link``."""
    if not store.has("labels/y"):
        return "link"
    return "classify" if class_labels(store.root["labels/y"].dtype) else "regress"


class Task:
    name = ""
    primary = ""        # validation metric early stopping watches
    unit = "snapshot"   # what a training unit is, in messages (a window's last snapshot)
    prepares_inputs = False  # loss_inputs gives something worth preparing ahead (in another process)
    maximize = True

    def __init__(self, store, seed: int = 0):
        self.store = store
        self.num_nodes = store.num_nodes
        self.num_snapshots = store.num_snapshots
        self.seed = int(seed)

    def last_step(self) -> int:
        return self.num_snapshots - 1

    def steps(self, window: int) -> list[int]:
        if window < 1:
            raise ConfigError(f"window {window}: must be at least 1")
        if window > self.last_step() + 1:
            raise ConfigError(f"window of {window} snapshots is longer than the {self.num_snapshots} "
                              f"snapshots the {self.name} task can use")
        return list(range(window - 1, self.last_step() + 1))

    def head(self, dim: int) -> torch.nn.Module:
        raise NotImplementedError

    def loss_inputs(self, t: int, epoch: int) -> torch.Tensor | None:
        """The loss's model-independent inputs at ``t`` in ``epoch`` as one int64 tensor (so that
        another process can prepare them and send them in one message: BLAD's p1), or None when
        there is nothing worth preparing ahead (default)."""
        return None

    def loss_inputs_numel(self, t: int) -> int:
        """Elements of :meth:`loss_inputs` at ``t`` (the same in every epoch; 0 when there are none),
        without preparing them."""
        return 0

    def loss(self, head, h: torch.Tensor, t: int, epoch: int, inputs: torch.Tensor | None = None) -> torch.Tensor:
        """The loss of embeddings ``h`` [N, H] at ``t``; ``inputs``: :meth:`loss_inputs`' tensor when
        it was prepared elsewhere (else the loss prepares them)."""
        raise NotImplementedError

    def evaluate(self, head, embeddings: dict[int, torch.Tensor]) -> dict[str, float]:
        raise NotImplementedError

    def nan_cause(self, ends) -> str | None:
        """What in the data makes the loss of the step ending at ``ends`` non-finite, or None when
        the data is clean there (then the optimisation diverged). Run only on that error path, so
        that a NaN of the data is never blamed on the learning rate: it reads the features and edge
        weights of every snapshot up to the step's last one."""
        last = max(int(t) for t in ends)
        if self.store.has("features/x"):
            static = self.store.root["features/x"].ndim == 2
            for t in ([None] if static else range(last + 1)):
                x = np.asarray(self.store.features(t))
                bad = ~np.isfinite(x)
                if bad.any():
                    v = int(np.argwhere(bad)[0][0])
                    where = f"vertex {v}" if static else f"snapshot {t}, vertex {v}"
                    return f"{self.store.path}: features/x holds {int(bad.sum())} non-finite value(s) ({where})"
        for t in range(min(last + 1, self.num_snapshots - 1) + 1):
            w = self.store.edges(t)[2]
            if not np.isfinite(w).all():
                return f"{self.store.path}: snapshots/weight of snapshot {t} holds a non-finite edge weight"
        for t in ends:
            cause = self._target_cause(int(t))
            if cause:
                return cause
        return None

    def _target_cause(self, t: int) -> str | None:
        """What in the targets at ``t`` makes its loss non-finite (None: nothing)."""
        return None


class LinkPrediction(NegativeKinds, Task):
    name = "link"
    primary = "auc"
    prepares_inputs = True  # the negative sampling

    def __init__(self, store, seed: int = 0, neg_ratio: int = 1, eval_negatives: int = 20,
                 max_edges: int | None = None, negative_kind: str = "random", report_kinds=()):
        super().__init__(store, seed)
        self.neg_ratio = int(neg_ratio)
        self.eval_negatives = int(eval_negatives)
        self.max_edges = max_edges
        self.set_kinds(negative_kind, report_kinds)
        self._pos: dict[int, np.ndarray] = {}
        self._edges: dict[int, np.ndarray] = {}
        self._eval: dict[tuple[str, int], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        self._history: EdgeHistory | None = None
        self._observed_end: dict[int, int] = {}   # an evaluation unit's end of the observed period

    def observe_split(self, split) -> None:
        """The run's split of window ends, for inductive negatives: a validation unit's observed period
        ends with the last training target snapshot, a test unit's with the last validation one (the
        period a model was trained on, or validated on, as DyGLib's)."""
        train_end = max(split.train) + 1 if len(split.train) else 0
        val_end = max(split.val) + 1 if len(split.val) else train_end
        self._observed_end = {**{int(t): train_end for t in split.val}, **{int(t): val_end for t in split.test}}

    def history(self) -> EdgeHistory:
        """Every snapshot's edges as a stream (the time of an edge: its snapshot), u < v when
        undirected, without self-loops: what historical and inductive negatives are drawn from."""
        if self._history is None:
            n = np.int64(self.num_nodes)
            src, dst, t = [], [], []
            for s in range(self.num_snapshots):   # one at a time: the whole store's edges are never read at once
                row, col, _ = self.store.edges(s)
                keep = row != col if self.store.directed else row < col
                src.append(np.asarray(row[keep], dtype=np.int64))
                dst.append(np.asarray(col[keep], dtype=np.int64))
                t.append(np.full(int(keep.sum()), s, dtype=np.float64))
            self._history = EdgeHistory(np.concatenate(src), np.concatenate(dst), np.concatenate(t), int(n))
        return self._history

    def last_step(self) -> int:
        return self.num_snapshots - 2  # the window's t predicts t+1

    def head(self, dim: int):
        return LinkPredictor(dim)

    def edge_keys(self, t: int) -> np.ndarray:
        """Sorted keys ``u·N + v`` of every stored edge of snapshot t+1 (both directions when undirected)."""
        if t not in self._edges:
            self.read_targets([t])
        return self._edges[t]

    def read_targets(self, ends) -> None:
        """Read the edges of every t+1 of ``ends`` not yet read, in one slice of the store's arrays
        (:meth:`~dynagnn.data.store.SnapshotStore.window_edges`): a read per snapshot cost a trainer's
        build 0.78 s on CollegeMsg daily's 134 training targets, against 0.02 s in one slice."""
        missing = sorted({int(t) for t in ends} - set(self._edges))
        if not missing:
            return
        n = np.int64(self.num_nodes)
        first, wanted = missing[0], set(missing)
        for t, (row, col, _) in enumerate(self.store.window_edges(first + 1, missing[-1] + 2), start=first):
            if t in wanted:
                self._edges[t] = row * n + col

    def positives(self, t: int) -> np.ndarray:
        """Sorted keys ``u·N + v`` of snapshot t+1's edges (u < v when undirected), int64."""
        if t not in self._pos:
            keys = self.edge_keys(t)
            row, col = keys // self.num_nodes, keys % self.num_nodes
            keep = row != col if self.store.directed else row < col
            keys = keys[keep]
            if self.max_edges is not None and keys.shape[0] > self.max_edges:
                rng = np.random.default_rng([self.seed, t, 1])
                keys = np.sort(rng.choice(keys, self.max_edges, replace=False))
            self._pos[t] = keys
        return self._pos[t]

    def _non_edges(self, rng, src: np.ndarray, t: int) -> np.ndarray:
        """One uniform destination per source that is neither itself nor a positive of t+1."""
        n = np.int64(self.num_nodes)
        edges = self.edge_keys(t)  # both directions when undirected: excluded either way
        dst = rng.integers(0, n, size=src.shape[0])
        for _ in range(20):
            bad = (dst == src) | isin_sorted(src * n + dst, edges)
            if not bad.any():
                break
            dst[bad] = rng.integers(0, n, size=int(bad.sum()))
        return dst

    def empty_negatives(self) -> int:
        """The negatives a window with an empty t+1 is scored on: ``neg_ratio`` per vertex (per
        ``max_edges`` when that is smaller)."""
        per = self.num_nodes if self.max_edges is None else min(self.num_nodes, int(self.max_edges))
        return self.neg_ratio * max(1, per)

    def empty_windows(self, ends) -> list[int]:
        """The window ends among ``ends`` whose t+1 has no edge to predict (scored on negatives)."""
        self.read_targets(ends)
        return [int(t) for t in ends if self.positives(int(t)).shape[0] == 0]

    def loss_inputs_numel(self, t):
        p = self.positives(t).shape[0]
        return 3 * (p * (1 + self.neg_ratio) if p else self.empty_negatives())

    def loss_inputs(self, t, epoch):
        """int64 [3, E]: source, destination and label (1 positive, 0 negative) of the positives of
        t+1 and ``neg_ratio`` sampled negatives per positive (seeded by seed, epoch and t). When t+1
        has no edge: :meth:`empty_negatives` uniform non-self pairs, all negatives (so the loss is
        finite and says "no edge", which is what t+1 holds)."""
        pos = self.positives(t)
        n = np.int64(self.num_nodes)
        rng = np.random.default_rng([self.seed, epoch, t])
        if pos.shape[0]:
            src = np.repeat(pos // n, self.neg_ratio)
        else:
            k = self.empty_negatives()
            src = np.tile(np.arange(n, dtype=np.int64), -(-k // int(n)))[:k]
        neg_dst = self._non_edges(rng, src, t)
        label = np.concatenate([np.ones(pos.shape[0], dtype=np.int64), np.zeros(src.shape[0], dtype=np.int64)])
        return torch.from_numpy(np.stack([np.concatenate([pos // n, src]), np.concatenate([pos % n, neg_dst]), label]))

    def loss(self, head, h, t, epoch, inputs=None):
        inputs = (self.loss_inputs(t, epoch) if inputs is None else inputs).to(h.device)
        return F.binary_cross_entropy_with_logits(head(h, inputs[:2]), inputs[2].to(h.dtype))

    def eval_pairs(self, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(positive keys [P], negative sources [P, K], negative destinations [P, K], whether each
        negative is of the asked kind [P, K]), fixed for the run. Random: K = ``eval_negatives``
        corrupted destinations of each positive's source. Historical or inductive: K = 1 negative edge
        per positive (:meth:`EdgeHistory.sample` over the target snapshot t+1: edges of the earlier
        snapshots absent from it; inductive, those first seen after the unit's observed period), drawn
        from ``(seed, t)``; where too few, the rest at random, marked."""
        key = (self.negative_kind, t)
        if key not in self._eval:
            pos = self.positives(t)
            n = np.int64(self.num_nodes)
            if self.negative_kind == "random":
                rng = np.random.default_rng([self.seed, t, 2])
                src = np.repeat(pos // n, self.eval_negatives)
                neg = self._non_edges(rng, src, t).reshape(-1, self.eval_negatives)
                self._eval[key] = (pos, src.reshape(neg.shape), neg, np.ones(neg.shape, dtype=bool))
            else:
                if self.negative_kind == "inductive" and t not in self._observed_end:
                    raise ValueError(f"inductive negatives of window {t}: the task was given no split with it "
                                     "among the validation or test units (observe_split)")
                rng = np.random.default_rng([self.seed, t, 2, KINDS.index(self.negative_kind)])
                s = float(t + 1)
                # the fill avoids every edge of t+1 (both directions when undirected, not only the
                # positives max_edges kept) and self-loops, as the random negatives do
                every = self.edge_keys(t)
                neg = self.history().sample(self.negative_kind, pos.shape[0], s, s, rng,
                                            self._observed_end.get(t), every // n, every % n, loops=False)
                self._eval[key] = (pos, neg.src[:, None], neg.dst[:, None], neg.of_kind[:, None])
        return self._eval[key]

    @torch.no_grad()
    def evaluate(self, head, embeddings):
        def score(t, src, dst):
            h = embeddings[t]
            return head(h, torch.stack([torch.from_numpy(src).to(h.device), torch.from_numpy(dst).to(h.device)])).cpu()
        return self.every_kind(lambda: self.score_units(list(embeddings), score))

    def score_units(self, units, score) -> dict[str, float]:
        """The metrics of the windows ending at ``units`` from ``score(t, src, dst)``: the scores of
        the pairs (int64 [M] each) at window t, for the positives of t+1 and their fixed negatives
        (:meth:`eval_pairs`): AUC and AP against the first negative, MRR among all (random ones),
        ``negatives_of_kind`` (historical, inductive). A model's head and EdgeBank score alike."""
        pos_all, neg_all = [], []
        n = np.int64(self.num_nodes)
        of_kind = drawn = 0
        for t in units:
            pos, neg_src, neg_dst, kind = self.eval_pairs(t)
            if pos.shape[0] == 0:
                continue
            pos_all.append(np.asarray(score(t, pos // n, pos % n), dtype=np.float64))
            neg_all.append(np.asarray(score(t, neg_src.reshape(-1), neg_dst.reshape(-1)),
                                      dtype=np.float64).reshape(neg_dst.shape))
            of_kind, drawn = of_kind + int(kind.sum()), drawn + kind.size
        out = {"auc": float("nan"), "ap": float("nan"), "mrr": float("nan")}
        if pos_all:
            sp, sn = np.concatenate(pos_all), np.concatenate(neg_all)
            scores = np.concatenate([sp, sn[:, 0]])
            labels = np.concatenate([np.ones_like(sp), np.zeros_like(sp)])
            out = {"auc": M.auc(scores, labels), "ap": M.average_precision(scores, labels), "mrr": M.mrr(sp, sn)}
        if self.negative_kind != "random":   # one negative edge per positive: no MRR to take
            out["mrr"] = float("nan")
            out["negatives_of_kind"] = of_kind / drawn if drawn else 1.0
        return out


class NodeClassification(Task):
    name = "classify"
    primary = "accuracy"

    def __init__(self, store, seed: int = 0):
        super().__init__(store, seed)
        if not store.has("labels/y"):
            raise ConfigError(f"{store.path}: node classification needs labels (labels/y), this store has none")
        y = np.asarray(store.labels())
        if not class_labels(y.dtype):
            raise ConfigError(f"{store.path}: node classification needs integer class labels, labels/y holds "
                              f"{y.dtype} values; for real-valued targets use task regress (--task regress)")
        self.static = y.ndim == 1
        self.labels = torch.from_numpy(y.astype(np.int64))
        self.num_classes = int(y.max()) + 1
        if self.num_classes < 2:
            raise ConfigError(f"{store.path}: node classification needs at least 2 classes, labels have {self.num_classes}")
        self._targets: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def head(self, dim):
        return NodeClassifier(dim, self.num_classes)

    def targets(self, t: int) -> tuple[torch.Tensor, torch.Tensor]:
        if t not in self._targets:
            row, col, _ = self.store.edges(t)
            active = np.bincount(row, minlength=self.num_nodes) > 0
            if self.store.directed:  # a vertex with only incoming edges (a cited paper) is active too
                active |= np.bincount(col, minlength=self.num_nodes) > 0
            y = self.labels if self.static else self.labels[t]
            nodes = np.flatnonzero(active & (y.numpy() >= 0))
            idx = torch.from_numpy(nodes)
            self._targets[t] = (idx, y[idx])
        return self._targets[t]

    def loss(self, head, h, t, epoch, inputs=None):
        idx, y = self.targets(t)
        idx, y = idx.to(h.device), y.to(h.device)
        return F.cross_entropy(head(h[idx]), y)

    def _target_cause(self, t):
        if self.targets(t)[0].shape[0] == 0:
            return (f"{self.store.path}: snapshot {t} has no labelled vertex with an edge, so there is nothing to "
                    "classify there (ingest with empty: error, or drop that snapshot)")
        return None

    @torch.no_grad()
    def evaluate(self, head, embeddings):
        logits, ys = [], []
        for t, h in embeddings.items():
            idx, y = self.targets(t)
            logits.append(head(h[idx.to(h.device)]).cpu())
            ys.append(y)
        lg, y = torch.cat(logits), torch.cat(ys)
        return {"accuracy": M.accuracy(lg, y), "macro_f1": M.macro_f1(lg, y)}


class NodeRegression(Task):
    name = "regress"
    primary = "mse"
    maximize = False

    def __init__(self, store, seed: int = 0):
        super().__init__(store, seed)
        if not store.has("labels/y"):
            raise ConfigError(f"{store.path}: node regression needs targets (labels/y), this store has none")
        y = np.asarray(store.labels(), dtype=np.float32)
        if y.ndim != 2 or y.shape[0] != self.num_snapshots:
            raise ConfigError(f"{store.path}: node regression needs one target per snapshot and vertex "
                              f"[T, N], labels have shape {list(y.shape)}")
        self.y = torch.from_numpy(y)

    def head(self, dim):
        return NodeRegressor(dim)

    def loss(self, head, h, t, epoch, inputs=None):
        return F.mse_loss(head(h).reshape(-1), self.y[t].to(h.device))

    def _target_cause(self, t):
        bad = ~torch.isfinite(self.y[t])
        if bool(bad.any()):
            return (f"{self.store.path}: labels/y holds {int(bad.sum())} non-finite target(s) at snapshot {t} "
                    f"(vertex {int(bad.nonzero()[0, 0])})")
        return None

    @torch.no_grad()
    def evaluate(self, head, embeddings):
        pred = torch.cat([head(h).reshape(-1).cpu() for h in embeddings.values()])
        y = torch.cat([self.y[t] for t in embeddings])
        return {"mse": M.mse(pred, y), "mae": M.mae(pred, y)}


def make_task(name: str, store, seed: int = 0, **options) -> Task:
    name = infer_task(store) if name in (None, "auto") else name
    if name == "link":
        return LinkPrediction(store, seed, **options)
    if options:
        raise ConfigError(f"options {sorted(options)} apply only to the link task")
    if name == "classify":
        return NodeClassification(store, seed)
    if name == "regress":
        return NodeRegression(store, seed)
    raise ConfigError(f"unknown task {name!r}: expected auto, {', '.join(TASKS)}")


def training_ends(store, window: int, task: str = "auto", seed: int = 0) -> list[int]:
    """End snapshots of the training windows of a run on ``store``: the groups a BLAD plan covers,
    which the schedule stage plans and the group strategies train."""
    return list(chronological_split(make_task(task, store, seed).steps(int(window))).train)
