"""Figures, one function each; every figure is written as PNG and PDF side by side."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..atomic import write_all  # noqa: E402


def save(fig, out_png: str | Path, title: str = "") -> list[Path]:
    """Title and lay out ``fig``, save it to ``out_png`` and the same stem with .pdf (both or
    neither), and close it."""
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out_png = Path(out_png)
    try:
        return write_all({path: lambda tmp, fmt=path.suffix[1:]: fig.savefig(tmp, format=fmt, dpi=150,
                                                                             bbox_inches="tight")
                          for path in (out_png, out_png.with_suffix(".pdf"))})
    finally:
        plt.close(fig)


def _grouped_bars(ax, groups: list, series: dict[str, list[float]], xlabel: str, legend_size: int = 8) -> None:
    """One cluster of bars per group, one bar per series, centred on the group's tick."""
    width = 0.8 / max(len(series), 1)
    for i, (label, values) in enumerate(series.items()):
        ax.bar(np.arange(len(groups)) + (i - (len(series) - 1) / 2) * width, values, width, label=label)
    ax.set_xticks(np.arange(len(groups)), [str(g) for g in groups])
    ax.set_xlabel(xlabel)
    ax.legend(fontsize=legend_size)


def load_variation(stats: pd.DataFrame, out_png: str | Path, title: str = "") -> list[Path]:
    """Vertex and edge counts over time, overlap with the previous snapshot, and the distributions
    of per-snapshot edge and vertex counts (the imbalance BLAD's scheduler exists for)."""
    fig, ax = plt.subplots(2, 2, figsize=(10, 6.5))
    t = stats["snapshot"]
    a = ax[0, 0]
    a.plot(t, stats["edges"], color="tab:blue", label="edges")
    a.set_xlabel("snapshot")
    a.set_ylabel("edges", color="tab:blue")
    b = a.twinx()
    b.plot(t, stats["active_nodes"], color="tab:orange", label="active vertices")
    b.set_ylabel("active vertices", color="tab:orange")
    a.set_title("load per snapshot")

    ax[0, 1].plot(t[1:], stats["overlap_rate"][1:], color="tab:green", label="overlap rate")
    ax[0, 1].plot(t[1:], stats["jaccard"][1:], color="tab:purple", label="Jaccard")
    ax[0, 1].set_ylim(0, 1.02)
    ax[0, 1].set_xlabel("snapshot")
    ax[0, 1].set_title("edges shared with the previous snapshot")
    ax[0, 1].legend(loc="best", fontsize=8)

    for a, col, colour in ((ax[1, 0], "edges", "tab:blue"), (ax[1, 1], "active_nodes", "tab:orange")):
        a.hist(stats[col], bins=min(30, max(5, len(stats) // 3)), color=colour, alpha=0.8)
        lo, hi = stats[col].min(), stats[col].max()
        ratio = f"max/min = {hi / lo:.2f}" if lo > 0 else "min = 0"
        a.set_title(f"distribution of {col.replace('_', ' ')} ({ratio})")
        a.set_xlabel(col.replace("_", " "))
        a.set_ylabel("snapshots")
    return save(fig, out_png, title)


def overlap_by_frame(overlap: pd.DataFrame, out_png: str | Path, title: str = "") -> list[Path]:
    """PiPAD's overlap rate of frames against frame size, and what overlap-aware transfer saves."""
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    sizes = sorted(overlap["frame_size"].unique())
    data = [overlap.loc[overlap["frame_size"] == s, "overlap_rate"] for s in sizes]
    ax[0].boxplot(data, tick_labels=[str(s) for s in sizes])
    ax[0].set_xlabel("snapshots per frame (S)")
    ax[0].set_ylabel("overlap rate |∩E| / mean |E|")
    ax[0].set_ylim(0, 1.02)
    ax[0].set_title("overlap of a frame's snapshots")
    saving = overlap.groupby("frame_size")["index_transfer_saving"].median()
    ax[1].bar([str(s) for s in saving.index], saving.values, color="tab:green")
    ax[1].axhline(1.0, color="grey", lw=0.8)
    ax[1].set_xlabel("snapshots per frame (S)")
    ax[1].set_ylabel("edge indices: per-snapshot / overlap-aware")
    ax[1].set_title("transfer saving (median over frames)")
    return save(fig, out_png, title)


def format_sizes(formats: pd.DataFrame, out_png: str | Path, title: str = "") -> list[Path]:
    """Adjacency size in CSR, COO and sliced CSR, and graph-difference transfer against full transfer,
    per edge life."""
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    lives = sorted(formats["edge_life"].unique())
    totals = formats.groupby("edge_life")[["csr_words", "coo_words", "sliced_words"]].sum()
    _grouped_bars(ax[0], [f"l={l}" for l in lives],
                  {label: list(totals.loc[lives, col] / 1e6)
                   for col, label in (("csr_words", "CSR"), ("coo_words", "COO"), ("sliced_words", "sliced CSR"))},
                  xlabel="edge life")
    ax[0].set_ylabel("million words, all snapshots")
    ax[0].set_title("adjacency size by format")
    for l in lives:
        sub = formats[formats["edge_life"] == l]
        ax[1].plot(sub["snapshot"], sub["diff_saving"], label=f"edge life {l}")
    ax[1].axhline(1.0, color="grey", lw=0.8)
    ax[1].set_xlabel("snapshot")
    ax[1].set_ylabel("full bytes / difference bytes")
    ax[1].set_title("graph-difference transfer (ESDG)")
    ax[1].legend(fontsize=8)
    return save(fig, out_png, title)


def _log_x_unit_y(ax, xlabel: str, ylabel: str) -> None:
    """A rate (0..1) against a log-scaled size, with the legend."""
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)


def redundancy_by_batch(table: pd.DataFrame, out_png: str | Path, title: str = "") -> list[Path]:
    """Sven's dispatch (η1) and aggregation (η2) redundancy against batch size."""
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.plot(table["batch_size"], table["mean_eta1"], "o-", label="dispatch η1 (sampled vertices)")
    ax.plot(table["batch_size"], table["mean_eta2"], "s-", label="aggregation η2 (batch vertices)")
    _log_x_unit_y(ax, "batch size (events)", "redundancy rate")
    return save(fig, out_png, title)


def partition_quality(table: pd.DataFrame, out_png: str | Path, title: str = "") -> list[Path]:
    """Per vertex partitioner and worker count: edge cut, Sven's maximum per-worker volume, and
    ESDG's volume summed over snapshots; per temporal partitioner: edge balance of the workers."""
    vertex = table[table["edge_cut"].notna()]
    temporal = table[table["edge_cut"].isna()]
    metrics = (("edge_cut", "edge cut (union graph)"), ("max_part_comm", "max per-worker volume (Sven)"),
               ("snapshot_volume", "volume over snapshots (ESDG)"), ("edge_balance", "temporal: max/mean edges"))
    fig, ax = plt.subplots(1, 4, figsize=(16, 3.8))
    workers = sorted(table["workers"].unique())
    for a, (col, label) in zip(ax, metrics):
        sub = temporal if col == "edge_balance" else vertex
        _grouped_bars(a, workers, {m: [sub[(sub["method"] == m) & (sub["workers"] == w)][col].mean() for w in workers]
                                   for m in dict.fromkeys(sub["method"])}, xlabel="workers", legend_size=7)
        a.set_title(label, fontsize=10)
    return save(fig, out_png, title)


def cache_hit_ratio(table: pd.DataFrame, out_png: str | Path, title: str = "") -> list[Path]:
    """BGL's feature cache: hit ratio against cache size per policy, random against proximity order."""
    fig, ax = plt.subplots(figsize=(6, 4))
    styles = {"random": "--", "proximity": "-"}
    for (order, policy), sub in table.groupby(["order", "policy"], sort=False):
        ax.plot(100 * sub["fraction"], sub["hit_ratio"], styles.get(order, "-"), marker="o", label=f"{policy}, {order}")
    _log_x_unit_y(ax, "cache size (% of vertices)", "hit ratio")
    return save(fig, out_png, title)


def training_curves(metrics: pd.DataFrame, out_png: str | Path, title: str = "") -> list[Path]:
    """Training loss and every validation/test metric per epoch; the kept (best) epoch is marked."""
    names = sorted({c.split("_", 1)[1] for c in metrics.columns if c.startswith("val_")})
    fig, ax = plt.subplots(1, 1 + len(names), figsize=(3.4 * (1 + len(names)), 3.2))
    ax = np.atleast_1d(ax)
    ax[0].plot(metrics["epoch"], metrics["loss"], "o-")
    ax[0].set_ylabel("training loss")
    for a, name in zip(ax[1:], names):
        for split, style in (("val", "o-"), ("test", "s--")):
            a.plot(metrics["epoch"], metrics[f"{split}_{name}"], style, label=split)
        a.set_ylabel(name)
        a.legend(fontsize=8)
    if "best" in metrics and metrics["best"].any():
        best = int(metrics.loc[metrics["best"], "epoch"].iloc[0])
        for a in ax:
            a.axvline(best, color="grey", lw=0.8, ls=":")
    for a in ax:
        a.set_xlabel("epoch")
    return save(fig, out_png, title)


def volume_model_vs_count(table: pd.DataFrame, out_png: str | Path, title: str = "") -> list[Path]:
    """Communication volume per scheme (summed over layers, directions and components) against the
    worker count: the closed form, the volume counted on the real partition, and the paper's formula."""
    totals = table.groupby(["scheme", "partitioner", "workers"], sort=False)[["modelled", "counted", "paper"]].sum()
    panels = list(dict.fromkeys((s, p) for s, p, _ in totals.index))
    cols = min(4, max(1, len(panels)))
    rows = -(-len(panels) // cols)
    fig, ax = plt.subplots(rows, cols, figsize=(4 * cols, 3.4 * rows), squeeze=False)
    for a, (scheme, part) in zip(ax.ravel(), panels):
        sub = totals.xs((scheme, part), level=("scheme", "partitioner"))
        workers = list(sub.index)
        _grouped_bars(a, workers, {label: list(sub[col] / 1e6) for col, label in
                                   (("modelled", "closed form"), ("counted", "counted"), ("paper", "paper"))},
                      xlabel="workers", legend_size=7)
        a.set_title(f"{scheme} ({part})", fontsize=10)
        a.set_ylabel("million elements")
    for a in ax.ravel()[len(panels):]:
        a.set_visible(False)
    return save(fig, out_png, title)


def predicted_vs_measured(table: pd.DataFrame, out_png: str | Path, title: str = "") -> list[Path]:
    """The cost model's predicted against measured operator time on held-out shapes, log-log, one
    colour per operator (filled: forward, hollow: backward), with the y = x line and each
    operator's mean absolute percentage error in the legend."""
    fig, ax = plt.subplots(figsize=(5.6, 5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    t = table[(table["measured_s"] > 0) & (table["predicted_s"] > 0)]
    for i, (op, sub) in enumerate(t.groupby("operator", sort=True)):
        c = colours[i % len(colours)]
        err = float(np.mean(np.abs(sub["predicted_s"] - sub["measured_s"]) / sub["measured_s"]))
        for d, marker_face in (("forward", c), ("backward", "none")):
            s = sub[sub["direction"] == d]
            if len(s):
                ax.scatter(s["measured_s"] * 1e3, s["predicted_s"] * 1e3, s=18, edgecolors=c, facecolors=marker_face,
                           label=f"{op} {'fwd' if d == 'forward' else 'bwd'}" + (f" (mape {err:.1%})" if d == "forward" else ""))
    if len(t):
        lo = float(min(t["measured_s"].min(), t["predicted_s"].min())) * 1e3 / 1.5
        hi = float(max(t["measured_s"].max(), t["predicted_s"].max())) * 1e3 * 1.5
        ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls="--", label="y = x")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured (ms per call)")
    ax.set_ylabel("predicted (ms per call)")
    ax.legend(fontsize=7, loc="upper left")
    return save(fig, out_png, title)


def plan_loads(plan, out_png: str | Path, title: str = "") -> list[Path]:
    """A schedule plan (:class:`dynagnn.schedule.SchedulePlan`) against its even baseline: the
    predicted load of each worker (BLAD's balanced groups against ESDG's even split), and per worker
    the busy time of each of the two co-located processes and the pipeline's makespan (BLAD's
    programme against BLAD-Even halves)."""
    s = plan.summary()
    P = plan.num_workers
    workers = list(range(P))
    fig, ax = plt.subplots(1, 2, figsize=(11, 3.8))
    _grouped_bars(ax[0], workers, {f"balanced (max/mean {s['imbalance']:.3f})": list(s["worker_loads"]),
                                   f"even split (max/mean {s['baseline_imbalance']:.3f})": list(s["baseline_worker_loads"])},
                  xlabel="worker")
    ax[0].axhline(float(np.mean(s["worker_loads"])), color="grey", lw=0.8, ls=":")
    ax[0].set_ylim(0, 1.35 * max(max(s["worker_loads"]), max(s["baseline_worker_loads"])))
    ax[0].set_ylabel("predicted load per epoch (s)")
    ax[0].set_title("inter-worker: snapshot groups")
    series = {"planned p1": [float(p.busy[0]) for p in plan.processes],
              "planned p2": [float(p.busy[1]) for p in plan.processes],
              "even p1": [float(p.busy[0]) for p in plan.baseline_processes],
              "even p2": [float(p.busy[1]) for p in plan.baseline_processes]}
    _grouped_bars(ax[1], workers, series, xlabel="worker", legend_size=7)
    width = 0.8 / 4
    for k, (procs, colour) in enumerate(((plan.processes, "black"), (plan.baseline_processes, "tab:red"))):
        for w, p in enumerate(procs):
            x0 = w + (2 * k - 1.5) * width - width / 2
            ax[1].hlines(p.makespan, x0, x0 + 2 * width, color=colour, lw=1.5,
                         label=("planned" if k == 0 else "even") + " makespan" if w == 0 else None)
    ax[1].legend(fontsize=7, ncol=3, loc="upper center")
    ax[1].set_ylim(0, 1.4 * max(s["epoch_time"], s["baseline_epoch_time"]))
    ax[1].set_ylabel("predicted seconds per epoch")
    sub = f"intra-worker: two processes (epoch {s['epoch_time']:.3g} s vs {s['baseline_epoch_time']:.3g} s)"
    if "overlap_fraction" in s:
        sub += (f"\noperator order: compute/memory overlap {100 * s['overlap_fraction']:.1f}% of the time "
                f"(both aggregation-first {100 * s['default_overlap_fraction']:.1f}%)")
    ax[1].set_title(sub, fontsize=9)
    return save(fig, out_png, title)


# The figure of each analysis table (dynagnn.analysis.stage.ANALYSES), drawn beside it as <name>.png.
ANALYSIS_FIGURES = {"overlap": overlap_by_frame, "formats": format_sizes, "redundancy": redundancy_by_batch,
                    "partitions": partition_quality, "cache": cache_hit_ratio, "volume": volume_model_vs_count}


def strategy_comparison(table: pd.DataFrame, out_png: str | Path, title: str = "",
                        trials: pd.DataFrame | None = None) -> list[Path]:
    """Epoch time, synchronisation-wait share and operator-overlap share per strategy, measured
    beside the plan's prediction (:func:`dynagnn.report.strategies.strategy_table`; BLAD Figs.
    12, 15/18 and 16). An auto run's bar is labelled with the candidate it chose (``auto →
    <label>``); ``trials`` (:func:`dynagnn.report.strategies.auto_trials`): the candidates it timed,
    each trial's seconds per epoch marked on the epoch panel at the run of the same strategy and
    hardware (its pick's at its own bar, a candidate no run trained at a tick of its own)."""
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    names = strategy_labels(table)
    trials = trials if trials is not None else pd.DataFrame(columns=["candidate", "trial_s", "chosen", "at"])
    timed = trials[trials["trial_s"].notna()]
    alone = list(dict.fromkeys(timed.loc[timed["at"] == "", "candidate"]))   # timed, trained by no compared run
    for a, (col, label) in zip(ax, (("epoch_s", "seconds per epoch"), ("sync_share", "synchronisation-wait share"),
                                    ("overlap_share", "operator-overlap share"))):
        extra = alone if col == "epoch_s" else []
        series = {"measured": table[col].fillna(0).tolist() + [0.0] * len(extra),
                  "predicted (plan)": table[f"predicted_{col}"].fillna(0).tolist() + [0.0] * len(extra)}
        if col == "epoch_s" and table["replanned_epoch_s"].notna().any():
            series["re-planned from measured times"] = table["replanned_epoch_s"].fillna(0).tolist() + [0.0] * len(extra)
        _grouped_bars(a, names + [f"{short_label(c)} (trial only)" for c in extra], series,
                      xlabel="strategy", legend_size=7)
        a.set_ylabel(label)
        plt.setp(a.get_xticklabels(), rotation=40, ha="right", rotation_mode="anchor", fontsize=7)
    if len(timed):
        x = {s: i for i, s in enumerate(table["strategy"])} | {c: len(table) + i for i, c in enumerate(alone)}
        where = [x[at] if at else x[c] for at, c in zip(timed["at"], timed["candidate"])]
        for chosen, marker, size, label in ((False, "D", 30, "auto's trial (s/epoch)"),
                                            (True, "*", 120, "auto's trial of its pick")):
            pick = (timed["chosen"] == chosen).to_numpy()
            if pick.any():
                ax[0].scatter(np.asarray(where)[pick], timed["trial_s"].to_numpy()[pick], marker=marker, s=size,
                              color="black" if not chosen else "crimson", zorder=3, label=label)
        bars = float(np.nanmax(table[["epoch_s", "predicted_epoch_s", "replanned_epoch_s"]].to_numpy(float), initial=0))
        if bars > 0 and float(timed["trial_s"].max()) > 4 * bars:   # trials far above the bars: both readable
            ax[0].set_yscale("log")
            ax[0].set_ylabel("seconds per epoch (log scale)")
        ax[0].legend(fontsize=7)
    ax[0].set_title("epoch time (median, warm-up excluded)", fontsize=9)
    ax[1].set_title("time waiting for a partner or peer", fontsize=9)
    ax[2].set_title("compute beside memory-bound operators", fontsize=9)
    return save(fig, out_png, title)


def strategy_labels(table: pd.DataFrame) -> list[str]:
    """The compare figure's tick of each run: its strategy, and an auto run's pick beside it
    (``auto →``, then the chosen candidate's label, its options on a line of their own)."""
    choice = table["auto_choice"] if "auto_choice" in table else pd.Series([""] * len(table))
    return [f"{s} → {short_label(c)}" if isinstance(c, str) and c else str(s)
            for s, c in zip(table["strategy"], choice)]


def short_label(label: str) -> str:
    """A candidate's label for a tick: ``frames 1x1x2t (frame_size=4)`` as ``frames 1x1x2t S4``
    (``cb`` the checkpoint blocks, ``mb`` the micro-batches)."""
    for key, short in (("frame_size=", "S"), ("checkpoint_blocks=", "cb"), ("micro_batches=", "mb")):
        label = label.replace(key, short)
    return label.replace(" (", " ").replace(", ", " ").replace(")", "")


def stage_durations(times: pd.DataFrame, out_png: str | Path, title: str = "") -> list[Path]:
    """Wall seconds of each stage (rule), summed over its jobs, and its slowest job
    (:func:`dynagnn.report.runtimes.stage_times`)."""
    by_rule = times.groupby("rule")["seconds"].agg(["sum", "max", "count"]).sort_values("sum")
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(by_rule) + 1.5))
    y = np.arange(len(by_rule))
    ax.barh(y, by_rule["sum"], label="all jobs")
    ax.barh(y, by_rule["max"], height=0.4, label="slowest job")
    ax.set_yticks(y, [f"{r} ({n})" for r, n in zip(by_rule.index, by_rule["count"])])
    ax.set_xlabel("wall seconds (jobs in parentheses)")
    ax.legend(fontsize=8)
    ax.set_title(f"{times['seconds'].sum():.0f} s of jobs in all", fontsize=9)
    return save(fig, out_png, title)


def sampled_data_path(table: pd.DataFrame, out_png: str | Path, title: str = "") -> list[Path]:
    """BGL's data path per strategy (:func:`dynagnn.report.sampled.sampled_table`): epoch time, the
    hit ratio of each cache level, and the MiB read from the store per epoch (rows asked for, and the
    chunks decoded for them)."""
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    names = table["strategy"].tolist()
    ax[0].bar(np.arange(len(names)), table["epoch_s"], color="tab:blue")
    ax[0].set_xticks(np.arange(len(names)), names)
    ax[0].set_ylabel("seconds per epoch (median, warm)")
    _grouped_bars(ax[1], names, {"level 1 (device)": table["l1_hit_ratio"].tolist(),
                                 "level 2 (host)": table["l2_hit_ratio"].tolist()}, xlabel="strategy")
    ax[1].set_ylim(0, 1)
    ax[1].set_ylabel("hit ratio (of the lookups reaching the level)")
    _grouped_bars(ax[2], names, {"rows asked for": (table["store_bytes"] / 2**20).tolist(),
                                 "chunks decoded": (table["store_chunk_bytes"] / 2**20).tolist()}, xlabel="strategy")
    ax[2].set_ylabel("MiB read from the store per epoch")
    for a in ax:
        a.tick_params(axis="x", labelrotation=20)
    ax[0].set_title("epoch time", fontsize=9)
    ax[1].set_title("feature cache hits per level", fontsize=9)
    ax[2].set_title("store reads (cache misses)", fontsize=9)
    return save(fig, out_png, title)
