"""PyTorch Geometric Temporal's own loop (issue 33): the state carried through the whole training
sequence, every snapshot's loss, one optimiser step per epoch (its "cumulative" regime), on its own
datasets, with the PyG-T rung beside dynagnn's sequential and frames in the same loop.

Data: england_covid and twitter_tennis_rg17 (``../shared/data/pyg_temporal``, PyG Temporal's JSON; the
regress task) and a chickenpox-like store (a static graph of 20 nodes over 500 snapshots, the target
an autoregressive signal smoothed over the graph, the features its 4 previous values). Models: T-GCN
(PyG Temporal's TGCN: ``graph_input`` x), GCRN, EvolveGCN-O and MPNN-LSTM, hidden 32.

Rungs, each trained the same epochs with the same seed: ``pyg`` is the sequential strategy fed and
convolved as PyG Temporal does (``pyg_baseline.py``: tensors built from numpy at every access,
``gcn_norm`` and gather/scatter at every call), ``sequential`` dynagnn's loop, ``frames`` PiPAD's frames
over the carried sequence (S tuned after a profiling epoch, reuse on, pipeline off), ``frames_s1`` the
same with S fixed at 1 (a frame of one must cost what sequential costs, within 3%). Printed per
model and dataset: the median epoch (the first left out, frames' profiling epoch; the tuner's trials
after it are outside every epoch), time per
snapshot, aten operator calls per snapshot (nested calls included, counted by the torch profiler over
one more epoch), the share of the operators' own time in dense matrix products (GEMM %: the
arithmetic every rung computes alike, which bounds what cutting the rest can gain), the test MSE after
the epochs, and each rung's speed-up over the PyG-T rung.

Then BLAD's pair over the carried sequence (truncated BPTT of 8, one step per epoch, T-GCN and GCRN):
``group`` (two processes of one thread each: p1's forward of piece j+1 overlaps p2's backward of piece
j) against ``sequential`` on the same two cores, at one and at two threads (its faster is the baseline).

Run alone: ``python -m benchmarks pygt_loop``. Environment: ``DYNAGNN_BENCH_PYGT_SMOKE=1`` (the
chickenpox-like store cut to 60 snapshots, T-GCN only, 3 epochs), ``DYNAGNN_BENCH_PYGT_EPOCHS``
(default 8), ``DYNAGNN_BENCH_THREADS`` (torch threads, default 1), ``DYNAGNN_BENCH_PYGT_MODELS`` and
``DYNAGNN_BENCH_PYGT_DATASETS`` (comma-separated words; default all), ``DYNAGNN_BENCH_PYGT_GROUP=0``
(skip the pair's table).
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path

import numpy as np

from .bench_frames import PYG_DATA, _ingest
from .common import bench_dir

MODELS = ("tgcn_x", "gcrn", "evolvegcn_o", "mpnn_lstm")
RUNGS = {"pyg": ("sequential", {}), "sequential": ("sequential", {}),
         "frames": ("frames", {"frame_reuse": "on", "pipeline": "off"}),
         "frames_s1": ("frames", {"frame_size": 1, "frame_reuse": "on", "pipeline": "off"})}


def model_options(model: str) -> dict:
    """The run keys of a benchmark model name (``tgcn_x``: T-GCN in PyG Temporal's form)."""
    return {"model": "tgcn", "graph_input": "x"} if model == "tgcn_x" else {"model": model}


def chickenpox_like(num_snapshots: int = 500, num_nodes: int = 20, lags: int = 4, seed: int = 0):
    """A static graph of ``num_nodes`` over ``num_snapshots`` snapshots, Hungary's chickenpox layout:
    the target at t an AR(1) signal mixed over the graph, the features its ``lags`` previous values."""
    from dynagnn.data.store import write_store
    from dynagnn.data import discretize as D
    from dynagnn.data.types import RawGraph, SnapshotList

    path = bench_dir() / f"pygt_chickenpox_{num_snapshots}.zarr"
    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    key = np.unique(rng.integers(0, num_nodes * num_nodes, 3 * num_nodes))
    row, col = key // num_nodes, key % num_nodes
    keep = row != col
    row, col = row[keep], col[keep]
    mix = np.zeros((num_nodes, num_nodes))
    mix[row, col] = 1.0
    mix = 0.5 * np.eye(num_nodes) + 0.5 * mix / np.maximum(mix.sum(1, keepdims=True), 1)
    y = np.zeros((num_snapshots + lags, num_nodes))
    for t in range(1, len(y)):
        y[t] = 0.8 * mix @ y[t - 1] + rng.normal(0, 1, num_nodes)
    x = np.stack([y[t:t + lags].T for t in range(num_snapshots)]).astype(np.float32)   # [T, N, lags]
    target = y[lags:].astype(np.float32)                                                # [T, N]
    snaps = SnapshotList([row] * num_snapshots, [col] * num_snapshots, None, np.arange(num_snapshots))
    raw = RawGraph(num_nodes=num_nodes, node_ids=np.arange(num_nodes), snapshots=snaps, directed=False,
                   name="chickenpox-like", node_labels=target, node_features=x)
    built = D.build_snapshots(raw, by="source", directed=False)
    return write_store(path, raw, built, x, spec={"bench": "pygt_chickenpox", "snapshots": num_snapshots})


def datasets(smoke: bool) -> dict:
    if smoke:
        return {"chickenpox-like 60": chickenpox_like(60)}
    out = {}
    for name, file in (("england_covid", "england_covid.json"), ("twitter_tennis", "twitter_tennis_rg17.json")):
        if (PYG_DATA / file).is_file():
            out[name] = _ingest(name, {"format": "pyg-temporal-json", "path": str(PYG_DATA / file)})
        else:
            print(f"  ({name}: {PYG_DATA / file} absent, skipped)")
    out["chickenpox-like"] = chickenpox_like()
    return out


# dense matrix products: the arithmetic every rung computes alike (the same FLOPs, batched or not)
GEMMS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::mkldnn_rnn_layer",
         "aten::mkldnn_rnn_layer_backward")


