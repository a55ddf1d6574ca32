"""Accuracy at DyGLib's protocol: the event models and EdgeBank on CollegeMsg's event stream, and the
snapshot models and EdgeBank on its weekly snapshots, over several seeds, against random, historical
and inductive negatives, side by side with DyGLib's published figures.

Each model trains once per seed (``dynagnn train --seed k``, one process of one thread per job,
``DYNAGNN_BENCH_ACCURACY_JOBS`` jobs at a time) with random evaluation negatives, which choose the kept
epoch, and the other two kinds scored beside them in every evaluation (``report_negative_kinds``):
DyGLib trains once and evaluates the kept model under each kind. EdgeBank (unlimited memory, and a
window of the test span) trains by nothing and is scored by the same code on the same negatives.

- event models (TGN, JODIE, APAN): batches of 200 events, Adam at 1e-4, memory and time encoding 100,
  10 neighbours, one training negative per event, one fixed random negative per evaluation event (AP
  and AUC take the first), up to 100 epochs, early stopping on the validation AP with patience 20;
  transductive AP over every test event, and the inductive setting's AP over the events touching a
  node unseen in training (their own pass, DyGLib's);
- snapshot models (T-GCN, WD-GCN): CollegeMsg in weekly snapshots, windows of 4, hidden 32, each
  positive of t+1 against 20 random corruptions of its source (AUC and AP on the first) or one
  historical or inductive negative edge, up to 30 epochs, patience 5 on the validation AUC.

Printed: one table per task, mean ± population std over seeds of the test AP x100 (events: over the
whole test set, and averaged per batch of 200 as DyGLib averages it; snapshots: AUC / AP), with
DyGLib's UCI figures beside; then the claims table's DyGLib rows built from the runs' summaries. The
runs stay in ``results/bench/accuracy/collegemsg/<model>/<strategy>-1/seed-<k>/`` (each run's own
out-dir: a finished seed is kept and not trained again, ``DYNAGNN_BENCH_ACCURACY_FRESH=1`` trains it
again), with ``summary.parquet`` and ``seeds.parquet`` beside the seeds.

Run time: the full protocol (3 seeds) took about an hour with 2 jobs on a 2-core machine (other work
beside it), most of it TGN's and APAN's 30-77 epochs of 3-6 s. ``DYNAGNN_BENCH_ACCURACY_SEEDS``
(default ``0,1,2``), ``DYNAGNN_BENCH_ACCURACY_EPOCHS`` (the event models' maximum; the snapshot models
take 30 unless it is lower), ``DYNAGNN_BENCH_ACCURACY_MODELS`` (a comma list, default all);
``DYNAGNN_BENCH_ACCURACY_SMOKE=1``: a 3,000-event random stream, 2 epochs, to check the benchmark runs.
Run alone: ``python -m benchmarks accuracy``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

KINDS = ("random", "historical", "inductive")
EVENT_MODELS = ("tgn", "jodie", "apan", "edgebank", "edgebank_window")
SNAPSHOT_MODELS = ("tgcn", "wdgcn", "edgebank", "edgebank_window")
# the order jobs start in: the longest first, so that two jobs end together
LONGEST_FIRST = ("tgn", "apan", "jodie", "tgcn", "wdgcn", "edgebank", "edgebank_window")
# DyGLib's UCI AP x100, random / historical / inductive negatives, and the inductive setting's (random)
# (Yu et al. 2023, read in TPNet's Tables 1 and 6 and in Poursafaei et al.'s reprint; docs/papers.md)
DYGLIB = {"tgn": {"random": "92.34 ± 1.04", "historical": "80.43", "inductive": "70.94",
                  "ind_random": "88.12 ± 2.05"},
          "jodie": {"random": "89.43 ± 1.09", "historical": "75.24", "inductive": "65.99",
                    "ind_random": "79.86 ± 1.48"}}
EVENT_OPTIONS = {"event_batch": 200, "lr": 1e-4, "memory_dim": 100, "time_dim": 100, "neighbors": 10,
                 "event_negatives": 1, "patience": 20, "threads": 1}
SNAPSHOT_OPTIONS = {"window": 4, "hidden": 32, "patience": 5, "threads": 1}
LABELS = {"tgn": "TGN", "jodie": "JODIE", "apan": "APAN", "tgcn": "T-GCN", "wdgcn": "WD-GCN",
          "edgebank": "EdgeBank, unlimited", "edgebank_window": "EdgeBank, test-span window"}


def _env_list(name: str, default):
    value = os.environ.get(name)
    return [v.strip() for v in value.split(",") if v.strip()] if value else list(default)


def smoke_store():
    from .common import random_event_store

    return random_event_store("accuracy_smoke", 60, 3000, 5 * 10**4, directed=False, dim=8)


def jobs(models, seeds, epochs: int) -> list[dict]:
    """One training job per (model, strategy, seed), the longest first."""
    out = []
    for model in sorted(set(models), key=LONGEST_FIRST.index):
        tasks = []
        if model in EVENT_MODELS:
            tasks.append(("events", {**EVENT_OPTIONS, "epochs": epochs}))
        if model in SNAPSHOT_MODELS:
            tasks.append(("sequential", {**SNAPSHOT_OPTIONS, "epochs": min(30, epochs)}))
        for strategy, options in tasks:
            for seed in seeds:
                out.append({"model": model, "strategy": strategy, "seed": int(seed),
                            "options": {**options, "model": model, "strategy": strategy, "seed": int(seed),
                                        "eval_negative_kind": "random",
                                        "report_negative_kinds": ["historical", "inductive"]}})
    return out


def run_job(store: Path, root: Path, job: dict, fresh: bool) -> str:
    """Train one job in its own process (the CLI a user runs); skipped when its out-dir holds the run
    of these options."""
    out = root / job["model"] / f"{job['strategy']}-1" / f"seed-{job['seed']}"
    stamp = out / "bench-options.json"
    wanted = json.dumps(job["options"], sort_keys=True)
    if not fresh and (out / "metrics.parquet").is_file() and stamp.is_file() and stamp.read_text() == wanted:
        return f"{out}: kept"
    stamp.unlink(missing_ok=True)
    (out / "metrics.parquet").unlink(missing_ok=True)   # a failed run leaves no older seed to be gathered
    log = out.parent / f"seed-{job['seed']}.log"
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "dynagnn", "-q", "train", str(store), "--out-dir", str(out), "--options", wanted,
           "--overwrite"]
    with open(log, "w") as fh:
        rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        return f"{out}: FAILED (rc {rc}, see {log})"
    stamp.write_text(wanted)
    return f"{out}: trained"


def summarise(root: Path, models, seeds) -> list[Path]:
    """Each (model, strategy)'s seeds.parquet and summary.parquet from its seeds' runs; their paths."""
    from dynagnn.api import gather_seeds

    made = []
    for model in models:
        for run in sorted((root / model).glob("*-1")):
            if all((run / f"seed-{k}" / name).is_file() for k in seeds for name in ("metrics.parquet",
                                                                                "bench-options.json")):
                gather_seeds(run, seeds)
                made.append(run / "summary.parquet")
    return made


def _cell(summary, metric: str) -> str:
    row = summary[summary["metric"] == metric]
    if row.empty or not row["mean"].notna().all():
        return "—"
    return f"{100 * row['mean'].iloc[0]:.2f} ± {100 * row['std'].iloc[0]:.2f}"


def tables(root: Path, models) -> str:
    import pandas as pd

    lines = []
    for strategy, title in (("events", "event link prediction (test AP x100; per-batch mean in brackets)"),
                            ("sequential", "snapshot link prediction, next week (test AUC / AP x100)")):
        rows = [(m, pd.read_parquet(root / m / f"{strategy}-1" / "summary.parquet")) for m in models
                if (root / m / f"{strategy}-1" / "summary.parquet").is_file()]
        if not rows:
            continue
        lines.append(f"\nCollegeMsg {title}, mean ± std over {int(rows[0][1]['n'].iloc[0])} seeds")
        for setting, pre in (("transductive", ""), ("inductive", "ind_")):
            if strategy == "sequential" and pre:
                continue
            head = f"  {'model':28s}" + "".join(f"{k:>24s}" for k in KINDS)
            if strategy == "events":
                head += f"  {'DyGLib UCI (random / hist / ind)':>36s}"
            lines += [f" {setting}" if strategy == "events" else "", head]
            for model, s in rows:
                cells = []
                for kind in KINDS:
                    p = "" if kind == "random" else f"{kind}_"
                    if strategy == "events":
                        cells.append(f"{_cell(s, f'test_{p}{pre}ap')} [{_cell(s, f'test_{p}{pre}ap_batch')[:5]}]")
                    else:
                        cells.append(f"{_cell(s, f'test_{p}auc')} / {_cell(s, f'test_{p}ap')[:5]}")
                line = f"  {LABELS.get(model, model):28s}" + "".join(f"{c:>24s}" for c in cells)
                ref = DYGLIB.get(model)
                if strategy == "events" and ref:
                    line += ("  " + (f"{ref['random']} / {ref['historical']} / {ref['inductive']}" if not pre
                                     else f"{ref['ind_random']} / — / —"))
                lines.append(line)
    return "\n".join(lines)


def main() -> None:
    from .common import bench_dir

    smoke = os.environ.get("DYNAGNN_BENCH_ACCURACY_SMOKE") == "1"
    seeds = [int(s) for s in _env_list("DYNAGNN_BENCH_ACCURACY_SEEDS", ["0"] if smoke else ["0", "1", "2"])]
    epochs = int(os.environ.get("DYNAGNN_BENCH_ACCURACY_EPOCHS", "2" if smoke else "100"))
    models = _env_list("DYNAGNN_BENCH_ACCURACY_MODELS", LONGEST_FIRST)
    unknown = [m for m in models if m not in LONGEST_FIRST]
    if unknown:
        raise SystemExit(f"DYNAGNN_BENCH_ACCURACY_MODELS: unknown {unknown}; known: {', '.join(LONGEST_FIRST)}")
    n_jobs = int(os.environ.get("DYNAGNN_BENCH_ACCURACY_JOBS", "1"))
    fresh = os.environ.get("DYNAGNN_BENCH_ACCURACY_FRESH") == "1"
    if smoke:
        store, root = smoke_store(), bench_dir() / "accuracy_smoke" / "smoke"
    else:
        from .bench_tgnn_models import collegemsg_events

        store, root = collegemsg_events(), bench_dir() / "accuracy" / "collegemsg"
    todo = jobs(models, seeds, epochs)
    print(f"accuracy: {len(todo)} runs of {', '.join(models)} over seeds {seeds} on {store}, {n_jobs} at a time "
          f"(one thread each)", flush=True)
    with ThreadPoolExecutor(n_jobs) as pool:
        for line in pool.map(lambda j: run_job(store, root, j, fresh), todo):
            print("  " + line, flush=True)
    made = summarise(root, models, seeds)
    print(tables(root, models))
    from dynagnn.report.claims import claim_tables, claims_html, claims_table

    claims = claims_table(claim_tables(made, root.parent), root.parent)   # the event runs' summaries
    claims = claims[claims["paper"].str.startswith("DyGLib")]
    claims.to_parquet(root.parent / "claims.parquet", index=False)
    (root.parent / "claims.html").write_text(claims_html(claims, "DyGLib's accuracy beside ours"))
    print("\nclaims (ours / DyGLib's):")
    for r in claims.itertuples():
        print(f"  {r.claim[:70]:70s} {r.where[:34]:34s} {r.paper_value:7.2f} {r.ours:7.2f} {r.ratio:6.3f}  {r.status}")
