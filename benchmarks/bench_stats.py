"""Dask scaling of the statistics stage: a LocalCluster of 1 worker against 2, same store, same run."""

from __future__ import annotations

import os

from .common import bench_dir, worker_scaling


def make_store(path, num_nodes: int, num_edges: int, num_snapshots: int):
    from dynagnn.data.ingest import ingest

    spec = {"format": "synthetic", "generator": "churn",
            "params": {"num_nodes": num_nodes, "num_edges": num_edges, "num_snapshots": num_snapshots, "seed": 0},
            "snapshots": {"by": "source"}, "features": {"kind": "none"}}
    return ingest(spec, path, name="bench_stats", threads=2)


def main(num_edges: int | None = None, repeats: int = 3) -> dict:
    from dynagnn.analysis.stats import compute_stats
    from dynagnn.data.store import open_store

    num_edges = num_edges or int(os.environ.get("DYNAGNN_BENCH_STATS_EDGES", 2_000_000))
    T = 24
    path = bench_dir() / f"stats_store_{num_edges}.zarr"
    if not path.exists():
        make_store(path, num_nodes=num_edges // 8, num_edges=num_edges, num_snapshots=T)
    store = open_store(path)
    nnz = int(store.offsets[-1])
    print(f"\n== stats: {T} snapshots, {nnz:,} stored edges (undirected, both directions), {store.num_nodes:,} nodes")
    return worker_scaling(lambda client: compute_stats(path, client, progress=False), repeats)


if __name__ == "__main__":
    main()
