"""From a PyTorch Geometric `TemporalData` in memory to a trained model, with no file in between.

    python examples/from_pyg.py            # 20,000 events of 500 users and 200 items
    python examples/from_pyg.py --tiny     # 600 events, 1 epoch: a few seconds

`dynagnn.from_pyg` turns the events (`src`, `dst`, `t`, their features `msg`) into a store: the
event stream as it is, for the event models (TGN, JODIE, APAN: `strategy="events"`), and cut into
snapshots of a fixed number of events (`snapshots={"by": "count", "size": ...}`) for the snapshot
models (T-GCN here). A PyTorch Geometric Temporal signal (`StaticGraphTemporalSignal`,
`DynamicGraphTemporalSignal`) goes the same way, its time steps the snapshots.

PyTorch Geometric is optional (`pip install dynagnn[pyg]`): without it this script hands from_pyg an
object with the same attributes, which it reads alike.
"""

from __future__ import annotations

import argparse
import tempfile
import types
from pathlib import Path

import numpy as np
import torch

import dynagnn


def interactions(users: int, items: int, events: int, seed: int = 0):
    """A user-item stream with habits: each user returns to 3 favourite items 80% of the time, so the
    next interactions are predictable from the past ones. Items are ids users..users+items-1."""
    rng = np.random.default_rng(seed)
    favourites = rng.integers(0, items, (users, 3))
    src = rng.integers(0, users, events)
    habit = rng.random(events) < 0.8
    dst = np.where(habit, favourites[src, rng.integers(0, 3, events)], rng.integers(0, items, events)) + users
    t = np.cumsum(rng.integers(1, 60, events))               # seconds, increasing
    msg = np.stack([habit, rng.random(events)], 1).astype(np.float32)   # 2 features per event
    columns = {"src": torch.from_numpy(src), "dst": torch.from_numpy(dst), "t": torch.from_numpy(t),
               "msg": torch.from_numpy(msg)}
    try:
        from torch_geometric.data import TemporalData
    except ImportError:
        print("torch_geometric is not installed: an object with TemporalData's attributes stands in")
        return types.SimpleNamespace(**columns)
    return TemporalData(**columns)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Build a PyTorch Geometric TemporalData in memory, turn it into a "
                                                 "store with dynagnn.from_pyg, train TGN and T-GCN on it.")
    parser.add_argument("--tiny", action="store_true", help="600 events and 1 epoch (a few seconds)")
    parser.add_argument("--out", type=Path, help="folder for the store and the runs (default: a temporary one)")
    parser.add_argument("--epochs", type=int, help="maximum epochs (default 5, with --tiny 1)")
    args = parser.parse_args(argv)

    users, items, events = (30, 20, 600) if args.tiny else (500, 200, 20_000)
    epochs = args.epochs or (1 if args.tiny else 5)
    data = interactions(users, items, events)
    with tempfile.TemporaryDirectory(prefix="dynagnn-example-") as tmp:
        out = args.out or Path(tmp)
        store = dynagnn.from_pyg(data, out / "events.zarr", name="interactions", time_unit="s",
                                 snapshots={"by": "count", "size": events // 12},   # 12 snapshots
                                 features={"kind": "degree", "dim": 16})
        opened = dynagnn.open_store(store)
        print(f"store: {opened.num_nodes} nodes, {opened.attrs['num_events']} events, {opened.num_snapshots} snapshots")

        width = 16 if args.tiny else 64
        tgn = dynagnn.fit(store, model="tgn", strategy="events", out=out / "tgn", overwrite=True, epochs=epochs,
                          memory_dim=width, time_dim=width, event_batch=100 if args.tiny else 200)
        tgcn = dynagnn.fit(store, model="tgcn", out=out / "tgcn", overwrite=True, epochs=epochs, hidden=width,
                           window=2 if args.tiny else 4)
        for name, result in (("tgn", tgn), ("tgcn", tgcn)):
            best = result.best
            print(f"{name} (strategy {result.config.strategy}): best epoch {best['epoch']}, loss {best['loss']:.4f}")
            for key in ("test_ap", "test_auc", "test_mrr"):
                print(f"{name} {key}: {best[key]:.4f}")


if __name__ == "__main__":
    main()
