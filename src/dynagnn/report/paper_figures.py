"""Figures of the papers' ablations and checks that no single stage draws (rules/papers.smk)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .figures import save


def runs_side_by_side(table: pd.DataFrame, out_png: str | Path, title: str = "") -> list[Path]:
    """Training runs of :func:`dynagnn.report.studies.runs_table` side by side, the baseline first:
    median epoch time with each run's speed-up over the baseline (PiPAD's ladder), peak memory (ESDG's
    checkpoint blocks) and the best validation metric with the test metric at that epoch (BLAD's
    accuracy against sequential)."""
    names = table["run"].tolist()
    x = np.arange(len(names))
    fig, ax = plt.subplots(1, 3, figsize=(max(10, 2.6 * len(names)), 3.8))
    bars = ax[0].bar(x, table["epoch_s"], color="tab:blue")
    for bar, s in zip(bars, table["speedup"]):
        ax[0].annotate(f"{s:.2f}x", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                       va="bottom", fontsize=8)
    ax[0].set_ylabel("median epoch (s)")
    ax[0].set_title(f"epoch time; speed-up over {names[0]}")
    ax[1].bar(x, table["peak_memory_mb"], color="tab:orange")
    ax[1].set_ylabel("peak memory (MiB)")
    devices = ", ".join(sorted(set(table["device"].astype(str))))
    ax[1].set_title(f"peak memory ({devices}: {'allocated' if 'cuda' in devices else 'process RSS'})")
    metric = str(table["val_metric"].iloc[0]).removeprefix("val_") or "metric"
    width = 0.4
    ax[2].bar(x - width / 2, table["best_val"], width, label="validation (best)")
    ax[2].bar(x + width / 2, table["test_at_best"], width, label="test at that epoch")
    ax[2].set_ylabel(metric)
    ax[2].set_title(f"{metric} of each run")
    ax[2].legend(fontsize=7, loc="lower right")
    for a in ax:
        a.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    return save(fig, out_png, title)
