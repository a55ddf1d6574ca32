"""BGL's data path, measured in training (issue 16): GraphSAGE on sampled mini-batches of a large
synthetic graph with no cache, PaGraph's static cache, BGL's FIFO with random order and with
proximity order, side by side in one run; then BGL's FIFO + proximity with the stages isolated
(the sampler process on one core, the fetch and training threads on another: this machine has two;
with three or more cores each stage gets its own) against all stages sharing the cores.

The graph (the bgl generator: 2M vertices, 20M edges, 128 features, 16 classes, ids at random):
``DYNAGNN_BENCH_SAMPLED_GRAPH=communities`` (the default) is the generator's default, 16
communities of 125,000 vertices and nothing closer; ``local`` draws 99% of the edges inside a window
of 100 ids of the drawing (the generator's ``local``/``window``: multi-hop locality along the drawn
ids). Neither lets the proximity order raise the FIFO hit ratio at 10% by much: communities 0.340
against random order's 0.352 in training (the warm epoch); in the cache simulation (two epochs, the
first cold) local 0.99/100 0.171 against 0.152, and local 1.0/50 0.067 against 0.127 (with 17%
fewer lookups: neighbours shared inside a batch are not hits). Batches
of 256 seeds, fan-out 5, 5: a batch reads ~0.4% of the vertices, BGL's regime where a cache
matters. Level 1 holds 10% of the rows, level 2 (the host's) 30%. The no-cache baseline takes the
seeds in the proximity order, as BGL's run does (equal batches; a cache would not care).

Per configuration: epoch time (the last epoch; the first warms the caches), the hit ratio of each
level, the bytes read from the store per epoch (decoded: whole 4 KiB chunks, against the bytes of
the rows asked for: a miss costs a chunk), the waiting and busy time of each stage, the BFS
sequences BGL's shuffling-error check chose for the proximity order, and the run's set-up time
(CSR, order, static fill). BGL reports a static cache under 40% hit ratio, its FIFO + proximity
order well above it, and feature retrieval as the bottleneck.

``DYNAGNN_BENCH_SMOKE=1`` (or ``main(smoke=True)``): a 20,000-vertex graph, one epoch, seconds, to
check that the benchmark works. ``DYNAGNN_BENCH_DEVICE=cuda``: level 1 on the GPU.
"""

from __future__ import annotations

import os
import time

from .common import bench_dir

GRAPHS = {"communities": {}, "local": {"local": 0.99, "window": 100}}
FULL = {"num_nodes": 2_000_000, "num_edges": 20_000_000, "feature_dim": 128, "classes": 16, "seed": 0}
SMOKE = {"num_nodes": 20_000, "num_edges": 200_000, "feature_dim": 32, "classes": 16, "seed": 0}
CONFIGS = [("no cache", "sampled_nocache", {}), ("static (PaGraph), random order", "sampled_static", {}),
           ("FIFO, random order", "sampled_random", {}), ("FIFO + proximity (BGL)", "sampled", {})]
KEYS = ("train_seconds", "l1_hit_ratio", "l2_hit_ratio", "store_bytes", "store_chunk_bytes", "store_seconds",
        "sample_busy_s", "sample_wait_s", "fetch_busy_s", "fetch_wait_s", "fetch_block_s", "train_wait_s",
        "lookups", "order_sequences", "val_accuracy")


def _store(smoke: bool, graph: str):
    from dynagnn.data.ingest import ingest
    from dynagnn.data.store import FEATURE_ROW_CHUNK_BYTES

    params = {**(SMOKE if smoke else FULL), **GRAPHS[graph]}
    kib = FEATURE_ROW_CHUNK_BYTES >> 10   # a store of another chunk size is another store
    path = bench_dir() / f"bgl_{graph}_{params['num_nodes']}_{kib}k.zarr"
    if not path.exists():
        t0 = time.perf_counter()
        ingest({"format": "synthetic", "generator": "bgl", "params": params}, path, name=f"bgl-{graph}", threads=1)
        print(f"  ingest of {path.name}: {time.perf_counter() - t0:.1f} s (threads 1)")
    return path


def _line(label: str, r: dict) -> str:
    order = f"{int(r['order_sequences'])} BFS seqs" if r["order_sequences"] else "random order"
    amp = r["store_chunk_bytes"] / max(r["store_bytes"], 1)
    return (f"  {label:34s} epoch {r['train_seconds']:6.2f} s (setup {r['setup_s']:5.1f} s) | hit L1 "
            f"{r['l1_hit_ratio']:.3f} L2 {r['l2_hit_ratio']:.3f} | store read {r['store_chunk_bytes'] / 2**20:7.1f} MiB "
            f"decoded for {r['store_bytes'] / 2**20:6.1f} MiB of rows ({amp:.1f}x), {r['store_seconds']:5.2f} s | "
            f"wait: sample {r['sample_wait_s']:.2f} fetch {r['fetch_wait_s']:.2f}/{r['fetch_block_s']:.2f} "
            f"train {r['train_wait_s']:.2f} s; busy: sample {r['sample_busy_s']:.2f} fetch {r['fetch_busy_s']:.2f} s"
            f" | {order} | val acc {r['val_accuracy']:.3f}")


