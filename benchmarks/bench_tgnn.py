"""Sven's distributed TGNN training (issue 15) on CollegeMsg's events, TGN with DyGLib's widths.

1. **Bytes per epoch**, Sven against DepComm and DepCache, at P = 2, 4, 8 on a Re-FlexBiCut
   partition: volume only, counted without running P processes. Each worker's batches are built as
   the strategies build them (:func:`~dynagnn.train.strategies.tgnn.worker_batches`: the events
   whose source it owns, with their negatives and sampled neighbours), their counts go through the
   closed forms on that partition (:func:`~dynagnn.analysis.commvolume.sven_volumes`), which
   tests/train/test_tgnn.py holds equal to the bytes the strategies send (TGN and JODIE; APAN's
   mails to sampled neighbours are beyond the forms). Printed beside: η1 of the remote occurrences
   and the corrected threshold (2Π+1)/(3Π+1) above which Sven's dispatch beats DepComm's, and
   (d_mem + d_edge)/(3·d_mem + d_edge) once DepComm's gradient return is counted.
2. **Per-worker imbalance**: the bytes each worker sends per epoch under Sven (the rows it answers
   and the rows it writes back), max / mean, for Re-FlexBiCut, range and hash.
3. **Epoch time** at P = 1 and 2 (gloo processes of 1 thread each), micro-batches m = 1, 2, 4, 8,
   one-step-stale all-reduce off and on: the median training epoch after the first. (m changes no
   computation, tests/train/test_tgnn.py holds, but the dropout masks drawn: test AP across m at
   P = 1 differs as across seeds; a run with one m is the same run to run.)
4. **Accuracy**: test AP of the best-validation epoch, P = 2 against P = 1 (m = 1), and with the
   stale all-reduce.

Run alone: ``python -m benchmarks tgnn``. ``DYNAGNN_BENCH_SVEN_EPOCHS`` (default 3) epochs per
training run; ``DYNAGNN_BENCH_SVEN_SMOKE=1``: the 2,000-event random stream, P = 2 and 4 for the
volumes, two 1-epoch runs, to check the benchmark runs.
"""

from __future__ import annotations

import os
import time

from .bench_tgnn_models import collegemsg_events, smoke_store

DIMS = dict(event_batch=200, memory_dim=100, time_dim=100, neighbors=10, event_negatives=10)


def volumes(path, workers, partitioners) -> None:
    import numpy as np

    from dynagnn.analysis.commvolume import sven_threshold, sven_trainer_stats, sven_volumes
    from dynagnn.train.engine import TrainConfig, Trainer
    from dynagnn.train.strategies.tgnn import memory_owner, worker_batches

    tr = Trainer(path, TrainConfig.of(model="tgn", strategy="events", threads=1, **DIMS), progress=False)
    s, task, model = tr.strategy, tr.task, tr.model
    n, units = tr.store.num_nodes, tr.split.train
    d_mem, d_edge, mb = model.memory_dim, model.edge_dim, model.mailbox
    row_in, row_out = 4 * (d_mem + mb * model.mail_dim), 4 * (d_mem + model.mail_dim)
    src, dst = task.src[task.train_events], task.dst[task.train_events]
    with_return = sven_threshold(d_mem, d_edge, gradient_return=True)
    print(f"  bytes per epoch ({len(units)} batches of {DIMS['event_batch']}, d_mem {d_mem}, d_edge {d_edge}; "
          f"the closed forms hold for TGN and JODIE, not APAN, which also mails sampled neighbours); "
          f"Sven beats DepComm's dispatch alone when η1 > {sven_threshold(d_mem, d_edge):.3f}, with its "
          f"gradient return when η1 > {with_return:.3f}")
    for P in workers:
        for how in partitioners:
            t0 = time.perf_counter()
            owner = memory_owner(src, dst, n, P, how, 0)
            part_s = time.perf_counter() - t0
            occ, orig, trainer = [], [], []
            sent = np.zeros(P)
            for _, rank, b in worker_batches(s, owner, P, units):
                occ.append(np.concatenate([b.roots, b.nbr[b.nbr_valid]]))
                orig.append(np.concatenate([b.src, b.dst]))
                trainer.append(rank)
                asked = b.nodes[owner[b.nodes] != rank]                   # answered by their owners
                np.add.at(sent, owner[asked], row_in)
                written = np.unique(orig[-1])
                sent[rank] += np.count_nonzero(owner[written] != rank) * row_out
            st = sven_trainer_stats(occ, orig, trainer, owner, P)
            v = {k: x.bytes for k, x in sven_volumes(st, None, n, d_mem, d_edge, mailbox=mb).items()}
            sven = v["sven/dispatch"] + v["sven/aggregation"]
            comm = v["depcomm/dispatch"] + v["depcomm/dispatch_backward"] + v["depcomm/aggregation"]
            cache = v["depcache/aggregation"]
            eta = 1 - st["U1_remote"].sum() / max(st["N1_remote"].sum(), 1)
            if how == partitioners[0]:
                print(f"  P={P} {how:11s}: Sven {sven / 2**20:8.1f} MiB, DepComm {comm / 2**20:8.1f} MiB "
                      f"({comm / sven:.2f}x Sven), DepCache {cache / 2**20:8.1f} MiB ({cache / sven:.2f}x Sven); "
                      f"remote η1 {eta:.3f}")
            print(f"  P={P} {how:11s}: Sven per-worker MiB sent {np.round(sent / 2**20, 1).tolist()}, "
                  f"max/mean {sent.max() / sent.mean():.3f}, max {sent.max() / 2**20:.1f} MiB "
                  f"(partition {part_s:.1f} s)")


