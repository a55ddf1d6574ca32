"""The training engine: epochs of steps over snapshot windows, on one worker or many.

A training sample is a window: snapshot t and the l-1 before it (stride 1). A step is B windows
(``batch_windows``, default 1); its loss is the mean of the windows' losses. The strategy computes a
step's forward, backward and communication (:mod:`dynagnn.train.strategies`), the engine then steps
Adam. After each epoch the validation and test windows are evaluated without gradients; the epoch
with the best validation metric is the model that is kept, and training stops after ``patience``
epochs without improvement.

Several workers (``workers`` > 1, or a process that torchrun started): :func:`train` launches one
process per worker (:func:`dynagnn.distributed.launch.launch`); every process runs a :class:`Trainer` with
the same seed (so the same initial weights) and its share of the step; rank 0 evaluates, decides on
early stopping for everyone, and writes the outputs.

Outputs (under ``out``): ``metrics.parquet`` (one row per epoch: loss, train seconds, ``val_*``,
``test_*``), ``timings.parquet`` (one row per epoch, worker and phase, :mod:`dynagnn.timing`; epoch
-1 holds the one-off ``load`` of the store), ``comm.parquet`` (bytes sent per epoch, worker, stage
(setup, train, eval, or checkpoint: the tgnn memory gathered for model.pt) and collective; empty on one
worker), ``model.pt`` (the best epoch's weights with the
fingerprint of the model, task, data and hyper-parameters; for the event models also ``buffers``,
every node's memory and mailbox as that epoch's test pass left them, which weights alone cannot
rebuild). All are written to temporary names and
renamed only once training has finished on every worker (a collective after ``fit``: a worker that
failed or died, or whose launcher is gone, means rank 0 publishes nothing), so a failed run (NaN loss,
bad input, a dead worker) leaves earlier outputs as they were.

The out-dir is checked before training (:func:`out_dir_refusal`): it is new, empty, or a training
run's (only :data:`RUN_FILES`), and a finished run there of another model, strategy, store or options
is replaced only with ``overwrite`` (``train --overwrite``). A disk that fills while the outputs are
written is named ("no space left on device", the path), the out-dir is left as it was, and the trained
run is kept in ``$DYNAGNN_RESCUE_DIR`` (default ``<temporary folder>/dynagnn-rescue``), whose path the
error names.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import logging
import math
import multiprocessing
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from dynagnn.allocator import keep_freed_heap
from dynagnn.data.store import SnapshotStore, open_store
from dynagnn.distributed.comm import Comm
from dynagnn.distributed.context import DistContext
from dynagnn.distributed.launch import available_cores, check_workers, launch, under_torchrun
from dynagnn.errors import ConfigError
from dynagnn.models.baselines import BASELINE_MODELS
from dynagnn.tables import write_parquet
from dynagnn.timing import PhaseTimer
from dynagnn.train.optimizer import Adam
from dynagnn.train.outputs import (RESCUE_ENV, RUN_FILES, Record, TrainingError, _publish, _remove_stale,  # noqa: F401
                                   out_dir_refusal, prepare_out_dir, rescue_dir)   # the out-dir's, for the callers
from dynagnn.train.run_config import TrainConfig

log = logging.getLogger(__name__)

CHECKPOINT_VERSION = 1


def _seed_all(seed: int) -> None:
    torch.manual_seed(seed)
    np.random.seed(seed % 2**32)


@contextlib.contextmanager
def caller_state_kept():
    """Put back, on leaving, what a run in this process changes of the process's global state
    (:class:`Trainer` seeds the generators and may set the thread count): torch's CPU generator (and
    each CUDA device's, where CUDA is initialised on entry), numpy's global generator and torch's
    intra-op thread count. :func:`dynagnn.api.fit` and the chooser's trials run inside it."""
    threads, numpy_state = torch.get_num_threads(), np.random.get_state()
    cuda = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    try:
        with torch.random.fork_rng(devices=cuda):
            yield
    finally:
        np.random.set_state(numpy_state)
        torch.set_num_threads(threads)


def check_run(strategy, store: SnapshotStore, workers: int, model=None) -> None:
    """The checks of a run, once, before it trains: a bad B or worker count, and what the strategy
    cannot serve (``model``: the run's; in the launcher of several processes, one built to be
    checked before any process starts)."""
    c = strategy.config
    check_workers(workers)
    if int(c.batch_windows) < 1:
        raise ConfigError(f"batch_windows {c.batch_windows}: a step needs at least 1 window")
    if model is None:
        model = strategy.build_model(strategy.input_dim(store))
    if "snapshot" in strategy.models or "stacked" in strategy.models:
        strategy.check_model(model)
    strategy.check(model, store, workers)


