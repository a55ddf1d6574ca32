"""The single-worker training engine: epochs over snapshot windows, evaluation, early stopping, outputs.

A training sample is a window: snapshot t and the l-1 before it (stride 1). The strategy produces the
embeddings at t (BPTT over the window, optionally truncated or checkpointed), the task's head and
loss turn them into a gradient, Adam steps once per window. After each epoch the validation and test
windows are evaluated without gradients; the epoch with the best validation metric is the model that
is kept, and training stops after ``patience`` epochs without improvement.

Outputs (under ``out``): ``metrics.parquet`` (one row per epoch: loss, train seconds, ``val_*``,
``test_*``), ``timings.parquet`` (one row per epoch and phase, :mod:`dynagnn.timing`; epoch -1
holds the one-off ``load`` of the store), ``model.pt`` (the best epoch's weights with the fingerprint
of the model, task, data and hyper-parameters). All three are written to temporary names and renamed
only once training has finished, so a failed run (NaN loss, bad input) leaves earlier outputs as they
were.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from dynagnn.data.store import SnapshotStore, open_store
from dynagnn.errors import ConfigError, DynagnnError
from dynagnn.models import build_model
from dynagnn.tables import write_parquet
from dynagnn.train.strategies import make_strategy
from dynagnn.train.tasks import make_task
from dynagnn.timing import PhaseTimer
from dynagnn.train.transfer import SnapshotFeeder, host_snapshot

log = logging.getLogger(__name__)

CHECKPOINT_VERSION = 1


class TrainingError(DynagnnError):
    """Training cannot go on (a NaN loss, a checkpoint of another run)."""


@dataclass
class TrainConfig:
    """Hyper-parameters and run settings; every field is a key of the config's ``train`` section."""

    model: str = "tgcn"
    strategy: str = "sequential"
    task: str = "auto"
    hidden: int = 32
    window: int = 4
    epochs: int = 20
    lr: float = 0.01
    weight_decay: float = 0.0
    patience: int = 5
    warmup_epochs: int = 1
    checkpoint_blocks: int = 1
    tbptt: int | None = None
    transfer: str = "full"
    neg_ratio: int = 1
    eval_negatives: int = 20
    max_edges: int | None = None
    device: str = "cpu"
    threads: int | None = None
    seed: int = 0

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ConfigError(f"unknown training option(s) {unknown}: expected {sorted(names)}")
        return cls(**d)

    def fingerprint(self, store_checksum: str, in_dim: int) -> str:
        """What must match for a checkpoint to be loadable into this run: model shape, task, data."""
        keys = {"model": self.model, "task": self.task, "hidden": self.hidden, "in_dim": in_dim,
                "store": store_checksum}
        return hashlib.sha256(json.dumps(keys, sort_keys=True).encode()).hexdigest()[:16]


def _seed_all(seed: int) -> None:
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)


def load_host_snapshots(store: SnapshotStore) -> list:
    """Every snapshot's normalised adjacency on the host, read in one slice of the store."""
    n = store.num_nodes
    return [host_snapshot(r, c, w, n) for r, c, w in store.window_edges(0, store.num_snapshots)]


def features_of(store: SnapshotStore) -> np.ndarray:
    x = store.features()
    if x is None:
        raise ConfigError(f"{store.path}: the store has no node features; give the dataset a "
                          "'features' entry (degree, identity or random) and ingest again")
    return np.asarray(x, dtype=np.float32)


