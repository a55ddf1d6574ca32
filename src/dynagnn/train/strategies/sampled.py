"""BGL (NSDI'23): sampled training of a static GNN through a two-level feature cache, with the
training seeds in proximity-aware order, isolated pipeline stages and BGL's partition of the seeds.

The unit of work is a training vertex (a seed); a step is a mini-batch of ``batch_size`` seeds of
this worker. Each epoch orders the worker's seeds (:class:`~dynagnn.graph.order.EpochOrders`,
``order``: BGL's ``proximity`` order, with as many BFS sequences as BGL's shuffling-error check on
the labels chooses before training (:func:`~dynagnn.graph.order.choose_sequences`), generated once
and arranged afresh each epoch, or ``random``), cuts them into mini-batches and feeds them to the
stage pipeline (:mod:`dynagnn.train.stages`): sampler processes draw each batch's neighbours
(``fanouts``, hop 0 = the seeds) and build the model's blocks, the fetch stage reads the input rows
through the feature cache (:mod:`dynagnn.train.cache`: level 1 on the device, level 2 on the host,
the store below), the training stage runs the model. Nothing is loaded whole: the graph's CSR is
built from the store's edges (the union of its snapshots, symmetrised), the features stay in the
store.

Task: node classification of the labelled vertices (``labels/y`` [N], or the last snapshot's row of
[T, N]; a negative label means none). They are split at random, seeded, into train/val/test by
``seed_fractions``. Accuracy and macro-F1.

Several workers: the training seeds are partitioned by BGL's BFS-block assignment
(:func:`~dynagnn.graph.partition.bgl_partition`, ``seed_partitioner: bgl``) or at random (``random``:
a seeded hash of the vertices); every worker has its own caches and pipeline. All workers take the
same number of steps (the most any needs; a worker out of seeds contributes an empty batch); a
step's loss is the mean over all workers' seeds of that step: each worker back-propagates its sum /
the step's total, and the gradients are summed by one all-reduce. Evaluation splits the val/test
seeds over the workers and gathers their predictions.

Baselines as strategies (equals in every other respect): ``sampled_nocache`` (every row from the
store), ``sampled_static`` (PaGraph's static cache of the highest-degree vertices, random order) and
``sampled_random`` (BGL's FIFO, random order).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from dynagnn.errors import ConfigError
from dynagnn.graph.order import EpochOrders, choose_sequences
from dynagnn.graph.partition import bgl_partition, hash_partition
from dynagnn.models.heads import NodeClassifier
from dynagnn.models.sage import SAMPLED_MODELS, SampledGNN
from dynagnn.sortedkeys import row_offsets
from dynagnn.tasks import metrics as M
from dynagnn.train.cache import MIB, FeatureCache, StoreRows
from dynagnn.train.stages import Pipeline
from dynagnn.train.options import Options, Speed, option
from dynagnn.train.strategies.base import Run, Strategy, refuse_graph_input
from dynagnn.tasks.snapshot import Split, class_labels

SEED_PARTITIONERS = ("bgl", "random")
EVAL_EPOCH = 1 << 30   # the epoch of the evaluation batches' sampling keys (a seed sequence takes no negatives)


class SeedClassification:
    """Node classification of seed vertices: ``labels`` int64 [N] (negative: unlabelled)."""

    name = "classify"
    primary = "accuracy"
    maximize = True
    unit = "seed"

    def __init__(self, labels: np.ndarray):
        self.labels = labels
        self.num_classes = int(labels.max()) + 1

    def head(self, dim: int) -> torch.nn.Module:
        return NodeClassifier(dim, self.num_classes)


def seed_labels(store) -> np.ndarray:
    """int64 [N]: the class of every vertex (-1: none); ConfigError for a store without class labels."""
    if not store.has("labels/y"):
        raise ConfigError(f"{store.path}: sampled training classifies vertices and needs labels (labels/y); "
                          "this store has none")
    arr = store.root["labels/y"]
    if not class_labels(arr.dtype) or arr.ndim not in (1, 2):
        raise ConfigError(f"{store.path}: sampled training needs integer class labels per vertex, [N] or [T, N]; "
                          f"labels/y holds {arr.dtype} of shape {list(arr.shape)}")
    y = store.labels() if arr.ndim == 1 else store.labels(store.num_snapshots - 1)
    y = np.asarray(y).astype(np.int64)
    if int((y >= 0).sum()) < 3 or int(y.max()) < 1:
        raise ConfigError(f"{store.path}: sampled training needs at least 3 labelled vertices of at least 2 "
                          "classes")
    return y


def seed_split(labels: np.ndarray, fractions, seed: int) -> Split:
    """The labelled vertices split at random (seeded) into train/val/test by ``fractions`` (each as
    sorted int64 arrays; at least one vertex in each)."""
    fr = [float(f) for f in fractions]
    if len(fr) != 3 or min(fr) <= 0 or sum(fr) > 1 + 1e-9:
        raise ConfigError(f"seed_fractions {list(fractions)}: expected 3 positive fractions (train, val, test) "
                          "summing to at most 1")
    cand = np.flatnonzero(labels >= 0)
    perm = cand[np.random.default_rng([int(seed), 7]).permutation(cand.size)]
    n_val = max(1, int(round(fr[1] * cand.size)))
    n_test = max(1, int(round(fr[2] * cand.size)))
    n_train = max(1, min(int(round(fr[0] * cand.size)), cand.size - n_val - n_test))
    return Split(np.sort(perm[:n_train]), np.sort(perm[n_train:n_train + n_val]),
                 np.sort(perm[n_train + n_val:n_train + n_val + n_test]))


def static_graph(store) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr int64 [N+1], indices int64 [nnz]) of the union of the store's snapshots,
    symmetrised, without self-loops: the graph sampled training samples from."""
    from dynagnn.graph.union import union_graph

    row, col = union_graph(store)
    return row_offsets(row, store.num_nodes), col