def hardware(ctx: DistContext) -> dict:
    """What a run's timings were measured on, for metrics.parquet: the processes on this machine, the
    torch threads of each and the machine's cores; ``oversubscribed`` when processes × threads exceed
    the cores, so that its epoch times are not evidence of one strategy against another."""
    procs = ctx.local_processes
    threads, cores = torch.get_num_threads(), available_cores()
    return {"processes": procs, "threads": threads, "cores": cores, "oversubscribed": procs * threads > cores}


class Trainer:
    """Train one model with one strategy on one store. ``fit()`` returns (metrics, timings) frames.

    ``ctx``/``comm``: this process's place in a multi-worker job (default: a one-process run);
    ``checked``: the run was checked already (:func:`check_run`, in the launcher of the job).
    """

    def __init__(self, store: SnapshotStore | str | Path, config: TrainConfig, progress: bool = True,
                 ctx: DistContext | None = None, comm: Comm | None = None, checked: bool = False):
        self.store = store if isinstance(store, SnapshotStore) else open_store(store)
        self.config = c = config
        self.ctx = ctx or DistContext.single(c.device)
        self.comm = comm or Comm(self.ctx)
        self.progress = progress and self.ctx.is_main
        if c.threads and not self.ctx.distributed:
            torch.set_num_threads(int(c.threads))
        keep_freed_heap()
        self.device = self.ctx.device
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"device {c.device!r} requested but this torch has no CUDA device")
        self.timer = PhaseTimer(self.device)
        _seed_all(c.seed)
        self.strategy = c.strategy_cls(c)  # the run's one strategy object
        self.run = self.strategy.prepare(self.store, self.ctx, self.comm, self.timer)
        self.task, self.split, self.model, self.head = self.run.task, self.run.split, self.run.model, self.run.head
        self.in_dim, self.load_seconds = self.run.in_dim, self.run.load_seconds
        if not checked:  # a job of several processes was checked in its launcher
            check_run(self.strategy, self.store, self.ctx.workers, self.model)
        self.strategy.setup(self.run)
        self.comm_rows: list[dict] = []
        self._count_comm(-1, "setup")
        params = list(self.model.parameters()) + list(self.head.parameters())
        # fused: one kernel for all parameters (on a CPU 0.18 ms a step for TGN's 20 tensors against 0.50 ms
        # for the loop over them, 6% of its step); the same update, without torch's compiler stack
        self.optimizer = Adam(params, lr=c.lr, weight_decay=c.weight_decay, fused=True)
        self.fingerprint = c.fingerprint(self.store.checksum, self.in_dim)

    def step_ends(self) -> list[list]:
        """The epoch's steps: B units each (window ends, by default), composed by the strategy."""
        return self.strategy.steps(self.split.train, int(self.config.batch_windows))

    def _count_comm(self, epoch: int, stage: str) -> None:
        for name, (nbytes, calls) in sorted(self.comm.take_counts().items()):
            self.comm_rows.append({"epoch": epoch, "worker": self.ctx.rank, "stage": stage,
                                   "collective": name, "bytes": nbytes, "calls": calls})

    def train_epoch(self, epoch: int) -> float:
        self.model.train()
        self.head.train()
        self.run.epoch = epoch
        self.strategy.start_epoch(epoch)
        losses = []
        for ends in self.step_ends():
            self.optimizer.zero_grad(set_to_none=True)
            loss = self.strategy.train_step(ends)
            if not math.isfinite(loss):
                where = f"loss is {loss} at epoch {epoch}, step ending at {self.task.unit} {ends[-1]}"
                cause = self._nan_cause(ends)  # the data first: its NaN is no learning rate's fault
                if cause:
                    raise TrainingError(f"{where}, caused by the data: {cause}; nothing was written")
                clean = "; the data there is finite, so training diverged" if cause == "" else ""
                raise TrainingError(f"{where}{clean}; nothing was written (try a lower learning rate than "
                                    f"{self.config.lr})")
            with self.timer.phase("optimizer"):
                self.optimizer.step()
            losses.append(loss)
        return float(np.mean(losses))

    def _nan_cause(self, ends) -> str | None:
        """The task's account of a non-finite loss at ``ends`` from the data: the cause, "" when the
        data there is clean, None when the task cannot tell."""
        check = getattr(self.task, "nan_cause", None)
        if check is None:
            return None
        try:
            return check(ends) or ""
        except (TypeError, ValueError):  # units that are not snapshots: nothing to name
            return None

    @torch.no_grad()
    def evaluate(self, units: list) -> dict[str, float]:
        """The strategy's metrics over ``units``, the same on every worker (for the same early stop)."""
        self.model.eval()
        self.head.eval()
        return self.strategy.evaluate(units)

    def fit(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        try:
            return self._fit()
        finally:
            self.strategy.close()  # on a failure too: what it holds open releases a waiting partner

    def _fit(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        c = self.config
        rows = []
        best, best_state, since = None, None, 0
        hw = hardware(self.ctx)
        kind = getattr(self.task, "negative_kind", None)   # which evaluation negatives the link metrics used
        if kind is not None:
            hw["eval_negative_kind"] = kind
        bar = tqdm(range(c.epochs), desc=f"{c.model}/{c.strategy}", disable=not self.progress, leave=False)
        for epoch in bar:
            start = time.perf_counter()
            with self.timer.epoch(epoch, worker=self.ctx.rank, warmup=epoch < c.warmup_epochs):
                loss = self.train_epoch(epoch)
            seconds = time.perf_counter() - start
            extra = self.strategy.epoch_metrics(epoch, seconds)
            self._count_comm(epoch, "train")
            val = self.evaluate(self.split.val)
            test = self.evaluate(self.split.test)
            self._count_comm(epoch, "eval")
            row = {"epoch": epoch, "loss": loss, "train_seconds": seconds, **extra, **hw}
            row.update({f"val_{k}": v for k, v in val.items()})
            row.update({f"test_{k}": v for k, v in test.items()})
            rows.append(row)
            score = val[self.task.primary]
            # a non-finite validation score never wins (so best stays finite or None)
            better = math.isfinite(score) and (best is None or (score > best if self.task.maximize else score < best))
            if better:
                best, since = score, 0
                buffers = self.strategy.state_buffers()  # collective: every worker takes the same decision
                self._count_comm(epoch, "checkpoint")
                best_state = {"epoch": epoch, "model": copy.deepcopy(self.model.state_dict()),
                              "head": copy.deepcopy(self.head.state_dict()),
                              "buffers": buffers if self.ctx.is_main else None}  # only rank 0 writes
            else:
                since += 1
            bar.set_postfix(loss=f"{loss:.4f}", **{f"val_{self.task.primary}": f"{score:.4f}"})
            if self.ctx.is_main:
                log.info("epoch %d: loss %.4f, val %s %.4f, %.2f s", epoch, loss, self.task.primary, score, seconds)
            if since >= c.patience:
                if self.ctx.is_main:
                    log.info("early stop: no better val %s for %d epochs", self.task.primary, c.patience)
                break
        if best_state is None:
            raise TrainingError(f"no epoch gave a finite validation {self.task.primary} (the model diverged?); "
                                "nothing written")
        self.best = best_state
        metrics = pd.DataFrame(rows)
        metrics["best"] = metrics["epoch"] == best_state["epoch"]
        load = {"epoch": -1, "worker": self.ctx.rank, "phase": "load", "seconds": self.load_seconds,
                "warmup": True, "peak_memory_bytes": 0}
        gathered = self.comm.all_gather_object(([load] + self.timer.rows(), self.comm_rows))
        timings = pd.DataFrame([r for t, _ in gathered for r in t],
                               columns=["epoch", "worker", "phase", "seconds", "warmup", "peak_memory_bytes"])
        self.comm_table = pd.DataFrame([r for _, c_ in gathered for r in c_],
                                       columns=["epoch", "worker", "stage", "collective", "bytes", "calls"])
        return metrics, timings

    def checkpoint(self) -> dict:
        return {"version": CHECKPOINT_VERSION, "model": self.config.model, "task": self.task.name,
                "fingerprint": self.fingerprint, "config": self.config.as_dict(),
                "in_dim": self.in_dim, "epoch": self.best["epoch"],
                "state_dict": self.best["model"], "head_state_dict": self.best["head"],
                **({"buffers": self.best["buffers"]} if self.best.get("buffers") is not None else {})}

    def load_checkpoint(self, path: str | Path) -> int:
        """Load weights saved by an earlier run of the same model, task and data; returns its epoch."""
        ck = load_checkpoint_file(path)
        if ck.get("model") != self.config.model or ck.get("fingerprint") != self.fingerprint:
            raise TrainingError(f"{path}: checkpoint of model {ck.get('model')!r} (fingerprint "
                                f"{ck.get('fingerprint')}), this run is {self.config.model!r} "
                                f"({self.fingerprint}): another model, task, width or dataset")
        self.model.load_state_dict(ck["state_dict"])
        self.head.load_state_dict(ck["head_state_dict"])
        if ck.get("buffers") is not None:
            try:
                self.strategy.load_state_buffers(ck["buffers"])
            except ValueError as e:
                raise TrainingError(f"{path}: {e}") from None
        return int(ck["epoch"])


CHECKPOINT_KEYS = ("version", "model", "task", "fingerprint", "config", "in_dim", "epoch", "state_dict",
                   "head_state_dict")  # what Trainer.checkpoint writes


def load_checkpoint_file(path: str | Path) -> dict:
    """The checkpoint dict a training run wrote to ``path`` (model.pt); TrainingError saying in plain
    words what is wrong with any other file."""
    path = Path(path)
    if not path.exists():
        raise TrainingError(f"{path}: no checkpoint here")
    if not path.is_file():
        raise TrainingError(f"{path}: not a file (give the model.pt a training run wrote)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns about foreign pickle protocols: we say it below
            ck = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise TrainingError(f"{path}: not a dynagnn checkpoint: {_unloadable(path, exc)}") from exc
    if not isinstance(ck, dict):
        raise TrainingError(f"{path}: not a dynagnn checkpoint: torch.save wrote a {type(ck).__name__} "
                            "there, not the dict a training run writes")
    if ck.get("version") != CHECKPOINT_VERSION and "version" in ck:
        raise TrainingError(f"{path}: checkpoint version {ck.get('version')!r}, "
                            f"this dynagnn reads version {CHECKPOINT_VERSION}")
    missing = [k for k in CHECKPOINT_KEYS if k not in ck]
    if missing:
        raise TrainingError(f"{path}: not a dynagnn checkpoint: a dict without the keys {', '.join(missing)}")
    return ck


def _unloadable(path: Path, exc: Exception) -> str:
    """Why torch.load refused a file, in plain words (torch's own messages are long or cryptic, such
    as a bare "101" for a text file)."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    weights_only = "weights only" in str(exc).lower()  # torch's restricted unpickler met something else
    detail = f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"
    if not head:
        return "the file is empty"
    if head == b"PK\x03\x04" and not zipfile.is_zipfile(path):
        return "the file is truncated or damaged (torch.save writes a zip archive; this one has no end)"
    if head[:2] != b"PK":
        why = "it holds objects other than tensors and plain values" if weights_only else detail
        return f"not a file torch.save wrote (no zip archive: it begins {head!r}; unpickling failed: {why})"
    if weights_only:
        return ("it holds Python objects other than tensors and plain values, which dynagnn does not load "
                "(a training run never writes them)")
    return f"torch.load failed ({detail})"


def _launcher_alive() -> bool:
    """Whether the process that spawned this one still runs (True where none did: one process, torchrun)."""
    parent = multiprocessing.parent_process()
    return parent is None or parent.is_alive()


def _job_succeeded(trainer: "Trainer") -> None:
    """Return only when every worker of the job finished its training (``fit`` returned, the
    strategy closed) and its launcher still runs: a collective after ``fit`` on every rank, so that
    rank 0 publishes nothing when a worker failed or died (it never comes here: the collective fails
    or the launcher stops rank 0). One process: nothing to wait for."""
    if not trainer.ctx.distributed:
        return
    alive = trainer.comm.all_gather_object(_launcher_alive())
    if not all(alive):
        gone = ", ".join(str(r) for r, ok in enumerate(alive) if not ok)
        raise TrainingError(f"the launcher of worker(s) {gone} is gone (the job was stopped); nothing was written")


def _checkpoint_bytes(ck: dict) -> memoryview:
    """model.pt's bytes, made in memory: a full disk then fails in a plain write with ENOSPC (torch's
    own writer says only "enforce fail"), and the bytes can still be written elsewhere."""
    buf = io.BytesIO()
    torch.save(ck, buf)
    return buf.getbuffer()


def _train_here(ctx: DistContext | None, store_path, out, config: TrainConfig, resume, progress, checked=False,
                overwrite=False, record: Record | None = None):
    """One process's share of :func:`train`; rank 0 writes the outputs, once every worker finished its
    training (:func:`_job_succeeded`), and returns the frames. ``checked``: the launcher checked the run
    and the out-dir; else (one process, torchrun's) rank 0 checks the out-dir here, before training,
    and every rank stops on its refusal. ``record``: what the layer that asked for the run records
    with it (:class:`Record`)."""
    identity = record.identity if record is not None else config
    extra = record.names() if record is not None else ()
    trainer = Trainer(store_path, config, progress, ctx, Comm(ctx) if ctx is not None else None, checked=checked)
    if resume:
        trainer.load_checkpoint(resume)
    out = Path(out)
    if not checked:
        reason = None
        if trainer.ctx.is_main:
            reason = out_dir_refusal(out, identity, trainer.store.checksum, overwrite, resume, extra)
            if reason is None:
                _remove_stale(out)
        reason = trainer.comm.broadcast_object(reason)
        if reason:
            raise ConfigError(reason)
    metrics, timings = trainer.fit()
    _job_succeeded(trainer)
    if not trainer.ctx.is_main:
        return None
    meta = {"model": config.model, "strategy": identity.strategy, "task": trainer.task.name,
            "workers": str(trainer.ctx.world_size), "config": json.dumps(identity.as_dict(), default=str)}
    files = {}
    if record is not None:
        metrics = metrics.assign(**record.columns)
        meta.update({k: str(v) for k, v in record.columns.items()})
        files = {name: (lambda tmp, data=data: tmp.write_bytes(data)) for name, data in record.files.items()}
    checksum = trainer.store.checksum
    model_bytes = _checkpoint_bytes(trainer.checkpoint())
    comm = trainer.comm_table
    _publish(out, {"metrics.parquet": lambda tmp: write_parquet(metrics, tmp, checksum, meta),
                   "timings.parquet": lambda tmp: write_parquet(timings, tmp, checksum, meta),
                   "comm.parquet": lambda tmp: write_parquet(comm, tmp, checksum, meta),
                   "model.pt": lambda tmp: tmp.write_bytes(model_bytes), **files})
    for name in record.replaces if record is not None else ():
        (out / name).unlink(missing_ok=True)
    return metrics, timings


def train(store_path: str | Path, out: str | Path, config: TrainConfig, resume: str | Path | None = None,
          progress: bool = True, overwrite: bool = False, record: Record | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train and write ``metrics.parquet``, ``timings.parquet``, ``comm.parquet`` and ``model.pt``
    under ``out``; on ``config.workers`` processes (or torchrun's) when that is more than one.
    Returns rank 0's (metrics, timings); None on the other ranks of a torchrun job. A job of several
    processes is checked here, before any starts (:func:`check_run`, and the out-dir:
    :func:`prepare_out_dir`); a one-process run checks the model it trains and the out-dir before it
    trains. ``overwrite``: replace a finished run of another model, strategy, store or config in
    ``out`` (``train --overwrite``). ``record``: what the layer that asked for the run records with it
    (:class:`Record`: the chooser's request and report)."""
    overwrite = bool(overwrite)
    if not isinstance(config, TrainConfig):
        raise ConfigError(f"the engine trains a TrainConfig of a registered strategy, not a {type(config).__name__}: "
                          "a run that names the chooser trains through dynagnn.api.train (dynagnn train, dynagnn.fit)")
    if config.model in BASELINE_MODELS:   # EdgeBank: scored, not trained
        from dynagnn.train.edgebank_run import run_edgebank

        return run_edgebank(store_path, out, config, overwrite, resume)
    ppw = config.strategy_cls.procs_per_worker
    if under_torchrun():
        return launch(_train_here, 1, store_path, out, config, resume, progress, False, overwrite, record,
                      device=config.device, threads=config.threads, procs_per_worker=ppw)[0]
    if config.workers * ppw == 1:
        return _train_here(None, store_path, out, config, resume, progress, False, overwrite, record)
    store = open_store(store_path)
    check_run(config.strategy_cls(config), store, config.workers)
    prepare_out_dir(out, record.identity if record is not None else config, store.checksum, overwrite, resume,
                    record.names() if record is not None else ())
    return launch(_train_here, config.workers, store_path, out, config, resume, progress, True, overwrite, record,
                  device=config.device, threads=config.threads, procs_per_worker=ppw)[0]