def operators_per_snapshot(tr, epoch: int) -> tuple[float, float]:
    """Over one training epoch under the torch profiler: aten operator calls (nested included) per
    training snapshot, and the share of the aten operators' own time in dense matrix products."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        tr.train_epoch(epoch)
    calls = sum(1 for e in prof.events() if e.name.startswith("aten::"))
    own = {e.key: e.self_cpu_time_total for e in prof.key_averages() if e.key.startswith("aten::")}
    return calls / max(1, len(tr.split.train)), sum(own.get(k, 0) for k in GEMMS) / max(1e-9, sum(own.values()))


def run_rung(path, model: str, rung: str, epochs: int, threads: int) -> dict:
    from dynagnn.train.engine import TrainConfig, Trainer

    from .pyg_baseline import PygFeeder

    strategy, opts = RUNGS[rung]
    model_opts = model_options(model)
    cfg = TrainConfig.of(**model_opts, strategy=strategy, task="regress", sequence="carry", epochs=epochs,
                         patience=epochs, warmup_epochs=1, hidden=32, lr=0.01, threads=threads, **opts)
    tr = Trainer(path, cfg, progress=False)
    if rung == "pyg":
        tr.strategy.feeder = PygFeeder(tr.store, "cpu")
    try:
        metrics, _ = tr.fit()
        after = metrics[metrics["epoch"] >= 1]
        epoch_s = statistics.median(after["train_seconds"])
        ops, gemm = operators_per_snapshot(tr, epochs)
    finally:
        tr.strategy.close()
    out = {"epoch_s": epoch_s, "per_snapshot_s": epoch_s / max(1, len(tr.split.train)), "ops": ops, "gemm": gemm,
           "test_mse": float(metrics["test_mse"].iloc[-1]), "snapshots": len(tr.split.train)}
    if "frame_size" in metrics:
        out["frame_size"] = int(metrics["frame_size"].iloc[-1])
    return out


GROUP_TBPTT = 8
GROUP_MODELS = ("tgcn_x", "gcrn")


def pair_rungs(path, model: str, epochs: int) -> dict:
    """Median epoch seconds (the first left out) of sequential at 1 and 2 threads and of the group
    strategy's pair (1 thread each), the same carried sequence with tbptt GROUP_TBPTT; and each one's
    test MSE (they train the same model)."""
    from dynagnn.api import train
    from dynagnn.train.engine import TrainConfig

    model_opts = model_options(model)
    out = {}
    for rung, strategy, threads in (("sequential 1t", "sequential", 1), ("sequential 2t", "sequential", 2),
                                    ("group 2x1t", "group", 1)):
        cfg = TrainConfig.of(**model_opts, strategy=strategy, task="regress", sequence="carry", tbptt=GROUP_TBPTT,
                             epochs=epochs, patience=epochs, warmup_epochs=1, hidden=32, lr=0.01, threads=threads)
        metrics, _ = train(path, bench_dir() / "pygt_pair" / f"{Path(path).stem}-{model}-{strategy}-{threads}", cfg,
                           progress=False, overwrite=True)
        out[rung] = {"epoch_s": statistics.median(metrics[metrics["epoch"] >= 1]["train_seconds"]),
                     "test_mse": float(metrics["test_mse"].iloc[-1])}
    return out


def frame_of_one_ratio(path, model: str, rounds: int, threads: int) -> float:
    """The median over ``rounds`` of a frames-with-S-1 epoch's time over a sequential epoch's, the two
    trainers' epochs alternating in one process (so the machine's drift falls on both alike), after
    two epochs of each (the frames' reuse cache filled)."""
    import time

    import torch

    from dynagnn.train.engine import TrainConfig, Trainer

    torch.set_num_threads(threads)
    model_opts = model_options(model)
    trainers = []
    for strategy, opts in (RUNGS["sequential"], RUNGS["frames_s1"]):
        cfg = TrainConfig.of(**model_opts, strategy=strategy, task="regress", sequence="carry", hidden=32, lr=0.01,
                             threads=threads, **opts)
        trainers.append(Trainer(path, cfg, progress=False))
    for tr in trainers:
        for epoch in range(2):
            tr.train_epoch(epoch)
    ratios = []
    for r in range(rounds):
        took = []
        for tr in trainers:
            t0 = time.perf_counter()
            tr.train_epoch(2 + r)
            took.append(time.perf_counter() - t0)
        ratios.append(took[1] / took[0])
    for tr in trainers:
        tr.strategy.close()
    return statistics.median(ratios)


def _wanted(env: str, names) -> list:
    words = [w.strip() for w in os.environ.get(env, "").split(",") if w.strip()]
    return [n for n in names if not words or any(w in n for w in words)]


def main() -> dict:
    smoke = os.environ.get("DYNAGNN_BENCH_PYGT_SMOKE") == "1"
    epochs = 3 if smoke else int(os.environ.get("DYNAGNN_BENCH_PYGT_EPOCHS", 8))
    threads = int(os.environ.get("DYNAGNN_BENCH_THREADS", 1))
    models = ("tgcn_x",) if smoke else tuple(_wanted("DYNAGNN_BENCH_PYGT_MODELS", MODELS))
    data = datasets(smoke)
    data = {k: data[k] for k in _wanted("DYNAGNN_BENCH_PYGT_DATASETS", list(data))}
    print(f"\n== PyG Temporal's loop (sequence carry, one step per epoch): {epochs} epochs (the first left out: "
          f"frames' profiling epoch), {threads} thread(s), hidden 32")
    print(f"  {'data':<18s} {'model':<12s} {'rung':<11s} {'s/epoch':>8s} {'ms/snap':>8s} {'ops/snap':>9s} "
          f"{'GEMM %':>7s} {'test MSE':>9s} {'vs PyG-T':>9s}")
    results = {}
    for label, path in data.items():
        for model in models:
            res = {rung: run_rung(path, model, rung, epochs, threads) for rung in RUNGS}
            results[(label, model)] = res
            base = res["pyg"]["epoch_s"]
            for rung, r in res.items():
                extra = f"  (S = {r['frame_size']})" if "frame_size" in r else ""
                print(f"  {label:<18s} {model:<12s} {rung:<11s} {r['epoch_s']:8.3f} {1e3 * r['per_snapshot_s']:8.3f} "
                      f"{r['ops']:9.0f} {100 * r['gemm']:6.1f}% {r['test_mse']:9.4f} {base / r['epoch_s']:8.2f}x{extra}", flush=True)
    if results:
        best = [min(r["sequential"]["epoch_s"], r["frames"]["epoch_s"]) for r in results.values()]
        ratios = [r["pyg"]["epoch_s"] / b for r, b in zip(results.values(), best)]
        print(f"  dynagnn's best rung over the PyG-T rung: min {min(ratios):.2f}x, median "
              f"{statistics.median(ratios):.2f}x, max {max(ratios):.2f}x over {len(ratios)} model x dataset cases "
              "(aim: >= 2x everywhere)")
        print("  a frame of one against sequential, their epochs alternating (median of 15 rounds; aim: <= 1.03):")
        for (label, model) in results:
            ratio = frame_of_one_ratio(data[label], model, 15, threads)
            results[(label, model)]["frames_s1"]["alternating_ratio"] = ratio
            print(f"    {label:<18s} {model:<12s} frames S=1 / sequential {ratio:.3f}", flush=True)
    out = {f"{k[0]}/{k[1]}": v for k, v in results.items()}
    if smoke or os.environ.get("DYNAGNN_BENCH_PYGT_GROUP") == "0":
        return out
    print(f"\n== BLAD's pair over the carried sequence: tbptt {GROUP_TBPTT}, one step per epoch, {epochs} epochs (the "
          "first left out), 2 cores for each rung")
    print(f"  {'data':<18s} {'model':<12s} {'rung':<14s} {'s/epoch':>8s} {'test MSE':>9s} {'vs best seq':>11s}")
    for label, path in data.items():
        for model in [m for m in models if m in GROUP_MODELS]:
            res = pair_rungs(path, model, epochs)
            best = min(res["sequential 1t"]["epoch_s"], res["sequential 2t"]["epoch_s"])
            for rung, r in res.items():
                print(f"  {label:<18s} {model:<12s} {rung:<14s} {r['epoch_s']:8.3f} {r['test_mse']:9.4f} "
                      f"{best / r['epoch_s']:10.2f}x", flush=True)
            out[f"pair/{label}/{model}"] = res
    return out


if __name__ == "__main__":
    main()
