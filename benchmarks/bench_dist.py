"""Training on several workers: epoch time, bytes and communication share of the vertex and ESDG
snapshot strategies against sequential training, and where snapshot partitioning's volume falls
below vertex partitioning's.

Run alone: ``python -m benchmarks dist``. On this project's 2-core machines, P = 2 is 2 processes of
1 thread each, compared with sequential on 1 and on 2 threads; the crossover table runs P = 4 and 8
oversubscribed and reads only its byte counts. ``DYNAGNN_BENCH_DIST_EPOCHS`` (default 4, the first
is warm-up) sets the epochs of the timed runs.
"""

from __future__ import annotations

import os
import tempfile

import pandas as pd

from .bench_train import collegemsg_store, synthetic_store
from .common import blad_store

MODEL = "wdgcn"   # a GCN then a per-vertex LSTM: served by both strategies
HIDDEN = 32
WINDOW = 4


def blad_small_store():
    return blad_store("blad_small", 20000, 200000, 30)


def _run(path, strategy, workers, threads, epochs, batch_windows=1):
    from dynagnn.train.engine import TrainConfig, train

    cfg = TrainConfig.of(model=MODEL, strategy=strategy, workers=workers, threads=threads, hidden=HIDDEN,
                      window=WINDOW, epochs=epochs, patience=epochs, warmup_epochs=1,
                      batch_windows=batch_windows)
    with tempfile.TemporaryDirectory() as out:
        metrics, timings = train(path, out, cfg, progress=False)
        comm = pd.read_parquet(os.path.join(out, "comm.parquet"))
    return metrics, timings, comm


def _epoch_figures(metrics, timings, comm) -> dict:
    """Median over timed epochs of: the slowest worker's epoch seconds, the mean worker's share of
    communication and sync_wait, and the bytes all workers sent in training."""
    t = timings[(timings["epoch"] >= 0) & ~timings["warmup"]]
    per = t.groupby(["epoch", "worker"])["seconds"].sum()
    epoch_s = per.groupby("epoch").max()
    phase = t.groupby(["epoch", "worker", "phase"])["seconds"].sum().unstack(fill_value=0.0)
    share = {p: float(((phase[p] if p in phase else 0.0) / per).groupby("epoch").mean().median())
             for p in ("communication", "sync_wait")}
    tr = comm[(comm["stage"] == "train") & comm["epoch"].isin(epoch_s.index)]
    nbytes = tr.groupby("epoch")["bytes"].sum()
    exch = tr[tr["collective"].str.startswith(("halo", "redistribute"))].groupby("epoch")["bytes"].sum()
    return {"epoch_s": float(epoch_s.median()), "comm_share": share["communication"],
            "wait_share": share["sync_wait"], "bytes": float(nbytes.median()) if len(nbytes) else 0.0,
            "exchange_bytes": float(exch.median()) if len(exch) else 0.0,
            "loss": float(metrics["loss"].iloc[-1])}


