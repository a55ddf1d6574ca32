"""Ingestion of a large SNAP edge list against pyarrow's plain CSV parse of the same file.

The plain parse is the floor any reader pays; the issue's goal is ingestion within 2x of it.
Three rows, all medians of the same repeats in one run: the plain parse, our reader (parse, id
mapping, time sort check), and the whole ingest (reader, discretisation into snapshots, parallel
Zarr write).
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from .common import bench_dir, interleaved_medians, row


def make_edgelist(path, num_events: int, num_nodes: int, seed: int = 0) -> None:
    """A SNAP-style `src dst t` file of random time-sorted events, space separated."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(1_000_000_000, 1_000_000_000 + 365 * 86400, num_events))
    table = pa.table({"src": rng.integers(0, num_nodes, num_events), "dst": rng.integers(0, num_nodes, num_events),
                      "t": t})
    tmp = path.with_suffix(".tmp")
    pacsv.write_csv(table, tmp, pacsv.WriteOptions(include_header=False, delimiter=" "))
    os.replace(tmp, path)


def plain_parse(path):
    return pacsv.read_csv(path, read_options=pacsv.ReadOptions(column_names=["src", "dst", "t"]),
                          parse_options=pacsv.ParseOptions(delimiter=" "),
                          convert_options=pacsv.ConvertOptions(column_types={c: pa.int64() for c in ("src", "dst", "t")}))


def main(num_events: int | None = None, threads: int = 2, repeats: int = 5) -> dict:
    from dynagnn.data.ingest import ingest
    from dynagnn.data.sources import read_snap_edgelist

    num_events = num_events or int(os.environ.get("DYNAGNN_BENCH_EVENTS", 10_000_000))
    path = bench_dir() / f"edges_{num_events}.txt"
    if not path.exists():
        make_edgelist(path, num_events, num_nodes=max(1000, num_events // 10))
    size_mb = path.stat().st_size / 2**20
    print(f"\n== ingest: {num_events:,} events, {size_mb:.0f} MiB SNAP edge list, {threads} threads, "
          f"medians of {repeats} interleaved rounds")
    out = bench_dir() / "ingest_store.zarr"
    spec = {"format": "snap-edgelist", "path": str(path), "directed": True,
            "snapshots": {"by": "time", "width": 7 * 86400}, "features": {"kind": "none"}}
    med = interleaved_medians({
        "parse": lambda: plain_parse(path),
        "read": lambda: read_snap_edgelist(path),
        "ingest": lambda: ingest(spec, out, name="bench", threads=threads),
    }, rounds=repeats)
    t_parse, t_read, t_ingest = med["parse"], med["read"], med["ingest"]
    shutil.rmtree(out, ignore_errors=True)
    print(row("pyarrow.csv.read_csv (plain parse)", t_parse))
    print(row("dynagnn read_snap_edgelist", t_read, f"{t_read / t_parse:5.2f}x the plain parse"))
    print(row("dynagnn ingest (read+snapshots+store)", t_ingest, f"{t_ingest / t_parse:5.2f}x the plain parse"))
    return {"parse_s": t_parse, "read_s": t_read, "ingest_s": t_ingest,
            "read_ratio": t_read / t_parse, "ingest_ratio": t_ingest / t_parse}


if __name__ == "__main__":
    main()
