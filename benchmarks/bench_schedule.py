"""Scheduling overhead and predicted balance (BLAD §5, §6, §7.6; PiPAD §4.4).

1. Overhead for a batch of 100 snapshots (BLAD: < 8 ms for the balanced partition, 2.3 ms for the
   operator orders): the groups-to-workers partition, the exact two-process programme, BLAD's
   printed Eq. 2, the operator-order manager (vectorised exhaustive search and Algorithm 1) over 100
   co-located snapshot pairs, and PiPAD's tuner over 100 frames. Medians of interleaved rounds.
2. Predicted imbalance of the even split against the balanced plan, on per-snapshot loads of the
   datasets of the default run (results/*/stats.parquet), else on synthetic loads that grow and
   fluctuate like AS-733. Two kinds of loads per dataset: "active" = edges + 32 * active_nodes with
   backward twice forward (an engine that compacts each snapshot to its active subgraph, as BLAD's
   batches do; only ratios matter), and, when the profile stage has run
   (results/cost/cpu/predictor.json), "T-GCN" = the fitted cost model's forward and backward time of
   a T-GCN step (hidden 32) in dynagnn's engine, whose tensors are [N, F] for every snapshot.
"""

from __future__ import annotations

import glob

import numpy as np

from .common import interleaved_medians


def _loads() -> dict:
    """(dataset, kind) -> (fwd [T], bwd [T]) per-snapshot loads (module docstring)."""
    import os

    import pandas as pd

    predictor = None
    if os.path.exists("results/cost/cpu/predictor.json"):
        from dynagnn.cost.predictor import Predictor

        predictor = Predictor.load("results/cost/cpu/predictor.json")
    out = {}
    for f in sorted(set(glob.glob("results/*/stats.parquet") + glob.glob("results/*/analysis/stats.parquet"))):
        d = pd.read_parquet(f, columns=["edges", "active_nodes"])
        if len(d) < 12:
            continue
        name = f.split("/")[1]
        fwd = d["edges"].to_numpy(float) + 32 * d["active_nodes"].to_numpy(float)
        out[(name, "active")] = (fwd, 2 * fwd)
        store = os.path.join(os.path.dirname(f), "store.zarr")
        if predictor is not None and os.path.exists(store):
            from dynagnn.cost.models import model_calls
            from dynagnn.data.store import open_store

            st = open_store(store)
            calls = model_calls("tgcn", st.feature_dim(), 32)
            out[(name, "T-GCN")] = predictor.predict({"edges": d["edges"].to_numpy()}, calls, num_nodes=st.num_nodes)
    if not out:
        rng = np.random.default_rng(0)
        fwd = np.linspace(1, 6.95, 100) * rng.lognormal(0, 0.4, 100)
        out[("synthetic", "active")] = (fwd, 2 * fwd)
    return out


