"""Sven's communication side by side (issue 15): Sven against DepComm and DepCache, and the per-worker
bytes of each memory partitioner (Re-FlexBiCut, hash, range), in the spirit of Sven's Figs. 12-13.

One row per (run, worker) of tgnn training runs: the bytes the worker sent per training batch
(the mean over the training epochs of comm.parquet's bytes over ``batches``, which the tgnn
strategies put in metrics.parquet), split into the rows Sven's volume model counts (``dispatch``:
the rows fetched, DepComm's gradient return included; ``aggregation``: the rows written back),
the bookkeeping beside them (request ids, counts, times) and the gradient all-reduce; and the
run's median training-epoch time (the warm epochs: all after the first, or the only one).

These are the bytes sent, whatever the model. Sven's closed forms
(:func:`~dynagnn.analysis.commvolume.sven_volumes`) match them for TGN and JODIE at one micro-batch
only: APAN's aggregation also holds its mails to sampled neighbours, and with m micro-batches a
row is fetched once per micro-batch.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from dynagnn.errors import InputError

COLUMNS = ["run", "worker", "batches", "dispatch", "aggregation", "bookkeeping", "all_reduce", "epoch_s"]
PARTS = {"dispatch": ("dispatch", "dispatch.backward"), "aggregation": ("aggregation",),
         "all_reduce": ("grad_all_reduce", "loss_all_reduce")}  # the stale all-reduce reduces the loss apart


def _part(collective: str) -> str | None:
    for part, names in PARTS.items():
        if collective in names:
            return part
    return "bookkeeping" if collective.startswith(("dispatch.", "aggregation.")) else None


def sven_table(runs: dict[str, tuple[pd.DataFrame, pd.DataFrame]]) -> pd.DataFrame:
    """``runs``: a label -> (metrics.parquet, comm.parquet) of a tgnn training run. InputError for a run
    without the tgnn strategies' ``batches`` column."""
    rows = []
    for label, (metrics, comm) in runs.items():
        if "batches" not in metrics.columns:
            raise InputError(f"run {label!r}: metrics without batches: not a tgnn training run")
        warm = metrics[metrics["epoch"] > 0] if len(metrics) > 1 else metrics
        batches = metrics.set_index("epoch")["batches"]
        train = comm[(comm["stage"] == "train") & (comm["epoch"] >= 0)].copy()
        train["part"] = train["collective"].map(_part)
        train = train.dropna(subset=["part"])
        train["per_batch"] = train["bytes"] / train["epoch"].map(batches)
        per = train.groupby(["worker", "epoch", "part"])["per_batch"].sum().groupby(["worker", "part"]).mean()
        for worker in sorted(comm["worker"].unique()):
            got = per.get(worker, pd.Series(dtype=float))
            rows.append({"run": label, "worker": int(worker), "batches": float(batches.mean()),
                         **{p: float(got.get(p, 0.0)) for p in ("dispatch", "aggregation", "bookkeeping", "all_reduce")},
                         "epoch_s": float(warm["train_seconds"].median())})
    return pd.DataFrame(rows, columns=COLUMNS)


def sven_communication(table: pd.DataFrame, out_png: str | Path, title: str = "") -> list[Path]:
    """Three panels: the bytes per batch of each run, all workers together (dispatch, aggregation,
    bookkeeping); each worker's (the imbalance of a partition); the median epoch time."""
    from dynagnn.report.figures import _grouped_bars, save

    runs = list(dict.fromkeys(table["run"]))
    total = table.groupby("run", sort=False)[["dispatch", "aggregation", "bookkeeping"]].sum().loc[runs]
    fig, ax = plt.subplots(1, 3, figsize=(14, 4))
    x = np.arange(len(runs))
    bottom = np.zeros(len(runs))
    for part in ("dispatch", "aggregation", "bookkeeping"):
        ax[0].bar(x, total[part] / 2**10, bottom=bottom, label=part)
        bottom += total[part].to_numpy() / 2**10
    ax[0].set_xticks(x, runs)
    ax[0].set_ylabel("KiB sent per batch (all workers)")
    ax[0].legend(fontsize=8)
    workers = sorted(table["worker"].unique())
    sent = table.assign(kib=(table["dispatch"] + table["aggregation"]) / 2**10)
    _grouped_bars(ax[1], runs, {f"worker {w}": [float(sent[(sent["run"] == r) & (sent["worker"] == w)]["kib"].sum())
                                                for r in runs] for w in workers}, xlabel="run")
    ax[1].set_ylabel("KiB of rows sent per batch, per worker")
    epoch = table.groupby("run", sort=False)["epoch_s"].first().loc[runs]
    ax[2].bar(x, epoch, color="tab:gray")
    ax[2].set_xticks(x, runs)
    ax[2].set_ylabel("seconds per epoch (median, warm)")
    for a, name in zip(ax, ("bytes per batch", "per-worker bytes (imbalance)", "epoch time")):
        a.set_title(name, fontsize=9)
        a.tick_params(axis="x", labelrotation=20)
    return save(fig, out_png, title)