class Trainer:
    """Train one model with one strategy on one store. ``fit()`` returns (metrics, timings) frames."""

    def __init__(self, store: SnapshotStore | str | Path, config: TrainConfig, progress: bool = True):
        self.store = store if isinstance(store, SnapshotStore) else open_store(store)
        self.config = c = config
        self.progress = progress
        if c.threads:
            torch.set_num_threads(int(c.threads))
        self.device = torch.device(c.device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"device {c.device!r} requested but this torch has no CUDA device")
        _seed_all(c.seed)
        link_opts = {"neg_ratio": c.neg_ratio, "eval_negatives": c.eval_negatives, "max_edges": c.max_edges}
        task_name = c.task
        if task_name == "auto":
            from dynagnn.train.tasks import infer_task
            task_name = infer_task(self.store)
        self.task = make_task(task_name, self.store, c.seed, **(link_opts if task_name == "link" else {}))
        self.steps = self.task.steps(c.window)
        from dynagnn.train.tasks import chronological_split
        self.split = chronological_split(self.steps)
        self.timer = PhaseTimer(self.device)
        t0 = time.perf_counter()
        features = features_of(self.store)
        host = load_host_snapshots(self.store)
        self.load_seconds = time.perf_counter() - t0
        self.in_dim = int(features.shape[-1])
        capacity = None
        if c.checkpoint_blocks > 1:
            capacity = math.ceil(c.window / c.checkpoint_blocks) + 1
        self.feeder = SnapshotFeeder(host, features, self.store.num_nodes, self.device, c.transfer,
                                     capacity, self.timer)
        self.model = build_model(c.model, self.in_dim, c.hidden).to(self.device)
        self.head = self.task.head(self.model.out_dim).to(self.device)
        self.strategy = make_strategy(c.strategy, checkpoint_blocks=c.checkpoint_blocks, tbptt=c.tbptt)
        self.strategy.setup(self.model, self.feeder)
        params = list(self.model.parameters()) + list(self.head.parameters())
        self.optimizer = torch.optim.Adam(params, lr=c.lr, weight_decay=c.weight_decay)
        self.fingerprint = c.fingerprint(self.store.checksum, self.in_dim)

    def window(self, t: int) -> list[int]:
        return list(range(t - self.config.window + 1, t + 1))

    def train_epoch(self, epoch: int) -> float:
        self.model.train()
        self.head.train()
        losses = []
        timer = self.timer
        for t in self.split.train:
            self.optimizer.zero_grad(set_to_none=True)
            h = self.strategy.embed(self.window(t))
            loss = self.task.loss(self.head, h, t, epoch)
            if not torch.isfinite(loss):
                raise TrainingError(f"loss is {loss.item()} at epoch {epoch}, window ending at snapshot {t}; "
                                    f"nothing was written (try a lower learning rate than {self.config.lr})")
            with timer.phase("backward"):
                loss.backward()
            with timer.phase("optimizer"):
                self.optimizer.step()
            losses.append(float(loss.detach()))
        return float(np.mean(losses))

    @torch.no_grad()
    def evaluate(self, steps: list[int]) -> dict[str, float]:
        self.model.eval()
        self.head.eval()
        embeddings = {t: self.strategy.embed(self.window(t)) for t in steps}
        return self.task.evaluate(self.head, embeddings)

    def fit(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        c = self.config
        rows = []
        best, best_state, since = None, None, 0
        bar = tqdm(range(c.epochs), desc=f"{c.model}/{c.strategy}", disable=not self.progress, leave=False)
        for epoch in bar:
            start = time.perf_counter()
            with self.timer.epoch(epoch, warmup=epoch < c.warmup_epochs):
                loss = self.train_epoch(epoch)
            seconds = time.perf_counter() - start
            val = self.evaluate(self.split.val)
            test = self.evaluate(self.split.test)
            row = {"epoch": epoch, "loss": loss, "train_seconds": seconds}
            row.update({f"val_{k}": v for k, v in val.items()})
            row.update({f"test_{k}": v for k, v in test.items()})
            rows.append(row)
            score = val[self.task.primary]
            # a non-finite validation score never wins (so best stays finite or None)
            better = math.isfinite(score) and (best is None or (score > best if self.task.maximize else score < best))
            if better:
                best, since = score, 0
                best_state = {"epoch": epoch, "model": copy.deepcopy(self.model.state_dict()),
                              "head": copy.deepcopy(self.head.state_dict())}
            else:
                since += 1
            bar.set_postfix(loss=f"{loss:.4f}", **{f"val_{self.task.primary}": f"{score:.4f}"})
            log.info("epoch %d: loss %.4f, val %s %.4f, %.2f s", epoch, loss, self.task.primary, score, seconds)
            if since >= c.patience:
                log.info("early stop: no better val %s for %d epochs", self.task.primary, c.patience)
                break
        if best_state is None:
            raise TrainingError(f"no epoch gave a finite validation {self.task.primary} (the model diverged?); "
                                "nothing written")
        self.best = best_state
        metrics = pd.DataFrame(rows)
        metrics["best"] = metrics["epoch"] == best_state["epoch"]
        timings = self.timer.frame()
        load = pd.DataFrame([{"epoch": -1, "worker": 0, "phase": "load", "seconds": self.load_seconds,
                              "warmup": True, "peak_memory_bytes": 0}])
        timings = pd.concat([load, timings], ignore_index=True)
        return metrics, timings

    def checkpoint(self) -> dict:
        return {"version": CHECKPOINT_VERSION, "model": self.config.model, "task": self.task.name,
                "fingerprint": self.fingerprint, "config": dataclasses.asdict(self.config),
                "in_dim": self.in_dim, "epoch": self.best["epoch"],
                "state_dict": self.best["model"], "head_state_dict": self.best["head"]}

    def load_checkpoint(self, path: str | Path) -> int:
        """Load weights saved by an earlier run of the same model, task and data; returns its epoch."""
        ck = load_checkpoint_file(path)
        if ck.get("model") != self.config.model or ck.get("fingerprint") != self.fingerprint:
            raise TrainingError(f"{path}: checkpoint of model {ck.get('model')!r} (fingerprint "
                                f"{ck.get('fingerprint')}), this run is {self.config.model!r} "
                                f"({self.fingerprint}): another model, task, width or dataset")
        self.model.load_state_dict(ck["state_dict"])
        self.head.load_state_dict(ck["head_state_dict"])
        return int(ck["epoch"])


def load_checkpoint_file(path: str | Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise TrainingError(f"{path}: no checkpoint here")
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise TrainingError(f"{path}: not a dynagnn checkpoint ({exc})") from exc
    if not isinstance(ck, dict) or ck.get("version") != CHECKPOINT_VERSION:
        raise TrainingError(f"{path}: checkpoint version {ck.get('version') if isinstance(ck, dict) else None!r}, "
                            f"this dynagnn reads version {CHECKPOINT_VERSION}")
    return ck


def _write_all(files: dict[Path, callable]) -> None:
    """Write every output to a temporary sibling, then rename them all: all or nothing."""
    tmps = {}
    try:
        for path, writer in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
            writer(tmp)
            tmps[path] = tmp
        for path, tmp in tmps.items():
            os.replace(tmp, path)
    finally:
        for tmp in tmps.values():
            if tmp.exists():
                tmp.unlink()


def train(store_path: str | Path, out: str | Path, config: TrainConfig, resume: str | Path | None = None,
          progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train and write ``metrics.parquet``, ``timings.parquet`` and ``model.pt`` under ``out``."""
    trainer = Trainer(store_path, config, progress)
    if resume:
        trainer.load_checkpoint(resume)
    metrics, timings = trainer.fit()
    out = Path(out)
    meta = {"model": config.model, "strategy": config.strategy, "task": trainer.task.name,
            "config": json.dumps(dataclasses.asdict(config))}
    checksum = trainer.store.checksum

    ck = trainer.checkpoint()
    _write_all({out / "metrics.parquet": lambda tmp: write_parquet(metrics, tmp, checksum, meta),
                out / "timings.parquet": lambda tmp: write_parquet(timings, tmp, checksum, meta),
                out / "model.pt": lambda tmp: torch.save(ck, tmp)})
    return metrics, timings
