"""Dask scaling of the analyze stage (frame overlap and format/difference tables): a LocalCluster of
1 worker against 2, on the same multi-million-edge synthetic store as the statistics benchmark."""

from __future__ import annotations

import os

from .bench_stats import make_store
from .common import bench_dir, worker_scaling


def main(num_edges: int | None = None, repeats: int = 3) -> dict:
    from dynagnn.analysis.reuse import formats_table, overlap_table
    from dynagnn.data.store import open_store

    num_edges = num_edges or int(os.environ.get("DYNAGNN_BENCH_STATS_EDGES", 2_000_000))
    path = bench_dir() / f"stats_store_{num_edges}.zarr"
    if not path.exists():
        make_store(path, num_nodes=num_edges // 8, num_edges=num_edges, num_snapshots=24)
    store = open_store(path)
    print(f"\n== analyze (overlap S=2,4,8 + formats l=1,5): {store.num_snapshots} snapshots, "
          f"{int(store.offsets[-1]):,} stored edges")

    def run(client):
        overlap_table(path, client, progress=False)
        formats_table(path, client, progress=False)

    return worker_scaling(run, repeats)


if __name__ == "__main__":
    main()
