"""BGL's data path, measured in training (issue 16): GraphSAGE on sampled mini-batches of the large
synthetic graph (the bgl generator: 2M vertices, 20M edges, 128 features, 16 classes, communities on
random ids; batches of 256 seeds, fan-out 5, 5: a batch reads ~0.4% of the vertices, BGL's regime
where a cache matters) with no cache,
PaGraph's static cache, BGL's FIFO with random order and with proximity order, side by side in one
run; then BGL's FIFO + proximity with the stages isolated (sampler process, fetch thread and training
thread on their own cores) against all stages sharing the cores.

Per configuration: epoch time (the last epoch; the first warms the caches), the hit ratio of each
level, bytes read from the store per epoch (the rows asked for, and the 16 KiB chunks Zarr decoded
for them: a miss costs a chunk), the waiting time of each stage, and the BFS sequences BGL's
shuffling-error check chose for the proximity order. Also the share of the vertices one batch reads. BGL reports a static cache under 40% hit ratio and its FIFO + proximity
order well above it, and feature retrieval as the bottleneck.

``DYNAGNN_BENCH_SMOKE=1`` (or ``main(smoke=True)``): a 20,000-vertex graph, one epoch, a few seconds,
to check that the benchmark works. ``DYNAGNN_BENCH_DEVICE=cuda``: level 1 on the GPU.
"""

from __future__ import annotations

import os
import time

from .common import bench_dir

FULL = {"num_nodes": 2_000_000, "num_edges": 20_000_000, "feature_dim": 128, "classes": 16, "seed": 0}
SMOKE = {"num_nodes": 20_000, "num_edges": 200_000, "feature_dim": 32, "classes": 16, "seed": 0}
CONFIGS = [("no cache", "sampled_nocache", {}), ("static (PaGraph), random order", "sampled_static", {}),
           ("FIFO, random order", "sampled_random", {}), ("FIFO + proximity (BGL)", "sampled", {})]


def _store(smoke: bool):
    from dynagnn.data.ingest import ingest

    params = SMOKE if smoke else FULL
    path = bench_dir() / f"bgl_{params['num_nodes']}.zarr"
    if not path.exists():
        t0 = time.perf_counter()
        ingest({"format": "synthetic", "generator": "bgl", "params": params}, path, name="bgl", threads=1)
        print(f"  ingest of {path.name}: {time.perf_counter() - t0:.1f} s (threads 1)")
    return path


def main(smoke: bool | None = None) -> dict:
    from dynagnn.data.store import open_store
    from dynagnn.train.engine import TrainConfig, Trainer

    smoke = bool(int(os.environ.get("DYNAGNN_BENCH_SMOKE", "0"))) if smoke is None else smoke
    device = os.environ.get("DYNAGNN_BENCH_DEVICE", "cpu")
    store = open_store(_store(smoke))
    n, f = store.num_nodes, store.feature_dim()
    level_mb = 0.10 * n * 4 * f / 2**20   # level 1 holds 10% of the rows, level 2 (the host's) 30%
    base = dict(model="graphsage", hidden=64, fanouts=[5, 5], batch_size=128 if smoke else 256,
                epochs=1 if smoke else 2, warmup_epochs=0, patience=10, threads=1, samplers=1, queue_depth=4,
                cache_l1_mb=level_mb, cache_l2_mb=3 * level_mb, device=device,
                seed_fractions=[0.05, 0.01, 0.01] if smoke else [0.01, 0.001, 0.001])
    cores = sorted(os.sched_getaffinity(0))
    isolated = {"sample": cores[:1], "fetch": cores[-1:], "train": cores[-1:]} if len(cores) > 1 else None
    runs = [(label, strategy, {}) for label, strategy, _ in CONFIGS]
    runs.append(("FIFO + proximity, stages isolated", "sampled", {"stage_cores": isolated}))
    print(f"\n== sampled training (BGL): {store.attrs.get('name')} N={n:,}, F={f}, GraphSAGE fan-out 5,5, "
          f"batches of {base['batch_size']}, cache level 1 {level_mb:,.0f} MiB (10% of the rows), level 2 "
          f"{3 * level_mb:,.0f} MiB (30%), device {device}")
    rows = {}
    for label, strategy, extra in runs:
        trainer = Trainer(store, TrainConfig(strategy=strategy, **{**base, **extra}), progress=False)
        try:
            metrics, _ = trainer.fit()
        finally:
            trainer.strategy.pipeline.close()
        last = metrics.iloc[-1]
        rows[label] = r = {k: float(last[k]) for k in (
            "train_seconds", "l1_hit_ratio", "l2_hit_ratio", "store_bytes", "store_chunk_bytes", "store_seconds",
            "sample_busy_s", "sample_wait_s", "fetch_busy_s", "fetch_wait_s", "fetch_block_s", "train_wait_s",
            "lookups", "order_sequences", "val_accuracy")}
        r["batches"] = trainer.strategy.steps_per_epoch
        order = f"{int(r['order_sequences'])} BFS sequences" if r["order_sequences"] else "random order"
        print(f"  {label:34s} epoch {r['train_seconds']:7.2f} s | hit L1 {r['l1_hit_ratio']:.3f} L2 "
              f"{r['l2_hit_ratio']:.3f} | store {r['store_bytes'] / 2**20:8.1f} MiB rows, "
              f"{r['store_chunk_bytes'] / 2**20:8.1f} MiB chunks, {r['store_seconds']:6.2f} s | waits: sample "
              f"{r['sample_wait_s']:.2f} fetch {r['fetch_wait_s']:.2f}/{r['fetch_block_s']:.2f} train "
              f"{r['train_wait_s']:.2f} s | {order} | val acc {r['val_accuracy']:.3f}")
    nc, bgl = rows["no cache"], rows["FIFO + proximity (BGL)"]
    per_batch = nc["lookups"] / max(1, nc["batches"])
    print(f"  a batch reads {per_batch:,.0f} input rows = {per_batch / n:.2%} of the vertices; the store decodes "
          f"{nc['store_chunk_bytes'] / max(nc['store_bytes'], 1):.1f}x the bytes of the rows it is asked for")
    print(f"  BGL / no cache: epoch {bgl['train_seconds'] / nc['train_seconds']:.2f}x, store bytes "
          f"{bgl['store_bytes'] / max(nc['store_bytes'], 1):.2f}x; static L1 hit "
          f"{rows['static (PaGraph), random order']['l1_hit_ratio']:.3f} vs BGL {bgl['l1_hit_ratio']:.3f} "
          f"(FIFO, random order {rows['FIFO, random order']['l1_hit_ratio']:.3f})")
    iso = rows["FIFO + proximity, stages isolated"]
    print(f"  isolation on/off: epoch {iso['train_seconds']:.2f} / {bgl['train_seconds']:.2f} s")
    return rows


if __name__ == "__main__":
    main()