def timings(path, epochs: int, grid) -> None:
    import tempfile
    from pathlib import Path

    import pandas as pd

    from dynagnn.train.engine import TrainConfig, train

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for P, m, stale in grid:
            c = TrainConfig.of(model="tgn", strategy="tgnn", workers=P, micro_batches=m, stale_allreduce=stale,
                            epochs=epochs, patience=epochs, lr=1e-4, threads=1, warmup_epochs=min(1, epochs - 1),
                            **DIMS)
            t0 = time.perf_counter()
            metrics, _ = train(path, Path(tmp) / f"{P}-{m}-{stale}", c, progress=False)
            warm = metrics[metrics["epoch"] > 0] if len(metrics) > 1 else metrics
            best = metrics[metrics["best"]].iloc[0]
            rows.append({"P": P, "m": m, "stale": stale, "epoch_s": float(warm["train_seconds"].median()),
                         "test_ap": float(best["test_ap"]), "run_s": time.perf_counter() - t0})
            r = rows[-1]
            print(f"  P={P} m={m} stale={'on ' if stale else 'off'}: epoch {r['epoch_s']:6.2f} s (median), "
                  f"test AP {r['test_ap']:.4f} (run {r['run_s']:.0f} s)")
    t = pd.DataFrame(rows).set_index(["P", "m", "stale"])
    for (P, m, stale), r in t.iterrows():
        if (1, 1, False) in t.index and (P, m, stale) != (1, 1, False):
            base = t.loc[(1, 1, False)]
            print(f"  P={P} m={m} stale={stale}: {base['epoch_s'] / r['epoch_s']:.2f}x P=1's epoch speed, "
                  f"test AP {r['test_ap'] - base['test_ap']:+.4f} against P=1")


def main() -> None:
    import torch

    smoke = os.environ.get("DYNAGNN_BENCH_SVEN_SMOKE") == "1"
    path = smoke_store() if smoke else collegemsg_events()
    torch.set_num_threads(1)
    print(f"Sven (tgnn strategies) on {path.name}, TGN")
    if smoke:
        volumes(path, (2, 4), ("reflexbicut", "range", "hash"))
        timings(path, 1, [(1, 1, False), (2, 2, True)])
        return
    epochs = int(os.environ.get("DYNAGNN_BENCH_SVEN_EPOCHS", "3"))
    volumes(path, (2, 4, 8), ("reflexbicut", "range", "hash"))
    grid = [(1, m, False) for m in (1, 2, 4, 8)] + [(2, m, s) for s in (False, True) for m in (1, 2, 4, 8)]
    timings(path, epochs, grid)
