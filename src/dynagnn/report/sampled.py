"""Sampled training's data path side by side (BGL, issue 16): no cache, a static cache, BGL's FIFO.

One row per training run (its strategy and ``metrics.parquet``): the median epoch time, the hit ratio
of each cache level, and per epoch the bytes the store decoded (``store_chunk_bytes``: its chunks'
uncompressed bytes) beside the bytes of the rows asked of it (``store_bytes``), each the mean over the warm epochs (every epoch after the first, which
fills the FIFO caches; all of them for a one-epoch run).
"""

from __future__ import annotations

import pandas as pd

from dynagnn.errors import InputError

COLUMNS = ["strategy", "epochs", "epoch_s", "l1_hit_ratio", "l2_hit_ratio", "store_bytes", "store_chunk_bytes",
           "store_seconds", "order_sequences", "best_val"]
NEEDED = ("train_seconds", "l1_hit_ratio", "l2_hit_ratio", "store_bytes", "store_chunk_bytes")


def sampled_table(runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """``runs``: strategy -> its metrics.parquet (one row per epoch). InputError for a run that is not
    sampled training (no cache columns)."""
    rows = []
    for strategy, m in runs.items():
        missing = [c for c in NEEDED if c not in m.columns]
        if missing:
            raise InputError(f"run {strategy!r}: metrics without {', '.join(missing)}: not a sampled training run")
        warm = m[m["epoch"] > 0] if len(m) > 1 else m
        val = [c for c in m.columns if c.startswith("val_")]
        rows.append({"strategy": strategy, "epochs": len(m), "epoch_s": float(warm["train_seconds"].median()),
                     **{c: float(warm[c].mean()) for c in NEEDED[1:]},
                     "store_seconds": float(warm.get("store_seconds", pd.Series([0.0])).mean()),
                     "order_sequences": float(m.get("order_sequences", pd.Series([0.0])).iloc[-1]),
                     "best_val": float(m[val[0]].max()) if val else float("nan")})
    return pd.DataFrame(rows, columns=COLUMNS)
