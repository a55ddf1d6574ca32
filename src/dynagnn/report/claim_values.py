"""Our number for each claim of the claims table (:mod:`dynagnn.report.claims`), from each kind of
result table: the functions its registry names as a claim's ``ours`` (``(df, path) -> float``) and
``gpu`` (gpu-check's rows -> rows of the table), the factories that make them, and
:class:`Oversubscribed`, which ``ours`` raises for a run the table must not count as evidence.

Apart from the registry and the table's evaluation because these read the columns of every stage's
result tables (statistics, analyses, comparisons, studies, gpu-check), while the registry says only
which table a claim reads and what the paper states.
"""

from __future__ import annotations

import math
from pathlib import PurePosixPath
from typing import Callable, Iterable

import pandas as pd


class Oversubscribed(Exception):
    """A claim would read a run that had more threads than cores: its time is not evidence."""


def _one(df: pd.DataFrame, column: str, **where) -> float:
    """The value of ``column`` in the single row matching ``where`` (LookupError when none does;
    :class:`Oversubscribed` when that row's run had more threads than cores)."""
    sel = df
    for key, value in where.items():
        sel = sel[sel[key] == value]
    if sel.empty:
        raise LookupError(", ".join(f"{k} {v}" for k, v in where.items()))
    row = sel.iloc[0]
    if "oversubscribed" in sel and bool(row["oversubscribed"]):
        raise Oversubscribed(f"oversubscribed: not evidence ({', '.join(f'{v}' for v in where.values())}: "
                             f"{int(row['processes'])} processes × {int(row['threads'])} threads on "
                             f"{int(row['cores'])} cores)")
    return float(row[column])


def _closest(values: Iterable[float], target: float, what: str = "rows") -> float:
    values = sorted(set(values))
    if not values:
        raise LookupError(f"no {what}")
    return min(values, key=lambda v: (abs(math.log(v / target)), v))


def strategy_value(column: str, strategy: str) -> Callable:
    return lambda df, _: _one(df, column, strategy=strategy)


def epoch_ratio(slow: str, fast: str) -> Callable:
    return lambda df, _: _one(df, "epoch_s", strategy=slow) / _one(df, "epoch_s", strategy=fast)


def accuracy_gap(df: pd.DataFrame, _) -> float:
    """Largest |best validation metric - the first run's| over the other runs (the first is sequential)."""
    if len(df) < 2:
        raise LookupError("one run only")
    return float((df["best_val"].iloc[1:] - df["best_val"].iloc[0]).abs().max())


def vertex_spread(df: pd.DataFrame, _) -> float:
    active = df.loc[df["active_nodes"] > 0, "active_nodes"]
    if active.empty:
        raise LookupError("no active vertices")
    return float(active.max() / active.min())


def change_rate(df: pd.DataFrame, _) -> float:
    """Mean share of a snapshot's edges absent from the previous snapshot (snapshot 0 has none before it)."""
    later = df[(df["snapshot"] > 0) & (df["edges"] > 0)]
    if later.empty:
        raise LookupError("one snapshot only")
    return float((1 - later["overlap_rate"]).mean())


def last_speedup(df: pd.DataFrame, _) -> float:
    return float(df["speedup"].iloc[-1])


def first_transfer_share(df: pd.DataFrame, _) -> float:
    return float(df["transfer_share"].iloc[0])


def memory_saving(df: pd.DataFrame, _) -> float:
    """The first variant's peak memory over the smallest of the others' (nb = 1 over the best nb)."""
    if len(df) < 2:
        raise LookupError("one variant only")
    return float(df["peak_memory_mb"].iloc[0] / df["peak_memory_mb"].iloc[1:].min())


def overlap_fall(df: pd.DataFrame, _) -> float:
    med = df.groupby("frame_size")["overlap_rate"].median()
    if len(med) < 2:
        raise LookupError("one frame size only")
    return float(med.iloc[-1] / med.iloc[0])


def diff_saving(smoothed: bool) -> Callable:
    """Full bytes over graph-difference bytes of all snapshots: at edge life 1 (the raw snapshots) or
    at the longest edge life (the most smoothed)."""
    def ours(df: pd.DataFrame, _) -> float:
        lives = sorted(df["edge_life"].unique())
        life = lives[-1] if smoothed else 1
        if (smoothed and life <= 1) or life not in lives:
            raise LookupError("no smoothed edge life" if smoothed else "no edge life 1")
        sub = df[df["edge_life"] == life]
        return float(sub["full_bytes"].sum() / sub["diff_bytes"].sum())
    return ours


def _volume(df: pd.DataFrame, scheme: str, partitioner: str | None, workers: int) -> float:
    sel = df[(df["scheme"] == scheme) & (df["workers"] == workers)]
    if partitioner is not None:
        sel = sel[sel["partitioner"] == partitioner]
    if sel.empty:
        raise LookupError(f"scheme {scheme} at {workers} workers")
    return float(sel["counted_bytes"].sum())


def volume_growth(scheme: str) -> Callable:
    """Counted volume at the most workers over the fewest: snapshot partitioning (ESDG's even split), or
    vertex partitioning by METIS (hash where METIS is absent)."""
    def ours(df: pd.DataFrame, _) -> float:
        sub = df[df["scheme"] == scheme]
        part = None
        if scheme == "vertex":
            part = "metis" if (sub["partitioner"] == "metis").any() else "hash"
        workers = sorted(sub["workers"].unique())
        if len(workers) < 2:
            raise LookupError(f"{scheme} at one worker count only")
        return _volume(df, scheme, part, workers[-1]) / _volume(df, scheme, part, workers[0])
    return ours