def _modelled_bytes(path, strategy, workers, batch_windows=1) -> float:
    """The closed form of what one training epoch moves (halo or redistributions, forward and
    backward), from analysis/commvolume/ on the same partition and steps."""
    from dynagnn.analysis.commvolume import count_vertex_volume, snapshot_redistribution_volume
    from dynagnn.data.store import open_store
    from dynagnn.train.transfer import load_host_snapshots
    from dynagnn.tasks.snapshot import chronological_split, infer_task, make_task
    from dynagnn.train.strategies.vertex import vertex_parts

    store = open_store(path)
    N = store.num_nodes
    task = make_task(infer_task(store), store)
    ends = chronological_split(task.steps(WINDOW)).train
    steps = [ends[i:i + batch_windows] for i in range(0, len(ends), batch_windows)]
    F = int(store.features().shape[-1])
    if strategy == "snapshot":
        # WD-GCN: one layer; redistribution 1 carries the GCN output (H), 2 the LSTM output (H)
        rows = sum(snapshot_redistribution_volume(len(s) * WINDOW, N, workers).units for s in steps)
        return rows * (HIDDEN + HIDDEN) * 4 * 2
    host = load_host_snapshots(store)
    parts = vertex_parts("metis", host, N, workers)
    per_t = {}
    for t in range(store.num_snapshots):
        k = host[t].keys
        per_t[t] = count_vertex_volume([(k % N, k // N)], N, parts, workers)
    # "auto" order aggregates the narrower side; aggregating X itself (F <= H) needs no gradient back
    width, directions = (F, 1) if F <= HIDDEN else (HIDDEN, 2)
    rows = sum(per_t[x] for s in steps for e in s for x in range(e - WINDOW + 1, e + 1))
    return rows * width * 4 * directions


def timed(datasets: dict, epochs: int) -> list[dict]:
    print(f"\n== {MODEL}, hidden {HIDDEN}, window {WINDOW}, B = 1; medians of {epochs - 1} epochs after a warm-up")
    print("  bytes/epoch: all collectives; exchange: halo or redistributions (forward and backward),")
    print("  beside the closed form of analysis/commvolume/ for the same partition and steps")
    print(f"  {'dataset':<11s} {'run':<24s} {'s/epoch':>8s} {'vs seq 1t':>9s} {'comm':>6s} {'wait':>6s} "
          f"{'bytes/epoch':>13s} {'exchange':>13s} {'closed form':>13s}")
    out = []
    for label, path in datasets.items():
        runs = [("sequential", 1, 1), ("sequential", 1, 2), ("vertex", 1, 1), ("vertex", 2, 1),
                ("snapshot", 1, 1), ("snapshot", 2, 1)]
        base = None
        for strategy, P, threads in runs:
            f = _epoch_figures(*_run(path, strategy, P, threads, epochs))
            base = base or f["epoch_s"]
            model = _modelled_bytes(path, strategy, P) if P > 1 else 0.0
            name = f"{strategy} P={P} ({threads} thread{'s' if threads > 1 else ''})"
            print(f"  {label:<11s} {name:<24s} {f['epoch_s']:8.3f} {base / f['epoch_s']:8.2f}x "
                  f"{f['comm_share']:6.1%} {f['wait_share']:6.1%} {f['bytes']:13,.0f} "
                  f"{f['exchange_bytes']:13,.0f} {model:13,.0f}")
            out.append({"dataset": label, "strategy": strategy, "workers": P, "threads": threads, **f,
                        "modelled_bytes": model})
    return out


def crossover() -> list[dict]:
    """Counted training bytes per epoch of vertex (METIS) and snapshot partitioning, B = 2, on
    CollegeMsg raw and with edge life 5; P = 4 and 8 run oversubscribed (bytes only)."""
    print("\n== crossover: bytes per training epoch (counted; P = 4, 8 oversubscribed, volume only), B = 2")
    print(f"  {'input':<16s} {'P':>2s} {'vertex':>14s} {'snapshot':>14s} {'snapshot/vertex':>16s}")
    out = []
    for life in (1, 5):
        path = collegemsg_store(life)
        for P in (2, 4, 8):
            b = {}
            for strategy in ("vertex", "snapshot"):
                _, _, comm = _run(path, strategy, P, 1, 1, batch_windows=2)
                tr = comm[(comm["stage"] == "train") & comm["collective"].str.startswith(("halo", "redistribute"))]
                b[strategy] = float(tr["bytes"].sum())
            print(f"  {'collegemsg life ' + str(life):<16s} {P:2d} {b['vertex']:14,.0f} {b['snapshot']:14,.0f} "
                  f"{b['snapshot'] / b['vertex']:15.2f}x")
            out.append({"edge_life": life, "workers": P, **b})
    return out


def main() -> dict:
    epochs = int(os.environ.get("DYNAGNN_BENCH_DIST_EPOCHS", 4))
    datasets = {"collegemsg": collegemsg_store(1), "blad_small": blad_small_store(),
                "churn_50k": synthetic_store(50_000)}
    return {"timed": timed(datasets, epochs), "crossover": crossover()}