def check_fanouts(fanouts) -> tuple[int, ...]:
    f = tuple(int(x) for x in fanouts)
    if not f or min(f) < 1:
        raise ConfigError(f"fanouts {list(fanouts)}: every layer needs a fan-out of at least 1 neighbour "
                          "(one per layer, e.g. [15, 10, 5])")
    return f


@dataclass
class SampledRun(Run):
    """A :class:`Run` of sampled training: the CSR (``indptr``, ``indices``), the store's rows and
    the labels (int64 [N])."""

    indptr: np.ndarray = field(default=None)
    indices: np.ndarray = field(default=None)
    rows: StoreRows = field(default=None)
    labels: np.ndarray = field(default=None)


def check_stage_cores(cores: dict | None) -> None:
    """ConfigError unless every CPU id of ``stage_cores`` is one this process may run on (a stage
    pinned to a CPU that does not exist would fail inside its process)."""
    if not cores or not hasattr(os, "sched_getaffinity"):
        return
    allowed = os.sched_getaffinity(0)
    for stage, ids in cores.items():
        missing = sorted(int(c) for c in ids if int(c) not in allowed)
        if missing:
            raise ConfigError(f"stage_cores {stage}: CPU {missing[0]} is not one this process may run on "
                              f"(allowed: {_ranges(sorted(allowed))})")


def _ranges(ids: list[int]) -> str:
    """``0-3,6`` for [0, 1, 2, 3, 6]."""
    out, start = [], None
    for i, c in enumerate(ids):
        if start is None:
            start = c
        if i + 1 == len(ids) or ids[i + 1] != c + 1:
            out.append(f"{start}-{c}" if c > start else f"{c}")
            start = None
    return ",".join(out)


CORES = {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1}


