"""Strategies side by side against the plan's predictions (BLAD Figs. 12, 15, 16, 18).

One row per training run of a (dataset, model, workers): the measured median epoch time (warm-up
epochs excluded), the synchronisation-wait share (``sync_wait`` over every process's timed time),
the operator-overlap share (the group strategies' ``overlap_share`` per epoch) and, for the
strategies that run a plan, what the plan predicted for each:

- epoch: the plan's pipeline makespan of the slowest worker (forward and backward only; the
  measured epoch also holds the optimiser, the losses and the hand-overs);
- sync share: the idle share of all 2P processes until the slowest worker's makespan;
- overlap share: the plan's operator order's compute/memory overlap (BLAD), or the default order's
  (BLAD-NM, BLAD-Even).

The workflow compares runs on equal hardware: the runs of a (dataset, model) that use the same
cores (processes × threads: BLAD's 1 worker × 2 processes beside ESDG's 2 workers × 1 beside one
process of 2 threads). Each row says what it was timed on (``processes``, ``threads``, ``cores``) and
whether it was ``oversubscribed``, which the claims table then refuses as evidence.

``replanned_epoch_s``: the epoch predicted by the plan the run re-made from the times measured in
its second epoch (the first when it ran two; group, blad_nm; option ``replan``), which the later
epochs followed.

An ``auto`` run (issue 30) is compared as any other: its row is the candidate it chose and trained
(``auto_choice``: that candidate's label, from its metrics' ``auto_choice`` column; '' for the
other runs). What it timed
before choosing is in its ``auto.json``: :func:`auto_trials` places each timed candidate's trial
(seconds per epoch) at the compared run that trained the same strategy on the same processes and
threads, the chosen one's at the auto run itself, and ``auto_trial_s`` of the table is that trial's
seconds beside each run's measured ``epoch_s``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PLANNED = {"group": "balanced", "blad_nm": "balanced", "blad_even": "even", "group_frames": "balanced"}
COLUMNS = ["strategy", "epochs", "epoch_s", "predicted_epoch_s", "replanned_epoch_s", "sync_share", "predicted_sync_share",
           "overlap_share", "predicted_overlap_share", "best_val", "processes", "threads", "cores", "oversubscribed",
           "auto_choice", "auto_trial_s"]
# the candidates an auto run timed (auto.json), placed among the compared runs (:func:`auto_trials`)
AUTO_COLUMNS = ["run", "candidate", "strategy", "processes", "threads", "trial_s", "predicted_s", "chosen", "at"]


def run_identity(metrics_path) -> dict[str, str]:
    """What a training run trained: ``model`` and ``store_checksum`` from its metrics.parquet's metadata
    (``dynagnn.model``, ``dynagnn.store_checksum``; "" where it recorded none)."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(metrics_path).metadata or {}
    return {k: meta.get(f"dynagnn.{k}".encode(), b"").decode() for k in ("model", "store_checksum")}


def check_comparable(runs: dict[str, dict[str, str]], plan=None) -> None:
    """InputError unless every run (name -> :func:`run_identity`) trained the same model on the same
    store (and the plan's, when given): a comparison of strategies is only one between equals."""
    from dynagnn.errors import InputError

    what = {"model": "model", "store_checksum": "dataset (store checksum)"}
    for key, label in what.items():
        seen: dict[str, list[str]] = {}
        for name, ident in runs.items():
            if ident.get(key):  # a table that recorded nothing (an old run) cannot be told apart
                seen.setdefault(ident[key], []).append(name)
        if plan is not None:
            want = plan.model if key == "model" else plan.store_checksum
            if want:
                other = {v: names for v, names in seen.items() if v != want}
                if other:
                    v, names = next(iter(other.items()))
                    raise InputError(f"compare: run {names[0]} trained {label} {v[:16]!r}, the plan is for "
                                     f"{want[:16]!r}: compare runs of the plan's dataset and model only")
        if len(seen) > 1:
            parts = "; ".join(f"{', '.join(names)}: {v[:16]!r}" for v, names in seen.items())
            raise InputError(f"compare: the runs trained different {label}s ({parts}); compare runs of one dataset "
                             "and model only")


def predicted(plan, strategy: str) -> dict[str, float]:
    """The plan's predicted epoch, sync share and overlap share for a group strategy (else NaN)."""
    kind = PLANNED.get(strategy.partition("@")[0])  # "group@1": a label that also names the run
    if kind is None:
        return {"predicted_epoch_s": np.nan, "predicted_sync_share": np.nan, "predicted_overlap_share": np.nan}
    procs = plan.processes if kind == "balanced" else plan.baseline_processes
    span = max(p.makespan for p in procs)
    busy = sum(float(p.busy.sum()) for p in procs)
    s = plan.summary()
    overlap = s.get("overlap_fraction" if strategy == "group" else "default_overlap_fraction", np.nan)
    return {"predicted_epoch_s": float(span),
            "predicted_sync_share": float(1 - busy / (2 * len(procs) * span)) if span > 0 else 0.0,
            "predicted_overlap_share": float(overlap)}


