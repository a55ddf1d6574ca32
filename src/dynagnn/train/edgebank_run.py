"""A run of EdgeBank (``--model edgebank`` or ``edgebank_window``): the outputs of a training run for
the baseline trained by nothing, so that it sits in every table beside the models.

The run builds the task exactly as the run's strategy builds it for a model (``events``: the event
link task; ``sequential``: the snapshot link task), with the same seed, split and evaluation
negatives (``eval_negative_kind``, and ``report_negative_kinds`` prefixed), and scores EdgeBank on
validation and test by :mod:`dynagnn.tasks.edgebank`. It writes what :func:`dynagnn.train.engine.train`
writes, into an out-dir checked the same way: ``metrics.parquet`` (one row, epoch 0, kept, loss
NaN: nothing was trained), ``timings.parquet`` (the load and the evaluation), ``comm.parquet``
(empty: one process) and ``model.pt`` (a checkpoint without weights, naming the variant).

It sits in ``train/`` beside the engine whose outputs and out-dir rules it shares, and is its user's
(:func:`dynagnn.train.engine.train` hands a baseline model's run here).
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from pathlib import Path

import pandas as pd
import torch

from dynagnn.data.store import open_store
from dynagnn.distributed.launch import available_cores, under_torchrun
from dynagnn.errors import ConfigError
from dynagnn.models.baselines import BASELINE_MODELS
from dynagnn.tables import write_parquet
from dynagnn.tasks.edgebank import edgebank_events, edgebank_snapshots
from dynagnn.train.run_config import SCORED_BY, TrainConfig

log = logging.getLogger("dynagnn")


def check_edgebank(config: TrainConfig, resume=None) -> None:
    """ConfigError, in one line, for a run of EdgeBank that cannot be: another strategy, workers, a
    task other than link, a checkpoint to resume."""
    if resume:
        raise ConfigError(f"--resume with model {config.model}: EdgeBank trains nothing, there is nothing to resume")
    if config.strategy not in SCORED_BY:
        raise ConfigError(f"model {config.model}: EdgeBank trains nothing and is scored on the event link task "
                          f"(--strategy events) or the snapshot link task (--strategy sequential), not by the "
                          f"{config.strategy} strategy")
    if int(config.workers) != 1 or (under_torchrun() and int(os.environ.get("WORLD_SIZE", "1")) > 1):
        raise ConfigError(f"model {config.model}: EdgeBank trains nothing, on one process (workers 1)")
    if config.task not in ("auto", "link"):
        raise ConfigError(f"model {config.model}: EdgeBank predicts links (task auto or link), not {config.task}")


def edgebank_metrics(store, config: TrainConfig) -> tuple[dict, dict, object]:
    """(validation metrics, test metrics, task) of EdgeBank's variant ``config.model`` on the task the
    run's strategy builds from ``store``."""
    memory = BASELINE_MODELS[config.model].memory
    task, split, _, _ = config.strategy_cls(config).make_task(store)
    if task.name != "link":
        raise ConfigError(f"model {config.model}: EdgeBank predicts links; {store.path} gives the {task.name} task "
                          "(give --task link)")
    if config.strategy == "events":
        return edgebank_events(task, "val", memory), edgebank_events(task, "test", memory), task
    window = len(split.test)   # the window variant keeps the test span: as many snapshots as it targets
    return (edgebank_snapshots(task, split.val, memory, window), edgebank_snapshots(task, split.test, memory, window),
            task)


def run_edgebank(store_path, out, config: TrainConfig, overwrite: bool = False, resume=None):
    """Score EdgeBank and write the run's outputs under ``out`` (module docstring); returns
    (metrics, timings) as :func:`dynagnn.train.engine.train` does."""
    from dynagnn.train.engine import CHECKPOINT_VERSION, _checkpoint_bytes, _publish, prepare_out_dir

    check_edgebank(config, resume)
    t0 = time.perf_counter()
    store = open_store(store_path)
    prepare_out_dir(out, config, store.checksum, overwrite)
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    val, test, task = edgebank_metrics(store, config)
    seconds = time.perf_counter() - t0
    row = {"epoch": 0, "loss": math.nan, "train_seconds": 0.0, "processes": 1, "threads": torch.get_num_threads(),
           "cores": available_cores(), "oversubscribed": False, "eval_negative_kind": task.negative_kind,
           **{f"val_{k}": v for k, v in val.items()}, **{f"test_{k}": v for k, v in test.items()}, "best": True}
    metrics = pd.DataFrame([row])
    timings = pd.DataFrame([{"epoch": -1, "worker": 0, "phase": "load", "seconds": load, "warmup": True,
                             "peak_memory_bytes": 0},
                            {"epoch": 0, "worker": 0, "phase": "evaluate", "seconds": seconds, "warmup": False,
                             "peak_memory_bytes": 0}])
    comm = pd.DataFrame(columns=["epoch", "worker", "stage", "collective", "bytes", "calls"])
    meta = {"model": config.model, "strategy": config.strategy, "task": task.name, "workers": "1",
            "config": json.dumps(config.as_dict())}
    checkpoint = {"version": CHECKPOINT_VERSION, "model": config.model, "task": task.name, "fingerprint": "",
                  "config": config.as_dict(), "in_dim": 0, "epoch": 0, "state_dict": {}, "head_state_dict": {},
                  "memory": BASELINE_MODELS[config.model].memory}
    model_bytes = _checkpoint_bytes(checkpoint)
    out = Path(out)
    _publish(out, {"metrics.parquet": lambda tmp: write_parquet(metrics, tmp, store.checksum, meta),
                   "timings.parquet": lambda tmp: write_parquet(timings, tmp, store.checksum, meta),
                   "comm.parquet": lambda tmp: write_parquet(comm, tmp, store.checksum, meta),
                   "model.pt": lambda tmp: tmp.write_bytes(model_bytes)})
    log.info("%s on %s (%s negatives): val %s, test %s", config.model, config.strategy, task.negative_kind,
             _brief(val), _brief(test))
    return metrics, timings


def _brief(metrics: dict) -> str:
    return ", ".join(f"{k} {v:.4f}" for k, v in metrics.items() if k in ("ap", "auc", "ind_ap"))
