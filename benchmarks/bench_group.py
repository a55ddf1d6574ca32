"""BLAD's group strategy against ESDG's snapshot split, vertex partitioning, sequential training and
its own baselines (BLAD-NM, BLAD-Even), on stores whose per-snapshot load varies strongly: blad_group
(20 snapshots, 12 training groups) and blad_long (AS-733's shape over 100 snapshots, 68 groups);
``DYNAGNN_BENCH_GROUP_STORE`` (comma-separated) picks some.

Run alone: ``python -m benchmarks group``. Every run trains WD-GCN with the same steps: B = every
training window, one step per epoch (BLAD's batch), so all strategies compute the same thing. On this
project's 2-core machines:

- honest: 1 worker × 2 processes (group, blad_nm, blad_even; 1 thread each) against sequential with
  2 threads; 2 workers × 1 process (snapshot, vertex; 1 thread each);
- oversubscribed (4 processes on 2 cores, printed as such): group on 2 workers × 2 processes.

The plans come from a cost model profiled here, with 1 thread (as each process runs). Also printed:
the synchronisation-wait share of the even against the balanced split, the measured operator-overlap
share of BLAD-NM against BLAD, and the measured epoch against the plan's prediction with, per
operator, where the prediction is off. ``DYNAGNN_BENCH_GROUP_EPOCHS`` (default 3, the first is
warm-up) and ``DYNAGNN_BENCH_GROUP_ROUNDS`` (default 1; more are interleaved round by round) set the effort;
``DYNAGNN_BENCH_GROUP_ONLY`` (comma-separated parts of run names, e.g. ``cost-model,even``) runs a few.
"""

from __future__ import annotations

import os
import statistics
import tempfile

import numpy as np
import pandas as pd

from .common import bench_dir, blad_store

MODEL, HIDDEN, WINDOW = "wdgcn", 32, 4


# the stores the benchmark trains on (DYNAGNN_BENCH_GROUP_STORE): name -> (vertices, most edges in a
# snapshot, snapshots)
STORES = {
    # 12 training groups: one step holds few, so the pipeline's fill and drain weigh
    "blad_group": (5000, 60000, 20),
    # AS-733's shape over a longer history (AS-733 has 733 snapshots): 67 training groups of a
    # quarter of the load each, so the fill and drain are amortised as in BLAD's batches
    "blad_long": (2500, 30000, 100),
}


def blad_group_store(name: str = "blad_group"):
    return blad_store(name, *STORES[name])


def _predictor(path, device: str = "cpu"):
    from dynagnn.cost.fit import fit
    from dynagnn.cost.profile import profile_operators
    from dynagnn.cost.stage import fit_link_into, stage_grid

    grid = stage_grid("auto", stores=[path], models=[MODEL], hidden=[HIDDEN])
    return fit_link_into(fit(profile_operators(grid, device, repeats=5, progress=False, threads=1)))


def _plan(path, predictor, workers, out):
    from dynagnn.data.store import open_store
    from dynagnn.schedule.stage import plan_store
    from dynagnn.cost.run_costs import head_costs, transfer_bytes
    from dynagnn.tasks.snapshot import training_ends

    store = open_store(path)
    ends = training_ends(store, WINDOW)
    plan = plan_store(store, predictor, model=MODEL, workers=workers, window=WINDOW, hidden=HIDDEN, groups=ends,
                      tail=head_costs(store, MODEL, HIDDEN, ends), transfers=transfer_bytes(store, MODEL, HIDDEN, ends))
    plan.save(out)
    return plan


# epochs left out of the medians: the first warms caches, the second is the one the group strategy
# measures for its re-plan (it still follows the cost model's plan)
WARMUP = 2


def _run(path, strategy, workers, threads, epochs, batch, plan=None, replan=True, device="cpu"):
    from dynagnn.train.engine import TrainConfig, train

    from dynagnn.train.strategies import strategy_class

    own = {k: v for k, v in {"plan": str(plan) if plan else None, "replan": replan}.items()
           if k in strategy_class(strategy).settable()}  # blad_even is never re-planned: it takes no replan
    cfg = TrainConfig.of(model=MODEL, strategy=strategy, workers=workers, threads=threads, hidden=HIDDEN, window=WINDOW,
                         epochs=epochs, patience=epochs, warmup_epochs=WARMUP, batch_windows=batch, device=device,
                         **own)
    with tempfile.TemporaryDirectory() as out:
        return train(path, out, cfg, progress=False)


