"""Timing helpers shared by the benchmarks."""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path


def bench_dir() -> Path:
    """Where benchmark inputs are cached between runs (git-ignored)."""
    d = Path(os.environ.get("DYNAGNN_BENCH_DIR", "results/bench"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def blad_store(name: str, num_nodes: int, num_edges: int, num_snapshots: int):
    """A BLAD-recipe store (a power-law graph whose edges follow AS-733's trend over time; 32
    random features), ingested once into the benchmark folder."""
    from dynagnn.data.ingest import ingest

    path = bench_dir() / f"{name}.zarr"
    if not path.exists():
        spec = {"format": "synthetic", "generator": "blad", "features": {"kind": "random", "dim": 32},
                "params": {"num_nodes": num_nodes, "num_edges": num_edges, "num_snapshots": num_snapshots,
                           "seed": 0}}
        ingest(spec, path, name=name, threads=2)
    return path


def median_time(fn, repeats: int = 3, warmup: int = 0) -> tuple[float, list[float]]:
    """Median wall time of ``fn()`` over ``repeats`` runs after ``warmup`` unmeasured ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def row(name: str, seconds: float, extra: str = "") -> str:
    return f"  {name:<44s} {seconds:9.3f} s  {extra}"


def interleaved_medians(fns: dict, rounds: int = 5, warmup: int = 1) -> dict[str, float]:
    """Median time of each function, timed round-robin (one of each per round) so that a noisy
    neighbour on a shared machine slows all of them alike; ``warmup`` rounds are not counted."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for r in range(warmup + rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            if r >= warmup:
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def worker_scaling(run, repeats: int = 3, workers=(1, 2)) -> dict:
    """Median time of ``run(client)`` on LocalClusters of 1 and 2 worker processes, printed with the
    speed-up."""
    from dynagnn.analysis.parallel import dask_client

    result = {}
    for n in workers:
        with dask_client(n, processes=True) as client:
            t, _ = median_time(lambda: run(client), repeats, warmup=1)
        result[n] = t
        print(row(f"LocalCluster, {n} worker process(es)", t))
    lo, hi = workers[0], workers[-1]
    print(f"  speed-up {hi} workers / {lo} worker: {result[lo] / result[hi]:.2f}x")
    return {"t1_s": result[lo], "t2_s": result[hi], "speedup": result[lo] / result[hi]}


def random_event_store(name: str, nodes: int, events: int, width: int, directed: bool = True, dim: int = 4):
    """A store of ``events`` uniform random events over ``nodes`` nodes at integer times in [0, 1e6),
    snapshots ``width`` wide, degree features of ``dim``: a smoke test's input, written once."""
    import numpy as np

    from dynagnn.data import discretize as D
    from dynagnn.data.store import write_store
    from dynagnn.data.types import EventStream, RawGraph

    path = bench_dir() / f"{name}.zarr"
    if not path.exists():
        rng = np.random.default_rng(0)
        ev = EventStream(rng.integers(0, nodes, events), rng.integers(0, nodes, events),
                         np.sort(rng.integers(0, 10**6, events)))
        raw = RawGraph(num_nodes=nodes, node_ids=np.arange(nodes), events=ev, directed=directed, name=name)
        snaps = D.build_snapshots(raw, by="time", width=width, directed=directed)
        write_store(path, raw, snaps, D.make_features("degree", raw, snaps, dim=dim), spec={"bench": name})
    return path