def sven_ratio(other: str) -> Callable:
    """``other``'s counted bytes over Sven's, at the worker count closest to the paper's 4 trainers."""
    def ours(df: pd.DataFrame, _) -> float:
        workers = int(_closest(df.loc[df["scheme"] == "sven", "workers"], 4, "sven rows: no event stream"))
        return _volume(df, other, None, workers) / _volume(df, "sven", None, workers)
    return ours


def sven_run_ratio(column: str, other: str) -> Callable:
    """``other``'s over Sven's (run ``tgnn``) in the tgnn comparison: the epoch time, or ``rows``, the
    bytes per batch of dispatch and aggregation summed over the workers."""
    def value(df: pd.DataFrame, run: str) -> float:
        sel = df[df["run"] == run]
        if sel.empty:
            raise LookupError(f"no run {run}")
        return float(sel["epoch_s"].iloc[0]) if column == "epoch_s" else float((sel["dispatch"] + sel["aggregation"]).sum())
    return lambda df, _: value(df, other) / value(df, "tgnn")


def eta(column: str) -> Callable:
    """Mean redundancy at the batch size closest to 1000 events (Sven's default)."""
    return lambda df, _: _one(df, column, batch_size=_closest(df["batch_size"], 1000))


def partition_cut(method: str, baseline: str, column: str) -> Callable:
    """1 - ``method``'s ``column`` / ``baseline``'s, at the worker count closest to 4."""
    def ours(df: pd.DataFrame, _) -> float:
        workers = _closest(df.loc[df["method"] == method, "workers"], 4, f"{method} rows")
        return 1 - _one(df, column, method=method, workers=workers) / _one(df, column, method=baseline, workers=workers)
    return ours


def hit_ratio(policy: str, order: str) -> Callable:
    """Hit ratio of ``policy`` with ``order`` at the cache fraction closest to 10% of the nodes."""
    def ours(df: pd.DataFrame, _) -> float:
        return _one(df, "hit_ratio", policy=policy, order=order, fraction=_closest(df["fraction"], 0.1))
    return ours


def po_over_static(df: pd.DataFrame, path) -> float:
    return hit_ratio("fifo", "proximity")(df, path) / hit_ratio("static", "random")(df, path)


def bytes_cut(baseline: str) -> Callable:
    return lambda df, _: 1 - _one(df, "store_bytes", strategy="sampled") / _one(df, "store_bytes", strategy=baseline)


# ---- gpu-check's rows (benchmarks/gpu_check.py: system, rung, measure, value, status) ---------------

def _gpu_value(rows: pd.DataFrame, system: str, rung: str, measure: str) -> float:
    hit = rows[(rows["system"] == system) & (rows["rung"] == rung) & (rows["measure"] == measure)
               & (rows["status"] == "measured")]
    if hit.empty:
        raise LookupError(f"{system} {rung!r} {measure!r}")
    return float(hit["value"].iloc[0])


def gpu_ratio(system: str, slow: str, fast: str, measure: str = "epoch"):
    def ours(rows):
        return [(f"{system}: {slow} / {fast}", _gpu_value(rows, system, slow, measure)
                 / _gpu_value(rows, system, fast, measure), "")]
    return ours


def gpu_measure(system: str, rung: str, measure: str):
    return lambda rows: [(f"{system}: {rung}", _gpu_value(rows, system, rung, measure), "")]


def gpu_pipad(rung: str, measure: str):
    """One row per dataset of the PiPAD rung (T-GCN, as PyG Temporal's TGCN: the paper's tgcn)."""
    def ours(rows):
        hit = rows[(rows["system"] == "PiPAD") & rows["rung"].str.endswith(f": {rung}")
                   & (rows["measure"] == measure) & (rows["status"] == "measured")]
        if hit.empty:
            raise LookupError(f"PiPAD '<dataset>: {rung}' {measure!r}")
        return [(f"PiPAD: {r.rung}", float(r.value), "tgcn") for r in hit.itertuples()]
    return ours


# the dataset folders DyGLib's UCI figures are set against (CollegeMsg is UCI's message network)
UCI_NAMES = ("collegemsg", "uci")


def seeds_ap(kind: str, inductive_setting: bool = False) -> Callable:
    """Ours from a run's summary over seeds (``train --seeds``, or a config run's ``seeds``): the mean
    test AP x100, averaged per batch as DyGLib averages it, against ``kind``'s negatives, of every test
    event or (``inductive_setting``) of those touching a node unseen in training; the run's own
    negatives' metrics are unprefixed, the kinds it reported beside them prefixed
    (``report_negative_kinds``)."""
    def ours(df: pd.DataFrame, where: PurePosixPath) -> float:
        if where.parts and where.parts[0].lower() not in UCI_NAMES:
            raise LookupError(f"dataset {where.parts[0]}: DyGLib's figures are UCI's (a dataset named "
                              f"{' or '.join(UCI_NAMES)})")
        own = str(df["eval_negative_kind"].iloc[0]) if "eval_negative_kind" in df.columns and len(df) else "random"
        metric = "test_" + ("" if kind == own else f"{kind}_") + ("ind_" if inductive_setting else "") + "ap_batch"
        return 100 * _one(df, "mean", metric=metric)
    return ours