def _figures(metrics, timings) -> dict:
    m = metrics[metrics["epoch"] >= WARMUP]
    t = timings[timings["epoch"].isin(m["epoch"])]
    phase = t.groupby(["epoch", "phase"])["seconds"].sum().unstack(fill_value=0.0)
    total = phase.sum(axis=1)
    per_rank = t.groupby(["worker", "epoch", "phase"])["seconds"].sum().groupby(["worker", "phase"]).median()
    return {"epoch_s": float(m["train_seconds"].median()), "per_rank": per_rank.unstack(fill_value=0.0),
            "sync_share": float((phase.get("sync_wait", 0.0) / total).median()),
            "overlap_share": float(m["overlap_share"].median()) if "overlap_share" in m else float("nan"),
            "planned_epoch_s": float(m["planned_epoch_s"].iloc[0]) if "planned_epoch_s" in m else float("nan"),
            "phases": phase.median().to_dict(), "loss": float(metrics["loss"].iloc[-1])}


def _predicted_phases(path, predictor, plan, processes=None) -> dict[str, float]:
    """The plan's seconds per epoch by engine phase, both processes together: forward operators by
    kind, backward, the head (measured ahead, as the plan takes it), and what the processes spend on
    the channel and waiting: the hand-over receipts, the all-reduce (on both) and the pipeline's idle
    time (2 makespans less both processes' busy time), which the run records as ``sync_wait`` and
    ``communication``."""
    from dynagnn.cost.models import model_calls
    from dynagnn.data.store import open_store

    store = open_store(path)
    calls = model_calls(MODEL, store.feature_dim(), HIDDEN)
    bd = predictor.breakdown({"edges": np.diff(np.asarray(store.offsets))}, calls, num_nodes=store.num_nodes)
    groups = [g for w in plan.groups.workers for g in w]
    mult = np.zeros(store.num_snapshots)
    for g in groups:
        mult[g - WINDOW + 1:g + 1] += 1
    out = {"graph_op": 0.0, "nn_op": 0.0, "rnn": 0.0, "backward": 0.0,
           "head": float(np.sum([np.sum(v) for v in plan.meta.get("group_tail_s", {}).values()]))}
    ops = {role: op for op, role, *_ in calls.calls()}
    for col in bd.columns:
        role, _, direction = col.rpartition(".")
        if direction not in ("forward", "backward"):
            continue
        seconds = float((bd[col].to_numpy() * mult).sum())
        if direction == "backward":
            out["backward"] += seconds
            continue
        op = ops.get(role)
        out[op if op in ("graph_op", "nn_op") else "rnn"] += seconds  # the rest of a step is timed as rnn
    from dynagnn.schedule.balance import receive_costs

    hand = plan.meta.get("handover") or {}
    processes = plan.processes if processes is None else processes
    receipts = 0.0
    for proc in processes:  # what p2 and p1 receive at each group's split (the plan's own costs)
        inputs = [(hand.get("inputs_s") or {}).get(str(g), 0.0) for g in proc.groups]
        rq, rc = receive_costs(len(proc.groups), WINDOW, WINDOW, hand.get("state_s", 0.0),
                               hand.get("embedding_s", 0.0), inputs)
        receipts += float((rq + rc)[np.arange(len(proc.groups)), np.asarray(proc.splits)].sum())
    out["hand-over receipts"] = receipts
    out["all-reduce"] = 2 * plan.allreduce_s * len(processes)
    out["pipeline idle"] = float(sum(2 * p.makespan - p.busy.sum() for p in processes))
    return out


def _planned_wait(path, predictor, plan, baseline: bool = False) -> float:
    """The plan's share of the processes' time spent waiting or taking hand-overs (what the run
    times as ``sync_wait``): (pipeline idle + receipts) / (2 · epoch), worker 0's pipeline."""
    procs = plan.baseline_processes if baseline else plan.processes
    p = _predicted_phases(path, predictor, plan, procs)
    return (p["pipeline idle"] + p["hand-over receipts"]) / (2 * sum(q.makespan for q in procs))


# measured phases the channel rows of _predicted_phases stand for
CHANNEL_PHASES = ("sync_wait", "communication")


def _selected(runs: dict) -> dict:
    """The runs ``DYNAGNN_BENCH_GROUP_ONLY`` names (comma-separated substrings; default all): a quick
    check of a few runs."""
    only = [x.strip() for x in os.environ.get("DYNAGNN_BENCH_GROUP_ONLY", "").split(",") if x.strip()]
    return {n: r for n, r in runs.items() if not only or any(x in n for x in only)}