def main(smoke: bool | None = None) -> dict:
    from dynagnn.data.store import open_store
    from dynagnn.train.engine import TrainConfig, Trainer

    smoke = bool(int(os.environ.get("DYNAGNN_BENCH_SMOKE", "0"))) if smoke is None else smoke
    device = os.environ.get("DYNAGNN_BENCH_DEVICE", "cpu")
    graph = os.environ.get("DYNAGNN_BENCH_SAMPLED_GRAPH", "communities")
    if graph not in GRAPHS:
        raise SystemExit(f"DYNAGNN_BENCH_SAMPLED_GRAPH={graph!r}: expected one of {', '.join(GRAPHS)}")
    store = open_store(_store(smoke, graph))
    n, f = store.num_nodes, store.feature_dim()
    level_mb = 0.10 * n * 4 * f / 2**20   # level 1 holds 10% of the rows, level 2 (the host's) 30%
    base = dict(model="graphsage", hidden=64, fanouts=[5, 5], batch_size=128 if smoke else 256,
                epochs=1 if smoke else 2, warmup_epochs=0, patience=10, threads=1, samplers=1, queue_depth=4,
                cache_l1_mb=level_mb, cache_l2_mb=3 * level_mb, device=device,
                seed_fractions=[0.05, 0.01, 0.01] if smoke else [0.01, 0.001, 0.001])
    cores = sorted(os.sched_getaffinity(0))
    isolated = None if len(cores) < 2 else {"sample": cores[:1], "fetch": cores[1:2], "train": cores[2:] or cores[1:2]}
    runs = [(label, strategy, {}) for label, strategy, _ in CONFIGS]
    runs.append(("FIFO + proximity, stages isolated", "sampled", {"stage_cores": isolated}))
    print(f"\n== sampled training (BGL): {store.attrs.get('name')} ({graph}: {GRAPHS[graph] or 'the default'}) "
          f"N={n:,}, F={f}, GraphSAGE fan-out 5,5, batches of {base['batch_size']}, cache level 1 {level_mb:,.0f} MiB "
          f"(10% of the rows), level 2 {3 * level_mb:,.0f} MiB (30%), device {device}, {len(cores)} cores; the last "
          f"of {base['epochs']} epochs")
    rows = {}
    for label, strategy, extra in runs:
        t0 = time.perf_counter()
        trainer = Trainer(store, TrainConfig.of(strategy=strategy, **{**base, **extra}), progress=False)
        setup = time.perf_counter() - t0
        try:
            metrics, _ = trainer.fit()
        finally:
            trainer.strategy.pipeline.close()
        rows[label] = r = {k: float(metrics.iloc[-1][k]) for k in KEYS}
        r.update(batches=trainer.strategy.steps_per_epoch, setup_s=setup, chunk_rows=trainer.run.rows.chunk_rows)
        print(_line(label, r), flush=True)
    nc, bgl = rows["no cache"], rows["FIFO + proximity (BGL)"]
    static, fifo = rows["static (PaGraph), random order"], rows["FIFO, random order"]
    per_batch = nc["lookups"] / max(1, nc["batches"])
    print(f"  a batch reads {per_batch:,.0f} input rows = {per_batch / n:.2%} of the vertices; a store chunk holds "
          f"{nc['chunk_rows']} rows, and the store decodes {nc['store_chunk_bytes'] / max(nc['store_bytes'], 1):.1f}x "
          f"the bytes of the rows asked for without a cache")
    print(f"  feature retrieval without a cache: store {nc['store_seconds']:.2f} s of the {nc['train_seconds']:.2f} s "
          f"epoch; training waited {nc['train_wait_s']:.2f} s for batches")
    print(f"  L1 hit ratio: static {static['l1_hit_ratio']:.3f}, FIFO random {fifo['l1_hit_ratio']:.3f}, "
          f"FIFO + proximity {bgl['l1_hit_ratio']:.3f}; store bytes read vs no cache: static "
          f"{static['store_chunk_bytes'] / max(nc['store_chunk_bytes'], 1):.2f}x, FIFO random "
          f"{fifo['store_chunk_bytes'] / max(nc['store_chunk_bytes'], 1):.2f}x, BGL "
          f"{bgl['store_chunk_bytes'] / max(nc['store_chunk_bytes'], 1):.2f}x; epoch vs no cache: static "
          f"{static['train_seconds'] / nc['train_seconds']:.2f}x, FIFO random {fifo['train_seconds'] / nc['train_seconds']:.2f}x, "
          f"BGL {bgl['train_seconds'] / nc['train_seconds']:.2f}x")
    iso = rows["FIFO + proximity, stages isolated"]
    print(f"  isolation on/off: epoch {iso['train_seconds']:.2f} / {bgl['train_seconds']:.2f} s; training waited "
          f"{iso['train_wait_s']:.2f} / {bgl['train_wait_s']:.2f} s, fetch waited for the sampler "
          f"{iso['fetch_wait_s']:.2f} / {bgl['fetch_wait_s']:.2f} s ({'cores ' + str(isolated) if isolated else 'one core: isolation is a no-op'})")
    return rows


if __name__ == "__main__":
    main()