@dataclass(frozen=True)
class SampledOptions(Options):
    """BGL's sampled training: the sampling, the two-level cache, the order and the isolated stages."""

    fanouts: list = option([15, 10, 5], "sampled strategies (BGL): neighbours sampled per layer, the seeds' first; "
                           "one layer each", type="array", items={"type": "integer", "minimum": 1}, minItems=1)
    batch_size: int = option(1000, "sampled strategies: seeds per mini-batch (per worker)", type="integer", minimum=1)
    cache_policy: str = option("fifo", "sampled: the feature cache's policy (BGL's FIFO, PaGraph's static "
                               "top-degree, none); the baselines sampled_nocache and sampled_static set their own",
                               enum=["fifo", "static", "none"])
    # the two levels, or the host's only
    cache_l1_mb: float = option(64, "sampled: the feature cache's level 1 (on the training device) in MiB",
                                Speed((64, 0)), type="number", minimum=0)
    cache_l2_mb: float = option(256, "sampled: the feature cache's level 2 (host memory) in MiB",
                                type="number", minimum=0)
    order: str = option("proximity", "sampled: the order of the training seeds, BGL's proximity-aware (BFS) order "
                        "or a shuffle", enum=["proximity", "random"])
    samplers: int = option(1, "sampled: sampler processes (0 = sampling in the fetch thread)", type="integer",
                           minimum=0)
    queue_depth: int = option(4, "sampled: batches each queue between the stages holds", type="integer", minimum=1)
    stage_cores: dict | None = option(
        None, "sampled: BGL's resource isolation, the CPU ids each stage may run on (the training stage's torch "
        "threads = its count); null = no isolation", type=["object", "null"], additionalProperties=False,
        properties={"sample": CORES, "fetch": CORES, "train": CORES})
    seed_fractions: list = option([0.7, 0.15, 0.15], "sampled: the labelled vertices drawn for train, validation "
                                  "and test", type="array", items={"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                                  minItems=3, maxItems=3)
    seed_partitioner: str = option("bgl", "sampled, several workers: the training seeds split by BGL's BFS-block "
                                   "assignment or at random", enum=list(SEED_PARTITIONERS))


class Sampled(Strategy):
    name = "sampled"
    simplicity = 8
    plain = True

    @classmethod
    def held_bytes(cls, store, options, gpu: bool) -> float:
        """Its two cache levels, COUNTED from the options (``cache_l1_mb`` on the training device,
        ``cache_l2_mb`` in host memory; on a CPU both in the process), each at most the whole feature
        table (N x F float32: a cache holds no more rows than there are)."""
        f = int(store.feature_dim()) if store.has("features/x") else 0
        table = float(store.num_nodes) * f * 4
        keys = ("cache_l1_mb",) if gpu else ("cache_l1_mb", "cache_l2_mb")   # a GPU's host level is not its
        return float(sum(min(float(getattr(options, key, 0.0) or 0.0) * 2**20, table) for key in keys))
    Options = SampledOptions
    family = "sampled"
    figure = "sampled"
    models = ("sampled",)
    tasks = ("classify",)

    def build_model(self, in_dim: int, **kw) -> torch.nn.Module:
        config = self.config
        model_cls = SAMPLED_MODELS.get(config.model)
        if model_cls is None:
            raise ConfigError(f"strategy {config.strategy} trains a model on sampled blocks "
                              f"({', '.join(SAMPLED_MODELS)}), not {config.model!r}")
        refuse_graph_input(config)
        return model_cls(in_dim, config.hidden, num_layers=len(check_fanouts(self.options.fanouts)))

    def check(self, model, store, workers):
        o = self.options
        if not isinstance(model, SampledGNN):
            raise ConfigError(f"strategy {self.config.strategy} trains {', '.join(SAMPLED_MODELS)}, "
                              f"not {getattr(model, 'name', type(model).__name__)!r}")
        check_fanouts(o.fanouts)
        if int(o.batch_size) < 1:
            raise ConfigError(f"batch_size {o.batch_size}: a mini-batch needs at least 1 seed")
        if o.seed_partitioner not in SEED_PARTITIONERS:
            raise ConfigError(f"seed_partitioner {o.seed_partitioner!r}: expected one of "
                              f"{', '.join(SEED_PARTITIONERS)}")
        check_stage_cores(o.stage_cores)

    def prepare(self, store, ctx, comm, timer) -> SampledRun:
        c, o = self.config, self.options
        check_fanouts(o.fanouts)
        t0 = time.perf_counter()
        labels = seed_labels(store)
        rows = StoreRows(store)
        indptr, indices = static_graph(store)
        split = seed_split(labels, o.seed_fractions, c.seed)
        load_seconds = time.perf_counter() - t0
        model = self.build_model(rows.dim).to(ctx.device)
        task = SeedClassification(labels)
        head = task.head(model.out_dim).to(ctx.device)
        return SampledRun(store, task, model, head, timer, ctx, comm, config=c, split=split, in_dim=rows.dim,
                          load_seconds=load_seconds, indptr=indptr, indices=indices, rows=rows, labels=labels)

    # ---------------------------------------------------------------- setup
    def setup(self, run: SampledRun) -> None:
        super().setup(run)
        o = self.options
        self.seed = self.config.seed
        self.batch_size = o.batch_size
        self.order = o.order
        policy = o.cache_policy
        P, rank = run.ctx.world_size, run.ctx.rank
        train = np.asarray(run.split.train, dtype=np.int64)
        if P > 1:
            parts = self.seed_parts(run, o.seed_partitioner, train)
            counts = np.bincount(parts[train], minlength=P)
            self.own = train[parts[train] == rank]
        else:
            counts = np.array([train.size])
            self.own = train
        self.steps_per_epoch = int(math.ceil(counts.max() / self.batch_size))
        self.seed_counts = counts
        # BGL's count of BFS sequences: the least whose label skew passes the shuffling-error bound
        self.sequences, self.sequence_errors = (None, []) if self.order != "proximity" else choose_sequences(
            run.indptr, run.indices, self.own, run.labels, self.batch_size, workers=P, num_train=train.size,
            seed=self.seed)
        self.orders = EpochOrders(self.order, run.indptr, run.indices, self.own, self.seed, self.sequences)
        degree = np.diff(run.indptr)
        self.cache = FeatureCache(run.rows, int(float(o.cache_l1_mb) * MIB), int(float(o.cache_l2_mb) * MIB),
                                  run.device, policy, degree.astype(np.float64))
        self.pipeline = Pipeline(run.indptr, run.indices, check_fanouts(o.fanouts), run.model.norm,
                                 self.cache.fetch, run.device, samplers=o.samplers,
                                 depth=o.queue_depth, cores=o.stage_cores)
        self.labels = torch.from_numpy(run.labels)
        self._epoch_start = self.cache.stats()
        self._batches = iter(())

    def seed_parts(self, run: SampledRun, method: str, train: np.ndarray) -> np.ndarray:
        """parts int64 [N] of the vertices (the same on every worker: seeded, deterministic)."""
        n, P = run.num_nodes, run.ctx.world_size
        if method == "random":
            return hash_partition(n, P, seed=self.seed)
        mask = np.zeros(n, dtype=bool)
        mask[train] = True
        row = np.repeat(np.arange(n, dtype=np.int64), np.diff(run.indptr))
        return bgl_partition(row, run.indices, n, P, mask, seed=self.seed)

    def key(self, epoch: int, b: int) -> tuple[int, int, int]:
        """Batch b of this worker in ``epoch``: its sampling generator's key (one worker: (seed,
        epoch, b), as the cache simulation's)."""
        return self.seed, epoch, b * self.run.ctx.world_size + self.run.ctx.rank

    # ---------------------------------------------------------------- training
    def start_epoch(self, epoch: int) -> None:
        seq = self.orders(epoch)
        batches = [seq[i:i + self.batch_size] for i in range(0, seq.size, self.batch_size)]
        self._steps = batches + [seq[:0]] * (self.steps_per_epoch - len(batches))
        self._epoch_start = self.cache.stats()
        self.pipeline.take_times()
        self._batches = self.pipeline.batches(batches, [self.key(epoch, b) for b in range(len(batches))])

    def steps(self, units, batch_windows: int) -> list[np.ndarray]:
        return self._steps

    def _forward(self, batch) -> torch.Tensor:
        h = self.run.model(batch.blocks, batch.x)
        return self.run.head(h)

    def train_step(self, step: Sequence[int]) -> float:
        run = self.run
        seeds = np.asarray(step, dtype=np.int64)
        total = torch.tensor([float(seeds.size)])
        run.comm.all_reduce(total, "seed_count")
        if seeds.size:
            batch = next(self._batches)
            y = self.labels[torch.from_numpy(batch.seeds)].to(run.device)
            loss = F.cross_entropy(self._forward(batch), y, reduction="sum") / float(total)
            with run.timer.phase("backward"):
                loss.backward()
            value = float(loss.detach())
        else:
            value = 0.0
        if run.ctx.world_size > 1:
            run.comm.all_reduce_grads(run.parameters())
            box = torch.tensor([value], dtype=torch.float64)
            value = float(run.comm.all_reduce(box, "loss"))
        return value

    def epoch_metrics(self, epoch: int, seconds: float) -> dict[str, float]:
        """The epoch's cache figures (summed over workers) and stage times (the slowest worker's)."""
        run = self.run
        stats = self.cache.stats() - self._epoch_start
        times = self.pipeline.take_times().metrics()
        gathered = run.comm.all_gather_object((stats, times))
        total = gathered[0][0]
        for s, _ in gathered[1:]:
            total = total + s
        out = total.metrics()
        for k in times:
            out[k] = max(t[k] for _, t in gathered)
        out["cache_fill_bytes"] = float(self.cache.fill_bytes) if epoch == 0 else 0.0
        out["order_sequences"] = float(self.sequences or 0)   # 0: random order
        return out

    # ---------------------------------------------------------------- evaluation
    @torch.no_grad()
    def evaluate(self, units) -> dict[str, float]:
        """Accuracy and macro-F1 over ``units`` (seed ids), shared out over the workers; the caches are
        read, not changed."""
        run = self.run
        P, rank = run.ctx.world_size, run.ctx.rank
        mine = np.asarray(units, dtype=np.int64)[rank::P]
        batches = [mine[i:i + self.batch_size] for i in range(0, mine.size, self.batch_size)]
        preds, ys = [], []
        keys = [(self.seed, EVAL_EPOCH, b * P + rank) for b in range(len(batches))]
        for batch in self.pipeline.batches(batches, keys, update=False):
            preds.append(self._forward(batch).argmax(1).cpu().numpy())
            ys.append(run.labels[batch.seeds])
        pred = np.concatenate(preds) if preds else np.zeros(0, np.int64)
        y = np.concatenate(ys) if ys else np.zeros(0, np.int64)
        parts = run.comm.all_gather_object((pred, y))
        pred = np.concatenate([p for p, _ in parts])
        y = np.concatenate([t for _, t in parts])
        return {"accuracy": M.accuracy(pred, y), "macro_f1": M.macro_f1(pred, y)}


class SampledNoCache(Sampled):
    """Every input row read from the store (DGL's and Euler's data path: no feature cache)."""

    name = "sampled_nocache"
    baseline_of = "sampled"
    fixed = {"cache_policy": "none"}


class SampledStatic(Sampled):
    """PaGraph's static cache of the highest-degree vertices, seeds in random order."""

    name = "sampled_static"
    baseline_of = "sampled"
    fixed = {"cache_policy": "static", "order": "random"}


class SampledRandom(Sampled):
    """BGL's FIFO cache, seeds in random order (the ablation of the proximity-aware order)."""

    name = "sampled_random"
    baseline_of = "sampled"
    fixed = {"order": "random"}