def main() -> dict:
    epochs = int(os.environ.get("DYNAGNN_BENCH_GROUP_EPOCHS", WARMUP + 3))
    rounds = int(os.environ.get("DYNAGNN_BENCH_GROUP_ROUNDS", 1))
    names = [x.strip() for x in os.environ.get("DYNAGNN_BENCH_GROUP_STORE", ",".join(STORES)).split(",") if x.strip()]
    unknown = sorted(set(names) - set(STORES))
    if unknown:
        raise SystemExit(f"DYNAGNN_BENCH_GROUP_STORE: unknown store {unknown}; choose from {sorted(STORES)}")
    return {name: bench_store(name, epochs, rounds) for name in names}


def bench_store(name: str, epochs: int, rounds: int) -> dict:
    path = blad_group_store(name)
    from dynagnn.data.store import open_store
    from dynagnn.tasks.snapshot import training_ends

    B = len(training_ends(open_store(path), WINDOW))
    predictor = _predictor(path)
    plans = {P: _plan(path, predictor, P, bench_dir() / f"{name}-plan-{P}.json") for P in (1, 2)}
    runs = _selected({  # name: (strategy, workers, threads per process, plan, honest on 2 cores[, replan])
        "sequential 1x1, 2 threads": ("sequential", 1, 2, None, True),
        "group 1x2": ("group", 1, 1, plans[1], True),
        "group 1x2, cost-model plan": ("group", 1, 1, plans[1], True, False),
        "blad_nm 1x2": ("blad_nm", 1, 1, plans[1], True),
        "blad_even 1x2": ("blad_even", 1, 1, plans[1], True),
        "group_frames 1x2": ("group_frames", 1, 1, plans[1], True),
        "snapshot 2x1": ("snapshot", 2, 1, None, True),
        "vertex 2x1": ("vertex", 2, 1, None, True),
        "group 2x2": ("group", 2, 1, plans[2], False),
    })
    results: dict[str, list[dict]] = {n: [] for n in runs}
    for _ in range(rounds):  # round-robin, so a noisy neighbour slows every run alike
        for run_name, (strategy, P, threads, plan, _, *replan) in runs.items():
            plan_path = bench_dir() / f"{name}-plan-{P}.json" if plan is not None else None
            results[run_name].append(_figures(*_run(path, strategy, P, threads, epochs, B, plan_path, *replan)))
    med = {n: {k: statistics.median(r[k] for r in rs) for k in ("epoch_s", "sync_share", "overlap_share", "loss")}
           for n, rs in results.items()}

    s = plans[1].summary()
    print(f"\n== BLAD group strategy: {MODEL}, hidden {HIDDEN}, window {WINDOW}, {name} "
          f"(per-snapshot edges vary {_variation(path):.1f}x), B = {B} (one step per epoch); medians of "
          f"{rounds} rounds × {epochs - WARMUP} epochs after {WARMUP} warm-up epochs")
    print(f"  {'run':<28s} {'s/epoch':>8s} {'sync wait':>10s} {'overlap':>8s} {'final loss':>11s}")
    for n, f in med.items():
        flag = "" if runs[n][4] else "  (4 processes on 2 cores: oversubscribed)"
        print(f"  {n:<28s} {f['epoch_s']:8.3f} {f['sync_share']:10.1%} {f['overlap_share']:8.1%} "
              f"{f['loss']:11.5f}{flag}")
    e = {n: f["epoch_s"] for n, f in med.items()}

    def ratio(label, a, b, note=""):
        if a in e and b in e:
            print(f"  {label:<38s}{e[a] / e[b]:.2f}x{note}")

    ratio("group 1x2 vs sequential (2 threads):", "sequential 1x1, 2 threads", "group 1x2")
    ratio("group 1x2 vs snapshot 2x1 (ESDG):", "snapshot 2x1", "group 1x2", "   (paper: 1.27x at 2 GPUs)")
    ratio("group 1x2 vs vertex 2x1:", "vertex 2x1", "group 1x2", "   (paper: 1.79x)")
    ratio("group_frames 1x2 vs group 1x2:", "group 1x2", "group_frames 1x2", "   (BLAD x PiPAD)")
    ratio("group 2x2 vs snapshot 2x1:", "snapshot 2x1", "group 2x2", "   (oversubscribed)")
    ratio("group 2x2 vs vertex 2x1:", "vertex 2x1", "group 2x2", "   (oversubscribed)")
    if "blad_even 1x2" in med:
        print(f"  sync-wait share, even -> balanced split (1x2): {med['blad_even 1x2']['sync_share']:.1%} -> "
              f"{med.get('blad_nm 1x2', {}).get('sync_share', float('nan')):.1%} (blad_nm), "
              f"{med.get('group 1x2', {}).get('sync_share', float('nan')):.1%} (group)   (paper: 31.4% -> 16.7%; "
              f"plan, queue depth {plans[1].depth}: pipeline idle {s['baseline_process_idle_fraction'][0]:.1%} -> "
              f"{s['process_idle_fraction'][0]:.1%}, with the hand-over receipts, which the run times as sync_wait: "
              f"{_planned_wait(path, predictor, plans[1], True):.1%} -> {_planned_wait(path, predictor, plans[1]):.1%})")
    if "blad_nm 1x2" in med and "group 1x2" in med:
        print(f"  operator overlap, BLAD-NM -> BLAD (1x2): {med['blad_nm 1x2']['overlap_share']:.1%} -> "
              f"{med['group 1x2']['overlap_share']:.1%}   (paper: 15.5% -> 35.9%; plan: "
              f"{s['default_overlap_fraction']:.1%} -> {s.get('overlap_fraction', 0):.1%})")

    # the cost model end to end: the plan's makespan against the measured epoch, then by phase
    out = {"medians": med, "plan": s}
    if "group 1x2, cost-model plan" in e:
        measured = e["group 1x2, cost-model plan"]
        print(f"  cost model's plan: predicted epoch (1x2 pipeline makespan {s['epoch_time'] - s['allreduce_time']:.3f}s "
              f"+ all-reduce {s['allreduce_time']:.3f}s) {s['epoch_time']:.3f}s, measured {measured:.3f}s (run by that "
              f"plan throughout): error {measured / s['epoch_time'] - 1:+.1%}")
        pred = _predicted_phases(path, predictor, plans[1])
        got = pd.DataFrame([r["phases"] for r in results["group 1x2, cost-model plan"]]).median()
        print(f"  {'phase (both processes)':<34s} {'predicted s':>12s} {'measured s':>11s} {'error':>8s}")
        for phase in ("graph_op", "nn_op", "rnn", "backward", "head"):
            p, g = pred[phase], float(got.get(phase, 0.0))
            print(f"  {phase:<34s} {p:12.3f} {g:11.3f} {g / p - 1 if p else float('nan'):+8.1%}")
        chan = {k: pred[k] for k in ("hand-over receipts", "all-reduce", "pipeline idle")}
        g = float(sum(got.get(k, 0.0) for k in CHANNEL_PHASES))
        p = sum(chan.values())
        print(f"  {'receipts + all-reduce + idle':<34s} {p:12.3f} {g:11.3f} {g / p - 1 if p else float('nan'):+8.1%}"
              f"   (predicted {', '.join(f'{k} {v:.3f}' for k, v in chan.items())}; measured sync_wait + communication)")
        rest = float(got.drop(labels=[*pred, *CHANNEL_PHASES], errors="ignore").sum())
        print(f"  {'not modelled (other, optimizer, ...)':<34s} {0.0:12.3f} {rest:11.3f}")
        out.update(predicted_phases=pred, measured_phases=got.to_dict())
    if "group 1x2" in e:
        measured = e["group 1x2"]
        replanned = statistics.median(r["planned_epoch_s"] for r in results["group 1x2"])
        print(f"  re-planned from the second epoch's measured times: predicted {replanned:.3f}s, measured "
              f"{measured:.3f}s: error {measured / replanned - 1:+.1%}")
        per_rank = results["group 1x2"][0]["per_rank"]
        print("  group 1x2 by process (s per epoch; 'head' is the task's loss, its negative sampling and the "
              "head, forward and backward, which run on p2 and which the plan takes from head_costs, not "
              "from the cost model):")
        print("  " + per_rank.rename(index={0: "p1", 1: "p2"}).round(3).to_string().replace("\n", "\n  "))
        out["per_process"] = per_rank.to_dict()
    return out


def _variation(path) -> float:
    from dynagnn.data.store import open_store

    e = np.diff(np.asarray(open_store(path).offsets)).astype(float)
    return float(e.max() / max(e.min(), 1.0))
