"""Training runs side by side: the papers' ablations (config ``studies``) and BLAD's accuracy check.

A *study* (config key ``studies``, rules/papers.smk) trains one (dataset, model) once per named
variant, each a strategy with its options: PiPAD's speed-up ladder (sequential, -A, -R, parallel GNN,
full PiPAD) and ESDG's checkpoint blocks are studies, since their runs share a strategy and differ
only in options, which ``train.runs`` cannot tell apart. :func:`study_runs` lists the runs of a
config's studies with their full options; :func:`check_studies` refuses what would fail later.

:func:`runs_table` sets any runs side by side, one row each in the order given (the first is the
baseline): the median epoch time (warm-up excluded, as :func:`~dynagnn.report.strategies.measured`
takes it), the speed-up over the first, the peak memory (the device's peak allocation on a GPU, the
process's peak RSS on CPU: every run is its own process), the share of timed time spent feeding
snapshots (``transfer``), first-layer aggregations and bytes fed per epoch where the run counts them,
the best validation metric and the test metric at that epoch, and the device it ran on.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ConfigError, InputError, did_you_mean
from .strategies import measured

COLUMNS = ["run", "strategy", "device", "epochs", "epoch_s", "speedup", "peak_memory_mb", "transfer_share",
           "first_layer_aggregations", "bytes_fed", "val_metric", "best_val", "test_at_best"]


def run_config(metrics_path) -> dict[str, Any]:
    """The TrainConfig a training run recorded in its metrics.parquet (strategy, device, ...); {} when
    it recorded none."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(metrics_path).metadata or {}
    try:
        return dict(json.loads(meta[b"dynagnn.config"]))
    except (KeyError, ValueError):
        return {}


def _row(name: str, metrics: pd.DataFrame, timings: pd.DataFrame, device: str) -> dict[str, Any]:
    m = measured(metrics, timings)
    warm = metrics[metrics["epoch"] >= 1] if len(metrics) > 1 else metrics
    t = timings[timings["epoch"].isin(warm["epoch"])]
    total = float(t["seconds"].sum())
    val = [c for c in metrics.columns if c.startswith("val_")][:1]
    best = metrics[metrics["best"]].iloc[0] if metrics["best"].any() else metrics.iloc[-1]
    test = "test_" + val[0][4:] if val else None
    return {"run": name, "device": device, "epochs": m["epochs"], "epoch_s": m["epoch_s"],
            "peak_memory_mb": float(timings["peak_memory_bytes"].max()) / 2**20 if len(timings) else np.nan,
            "transfer_share": float(t.loc[t["phase"] == "transfer", "seconds"].sum() / total) if total > 0 else 0.0,
            "first_layer_aggregations": float(warm["first_layer_aggregations"].median())
            if "first_layer_aggregations" in warm else np.nan,
            "bytes_fed": float(warm["bytes_fed"].median()) if "bytes_fed" in warm else np.nan,
            "val_metric": val[0] if val else "", "best_val": m["best_val"],
            "test_at_best": float(best[test]) if test in metrics else np.nan}


def runs_table(runs: dict[str, tuple[pd.DataFrame, pd.DataFrame, str, str]]) -> pd.DataFrame:
    """``runs``: name -> (metrics, timings, strategy, device) of each run, the baseline first. One row
    per run (columns :data:`COLUMNS`); ``speedup`` is the first run's epoch time over this run's.
    InputError when the runs do not share a validation metric (they would not be comparable)."""
    if not runs:
        raise InputError("no training runs to set side by side")
    rows = []
    for name, (metrics, timings, strategy, device) in runs.items():
        row = _row(name, metrics, timings, device)
        row["strategy"] = strategy
        rows.append(row)
    metrics_used = {r["val_metric"] for r in rows}
    if len(metrics_used) > 1:
        raise InputError(f"runs with different validation metrics ({', '.join(sorted(metrics_used))}): "
                         "not runs of one task")
    df = pd.DataFrame(rows)
    base = df["epoch_s"].iloc[0]
    df["speedup"] = base / df["epoch_s"] if base > 0 else np.nan
    return df.reindex(columns=COLUMNS)