def overhead() -> dict:
    from dynagnn.schedule import balanced_plan, dp_splits, eq2_splits, group_costs, plan_operators_batch, tune_frames

    rng = np.random.default_rng(0)
    T, k, L = 100, 8, 2
    fwd = rng.lognormal(size=T) * np.linspace(1, 6.95, T)
    bwd = 2 * fwd
    l, b = group_costs(fwd, bwd, k)  # 93 groups of 8 on one worker
    agg, upd, rnn = rng.random((T, 2, L)), rng.random((T, 2, L)), rng.random((T, 2, L))
    overlap = np.concatenate([np.ones((T, 1)), rng.uniform(0.5, 1.0, (T, 3))], axis=1)
    fns = {
        "groups -> 4 workers (contiguous min-max)": lambda: balanced_plan(fwd, bwd, k, 4),
        "two-process DP, 93 groups of 8": lambda: dp_splits(l, b),
        "printed Eq. 2 (one-index DP)": lambda: eq2_splits(l, b),
        "operator order, exhaustive, 100 pairs": lambda: plan_operators_batch(agg, upd, rnn, "exhaustive"),
        "operator order, Algorithm 1, 100 pairs": lambda: plan_operators_batch(agg, upd, rnn, "greedy"),
        "PiPAD tuner, 100 frames": lambda: tune_frames(overlap, 8.0, snapshot_bytes=np.ones(T)),
    }
    med = interleaved_medians(fns, rounds=21, warmup=3)
    print("\n== schedule: overhead for a batch of 100 snapshots (BLAD: < 8 ms balance, 2.3 ms order)")
    for name, t in med.items():
        print(f"  {name:<44s} {t * 1e3:8.3f} ms")
    print(f"  DP vs BLAD's 8 ms: {8e-3 / med['two-process DP, 93 groups of 8']:.1f}x under; order manager vs "
          f"2.3 ms: {2.3e-3 / med['operator order, exhaustive, 100 pairs']:.1f}x under")
    ex = plan_operators_batch(agg, upd, rnn, "exhaustive")
    gr = plan_operators_batch(agg, upd, rnn, "greedy")
    print(f"  predicted overlap fraction: default order {ex.default_overlap_fraction:.3f}, Algorithm 1 "
          f"{gr.overlap_fraction:.3f}, exhaustive {ex.overlap_fraction:.3f} (BLAD: 15.5% -> 35.9%)")
    return {k2: v * 1e3 for k2, v in med.items()}


def balance_ratios() -> dict:
    from dynagnn.schedule import balance, balanced_plan, even_plan, imbalance, sync_ratio

    print("\n== schedule: predicted balance, even split (ESDG / BLAD-Even) against the balanced plan")
    print(f"  {'dataset':<12s} {'loads':<7s} {'T':>4s} {'P':>2s} {'imb even':>9s} {'imb bal':>8s} {'ratio':>6s} "
          f"{'sync even':>9s} {'sync bal':>8s} {'epoch even/bal':>14s} {'Eq.2/DP':>8s}")
    out = {}
    for (name, kind), (fwd, bwd) in _loads().items():
        T = fwd.size
        k = min(8, max(2, T // 6))
        for P in (2, 4):
            if T - k + 1 < P:
                continue
            ev, bal = even_plan(fwd, bwd, k, P), balanced_plan(fwd, bwd, k, P)
            mk_even = np.array([balance(fwd, bwd, k, w, "even").makespan for w in ev.workers])
            mk_bal = np.array([balance(fwd, bwd, k, w, "dp").makespan for w in bal.workers])
            mk_eq2 = np.array([balance(fwd, bwd, k, w, "eq2").makespan for w in bal.workers])
            r = {"imbalance_even": imbalance(ev.loads), "imbalance_balanced": imbalance(bal.loads),
                 "sync_even": sync_ratio(mk_even), "sync_balanced": sync_ratio(mk_bal),
                 "epoch_ratio": mk_even.max() / mk_bal.max(), "eq2_over_dp": mk_eq2.max() / mk_bal.max()}
            out[f"{name}/{kind}/P{P}"] = r
            print(f"  {name:<12s} {kind:<7s} {T:4d} {P:2d} {r['imbalance_even']:9.3f} {r['imbalance_balanced']:8.3f} "
                  f"{r['imbalance_even'] / r['imbalance_balanced']:6.2f} {r['sync_even']:9.1%} "
                  f"{r['sync_balanced']:8.1%} {r['epoch_ratio']:14.2f} {r['eq2_over_dp']:8.3f}")
    print("  imb = max/mean predicted worker load; sync = (max - min)/max of worker pipeline time (BLAD Fig. 5/18: "
          "31.4% even, 16.7% balanced); epoch even/bal = slowest worker, ESDG split + halves over balanced + DP")
    return out


def main() -> dict:
    return {"overhead_ms": overhead(), "balance": balance_ratios()}


if __name__ == "__main__":
    main()
