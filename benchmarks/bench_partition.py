"""Partitioners side by side at 2, 4, 8, 16 workers on one synthetic BLAD-style store: quality
(edge cut, Sven's maximum per-worker volume, ESDG's volume over snapshots, balance) and time, with
Re-FlexBiCut's maximum per-worker volume against range and METIS (Sven reports up to 59.2% less
than range)."""

from __future__ import annotations

import os

from .common import bench_dir


def main(num_nodes: int | None = None) -> dict:
    from dynagnn.analysis.partitions import partition_table
    from dynagnn.data.ingest import ingest

    num_nodes = num_nodes or int(os.environ.get("DYNAGNN_BENCH_PART_NODES", 50_000))
    path = bench_dir() / f"partition_store_{num_nodes}.zarr"
    if not path.exists():
        ingest({"format": "synthetic", "generator": "blad", "snapshots": {"by": "source"},
                "params": {"num_nodes": num_nodes, "num_edges": 8 * num_nodes, "num_snapshots": 30, "seed": 0},
                "features": {"kind": "none"}}, path, name="bench_partition", threads=2)
    df = partition_table(path, None, (2, 4, 8, 16))
    print(f"\n== partitioners: BLAD-style synthetic, {num_nodes:,} nodes, {8 * num_nodes:,} edges, 30 snapshots")
    cols = ["method", "workers", "seconds", "edge_cut", "max_part_comm", "snapshot_volume", "load_balance",
            "edge_balance"]
    print(df[cols].to_string(index=False, float_format=lambda x: f"{x:,.3f}"))
    out = {}
    for P in (2, 4, 8, 16):
        sub = df[df["workers"] == P].set_index("method")["max_part_comm"]
        vs_range = 1 - sub["reflexbicut"] / sub["range"]
        vs_metis = 1 - sub["reflexbicut"] / sub["metis"]
        out[P] = (vs_range, vs_metis)
        print(f"  P={P:2d}: Re-FlexBiCut max per-worker volume {100 * vs_range:5.1f}% below range, "
              f"{100 * vs_metis:5.1f}% below METIS")
    return out


if __name__ == "__main__":
    main()