def measured(metrics: pd.DataFrame, timings: pd.DataFrame) -> dict[str, float]:
    """Median epoch seconds, sync-wait share and overlap share of one run (warm-up excluded where
    more than one epoch ran)."""
    m = metrics[metrics["epoch"] >= 1] if len(metrics) > 1 else metrics
    t = timings[timings["epoch"].isin(m["epoch"])]
    total = float(t["seconds"].sum())
    primary = [c for c in metrics.columns if c.startswith("val_")][:1]
    return {"epochs": int(len(metrics)), "epoch_s": float(m["train_seconds"].median()),
            "sync_share": float(t.loc[t["phase"] == "sync_wait", "seconds"].sum() / total) if total > 0 else 0.0,
            "overlap_share": float(m["overlap_share"].median()) if "overlap_share" in m else np.nan,
            "replanned_epoch_s": float(metrics["planned_epoch_s"].iloc[-1]) if "planned_epoch_s" in metrics else np.nan,
            "best_val": float(metrics.loc[metrics["best"], primary[0]].iloc[0]) if primary else np.nan,
            **hardware(metrics)}


def hardware(metrics: pd.DataFrame) -> dict:
    """The processes, threads per process and cores a run was timed on, and whether it was
    oversubscribed (more threads than cores: its times are not evidence); unknown (NaN, False) for a
    run written before these were recorded."""
    if "oversubscribed" not in metrics:
        return {"processes": np.nan, "threads": np.nan, "cores": np.nan, "oversubscribed": False}
    last = metrics.iloc[-1]
    return {"processes": int(last["processes"]), "threads": int(last["threads"]), "cores": int(last["cores"]),
            "oversubscribed": bool(last["oversubscribed"])}


def strategy_table(plan, runs: dict[str, tuple[pd.DataFrame, pd.DataFrame]],
                   autos: dict[str, dict] | None = None) -> pd.DataFrame:
    """``runs``: strategy -> (metrics, timings) of its run; ``plan``: the SchedulePlan the group
    strategies ran (or None); ``autos``: run label -> the ``auto.json`` of an auto run among ``runs``
    (its trials fill ``auto_trial_s``: :func:`auto_trials`)."""
    rows = []
    for strategy, (metrics, timings) in runs.items():
        row = {"strategy": strategy, **measured(metrics, timings)}
        row.update(predicted(plan, strategy) if plan is not None else {})
        row["auto_choice"] = str(metrics["auto_choice"].iloc[-1]) if "auto_choice" in metrics else ""
        rows.append(row)
    table = pd.DataFrame(rows).reindex(columns=COLUMNS)
    trials = auto_trials(table, autos or {})
    placed = trials[trials["at"] != ""].drop_duplicates("at")   # one auto run's trial per compared run
    table["auto_trial_s"] = table["strategy"].map(placed.set_index("at")["trial_s"]).astype(float)
    return table


def auto_trials(table: pd.DataFrame, autos: dict[str, dict]) -> pd.DataFrame:
    """The candidates each auto run timed, from its ``auto.json`` (``autos``: the run's label in
    ``table`` -> the file's content): one row per candidate with a trial, and the chosen one also
    without (one candidate that fits is trained untimed), in the file's order (:data:`AUTO_COLUMNS`).
    ``processes``: workers × processes per worker; ``trial_s``: the trial's seconds per epoch (NaN
    untimed); ``predicted_s``: the chooser's prediction; ``at``: the row of ``table`` the trial is
    drawn at: the auto run itself for the chosen candidate, else the run that trained the candidate's
    strategy on the same processes and threads ('' when none did: the candidate was timed only)."""
    rows = []
    for run, report in autos.items():
        for c in report.get("candidates", []):
            trial = c.get("trial_seconds")
            if trial is None and not c.get("chosen"):
                continue
            procs = int(c["workers"]) * int(c.get("processes_per_worker", 1))
            at = run if c.get("chosen") else ""
            if not at:
                same = table[(table["strategy"].str.partition("@")[0] == c["strategy"])
                             & (table["processes"] == procs) & (table["threads"] == int(c["threads"]))]
                at = str(same["strategy"].iloc[0]) if len(same) else ""
            predicted_s = c.get("predicted_seconds")
            rows.append({"run": run, "candidate": c["label"], "strategy": c["strategy"], "processes": procs,
                         "threads": int(c["threads"]), "trial_s": np.nan if trial is None else float(trial),
                         "predicted_s": np.nan if predicted_s is None else float(predicted_s),
                         "chosen": bool(c.get("chosen")), "at": at})
    return pd.DataFrame(rows, columns=AUTO_COLUMNS).astype({"processes": int, "threads": int, "trial_s": float,
                                                            "predicted_s": float, "chosen": bool})
