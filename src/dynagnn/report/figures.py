"""Figures, one function each; every figure is written as PNG and PDF side by side."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def save(fig, out_png: str | Path) -> list[Path]:
    """Save ``fig`` to ``out_png`` and the same stem with .pdf, each through a temporary file."""
    out_png = Path(out_png)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for path in (out_png, out_png.with_suffix(".pdf")):
        tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            fig.savefig(tmp, format=path.suffix[1:], dpi=150, bbox_inches="tight")
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        written.append(path)
    plt.close(fig)
    return written


def load_variation(stats: pd.DataFrame, out_png: str | Path, title: str = "") -> list[Path]:
    """Vertex and edge counts over time, overlap with the previous snapshot, and the distributions
    of per-snapshot edge and vertex counts (the imbalance BLAD's scheduler exists for)."""
    fig, ax = plt.subplots(2, 2, figsize=(10, 6.5))
    t = stats["snapshot"]
    a = ax[0, 0]
    a.plot(t, stats["edges"], color="tab:blue", label="edges")
    a.set_xlabel("snapshot")
    a.set_ylabel("edges", color="tab:blue")
    b = a.twinx()
    b.plot(t, stats["active_nodes"], color="tab:orange", label="active vertices")
    b.set_ylabel("active vertices", color="tab:orange")
    a.set_title("load per snapshot")

    ax[0, 1].plot(t[1:], stats["overlap_rate"][1:], color="tab:green", label="overlap rate")
    ax[0, 1].plot(t[1:], stats["jaccard"][1:], color="tab:purple", label="Jaccard")
    ax[0, 1].set_ylim(0, 1.02)
    ax[0, 1].set_xlabel("snapshot")
    ax[0, 1].set_title("edges shared with the previous snapshot")
    ax[0, 1].legend(loc="best", fontsize=8)

    for a, col, colour in ((ax[1, 0], "edges", "tab:blue"), (ax[1, 1], "active_nodes", "tab:orange")):
        a.hist(stats[col], bins=min(30, max(5, len(stats) // 3)), color=colour, alpha=0.8)
        lo, hi = stats[col].min(), stats[col].max()
        ratio = f"max/min = {hi / lo:.2f}" if lo > 0 else "min = 0"
        a.set_title(f"distribution of {col.replace('_', ' ')} ({ratio})")
        a.set_xlabel(col.replace("_", " "))
        a.set_ylabel("snapshots")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return save(fig, out_png)
