"""The sub-commands that read what the stages wrote: compare, compare-sampled, compare-sven,
runtimes, study and claims (runs gathered into a table and a figure, :func:`_read_runs`,
:func:`_table_and_figure`), info (a store's summary) and check-config; each parser
(``add_<command>``) beside its command (``cmd_<command>``)."""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from ..errors import ConfigError, InputError

log = logging.getLogger("dynagnn")


def _table_and_figure(parser: argparse.ArgumentParser) -> None:
    """The outputs of a sub-command that gathers runs into a table and draws it."""
    parser.add_argument("--out", type=Path, required=True, help="output Parquet table")
    parser.add_argument("--figure", type=Path, required=True, help="output figure (PNG; a PDF is written beside it)")


def _read_runs(items: list[str], names: tuple[str, ...], command: str) -> dict[str, tuple]:
    """STRATEGY=DIR arguments -> {strategy: (the DataFrame of each of ``names`` in DIR)}."""
    import pandas as pd

    runs = {}
    for item in items:
        strategy, sep, directory = item.partition("=")
        if not sep or not strategy:
            raise ConfigError(f"{command}: expected STRATEGY=DIR, got {item!r}")
        frames = []
        for name in names:
            path = Path(directory) / name
            if not path.is_file():
                raise InputError(f"no {name} here: not a finished training run", Path(directory))
            frames.append(pd.read_parquet(path))
        runs[strategy] = tuple(frames)
    return runs


def add_compare(sub) -> None:
    cmp_ = sub.add_parser("compare", help="strategies side by side against the plan's predictions (BLAD Figs. 12, 15, 16)",
                          description="Gather training runs of one dataset, model and worker count: the median "
                                      "epoch time, the synchronisation-wait share and the operator-overlap share "
                                      "of each, beside what the schedule plan predicted for the group strategies. "
                                      "Writes a Parquet table and a figure.")
    cmp_.add_argument("runs", nargs="+", metavar="STRATEGY=DIR",
                      help="a training run's strategy and output directory (metrics.parquet, timings.parquet)")
    cmp_.add_argument("--plan", type=Path, help="the plan the group strategies ran (their predictions)")
    _table_and_figure(cmp_)


def cmd_compare(args) -> None:
    from ..report.figures import strategy_comparison
    from ..report.strategies import auto_trials, check_comparable, run_identity, strategy_table
    from ..schedule.plan import SchedulePlan
    from ..tables import write_table

    runs = _read_runs(args.runs, ("metrics.parquet", "timings.parquet"), "compare")
    plan = SchedulePlan.load(args.plan) if args.plan else None
    dirs = dict(item.split("=", 1) for item in args.runs)
    check_comparable({name: run_identity(Path(dirs[name]) / "metrics.parquet") for name in runs}, plan)
    autos = {name: json.loads((Path(dirs[name]) / "auto.json").read_text()) for name in runs
             if (Path(dirs[name]) / "auto.json").is_file()}   # an auto run's candidates and trials
    table = strategy_table(plan, runs, autos)
    title = f"{plan.dataset}: {plan.model}, {plan.num_workers} workers" if plan else ""
    strategy_comparison(table, args.figure, title, auto_trials(table, autos))
    write_table(table, args.out, (plan.store_checksum if plan else None) or "")
    for r in table.itertuples():
        log.info("%-10s epoch %.3fs (plan %.3gs, re-planned %.3gs), sync wait %.1f%% (plan %.1f%%), overlap %.1f%% "
                 "(plan %.1f%%)", r.strategy, r.epoch_s, r.predicted_epoch_s, r.replanned_epoch_s,
                 100 * r.sync_share, 100 * r.predicted_sync_share,
                 100 * r.overlap_share, 100 * r.predicted_overlap_share)


def add_compare_sampled(sub) -> None:
    cs = sub.add_parser("compare-sampled", help="sampled training's data path side by side (BGL): epoch time, "
                                                "hit ratio per cache level, store bytes per epoch",
                        description="Gather sampled training runs (no cache, static cache, BGL's FIFO + proximity "
                                    "order, ...) of one dataset and model: the median epoch time, the hit ratio of "
                                    "each cache level and the bytes read from the store per epoch (rows asked "
                                    "for, chunks decoded). Writes a Parquet table and a figure.")
    cs.add_argument("runs", nargs="+", metavar="STRATEGY=DIR", help="a sampled training run's strategy and output "
                                                                   "directory (metrics.parquet)")
    _table_and_figure(cs)


def cmd_compare_sampled(args) -> None:
    from ..report.figures import sampled_data_path
    from ..report.sampled import sampled_table
    from ..tables import write_table

    table = sampled_table({k: v[0] for k, v in _read_runs(args.runs, ("metrics.parquet",), "compare-sampled").items()})
    sampled_data_path(table, args.figure, "sampled training: the feature data path")
    write_table(table, args.out, "")
    for r in table.itertuples():
        log.info("%-16s epoch %.2fs, hit L1 %.3f L2 %.3f, store %.1f MiB rows (%.1f MiB chunks) per epoch", r.strategy,
                 r.epoch_s, r.l1_hit_ratio, r.l2_hit_ratio, r.store_bytes / 2**20, r.store_chunk_bytes / 2**20)


def add_compare_sven(sub) -> None:
    sv = sub.add_parser("compare-sven", help="Sven's communication side by side: bytes per batch of tgnn, "
                                             "tgnn_depcomm, tgnn_depcache; per-worker bytes per partitioner; epoch time",
                        description="Gather tgnn training runs (Sven and its DepComm and DepCache baselines, or one "
                                    "strategy with different memory partitioners) of one dataset and model: the bytes "
                                    "each worker sent per training batch (rows fetched, rows written back, "
                                    "bookkeeping, all-reduce) and the median epoch time. Writes a Parquet table and "
                                    "a figure.")
    sv.add_argument("runs", nargs="+", metavar="LABEL=DIR", help="a tgnn training run's label and output directory "
                                                                "(metrics.parquet, comm.parquet)")
    _table_and_figure(sv)


def cmd_compare_sven(args) -> None:
    from ..report.sven import sven_communication, sven_table
    from ..tables import write_table

    table = sven_table(_read_runs(args.runs, ("metrics.parquet", "comm.parquet"), "compare-sven"))
    sven_communication(table, args.figure, "Sven: communication per batch and epoch time")
    write_table(table, args.out, "")
    for r in table.itertuples():
        log.info("%-20s worker %d: %.1f KiB dispatch, %.1f KiB aggregation per batch; epoch %.2fs", r.run, r.worker,
                 r.dispatch / 2**10, r.aggregation / 2**10, r.epoch_s)


def add_runtimes(sub) -> None:
    rt = sub.add_parser("runtimes", help="how long each workflow stage took, from Snakemake's benchmark files",
                        description="Read the benchmark files a workflow run wrote (<results>/benchmarks/<rule>/"
                                    "<job>.tsv): one row per job with its wall seconds, CPU seconds and peak "
                                    "memory, and a figure of the seconds per stage.")
    rt.add_argument("bench_dir", type=Path, help="the run's benchmark folder (results/benchmarks)")
    _table_and_figure(rt)


def cmd_runtimes(args) -> None:
    from ..report.figures import stage_durations
    from ..report.runtimes import stage_times
    from ..tables import write_table

    times = stage_times(args.bench_dir)
    stage_durations(times, args.figure, "time per workflow stage")
    write_table(times, args.out, "")
    for rule, seconds in times.groupby("rule")["seconds"].sum().sort_values(ascending=False).items():
        log.info("%-12s %8.1f s", rule, seconds)


def add_seeds(sub) -> None:
    sd = sub.add_parser("seeds", help="a run's seeds gathered: each seed's best epoch and the mean ± std of every "
                                      "metric", description="Read RUN_DIR/seed-<k>/metrics.parquet (the runs of "
                        "`train --seeds`, or the workflow's per-seed jobs of a run with seeds) and write "
                        "RUN_DIR/seeds.parquet (each seed's best epoch: its loss, validation and test metrics) and "
                        "RUN_DIR/summary.parquet (metric, mean, std over the seeds, the population's as DyGLib "
                        "reports it, n, and the evaluation negatives).")
    sd.add_argument("run_dir", type=Path, help="the folder holding seed-<k>/")
    sd.add_argument("--seeds", type=int, nargs="+", metavar="K", help="these seeds (default: every seed-<k> there)")


def cmd_seeds(args) -> None:
    from ..api import gather_seeds

    _, summary = gather_seeds(args.run_dir, args.seeds)
    for r in summary.itertuples():
        if r.metric.startswith("test_"):
            log.info("%-28s %.4f ± %.4f (%d seeds)", r.metric, r.mean, r.std, r.n)


def add_study(sub) -> None:
    st = sub.add_parser("study", help="training runs side by side: epoch time and speed-up over the first, peak "
                                      "memory, accuracy (PiPAD's ladder, ESDG's checkpoint blocks, BLAD's accuracy)",
                        description="Gather training runs, the baseline first: the median epoch time and the speed-up "
                                    "over the baseline, peak memory, the transfer share, and the best validation "
                                    "metric with the test metric at that epoch. Writes a Parquet table and a figure.")
    st.add_argument("runs", nargs="+", metavar="NAME=DIR", help="a name for the run and its output directory "
                                                               "(metrics.parquet, timings.parquet)")
    _table_and_figure(st)
    st.add_argument("--title", default="", help="the figure's title")


def cmd_study(args) -> None:
    from ..report.paper_figures import runs_side_by_side
    from ..report.studies import run_config, runs_table
    from ..tables import write_table

    runs = _read_runs(args.runs, ("metrics.parquet", "timings.parquet"), "study")
    dirs = dict(item.split("=", 1) for item in args.runs)
    table = runs_table({name: (m, t, str(cfg.get("strategy", "")), str(cfg.get("device", "cpu")))
                        for name, (m, t) in runs.items()
                        for cfg in [run_config(Path(dirs[name]) / "metrics.parquet")]})
    runs_side_by_side(table, args.figure, args.title)
    write_table(table, args.out, "")
    for r in table.itertuples():
        log.info("%-14s epoch %.3fs (%.2fx), peak %.0f MiB, transfer %.1f%%, best %s %.4f", r.run, r.epoch_s,
                 r.speedup, r.peak_memory_mb, 100 * r.transfer_share, r.val_metric, r.best_val)


def add_claims(sub) -> None:
    cl = sub.add_parser("claims", help="the papers' headline claims beside ours, from the result tables",
                        description="One row per headline claim of the five papers and result table that checks "
                                    "it: the paper's number, ours, their ratio and why they may differ; a claim "
                                    "none of the tables checks says 'not run'. Writes Parquet and an HTML table.")
    cl.add_argument("tables", nargs="*", type=Path, help="result tables under --results, each of a kind some claim reads (another is refused)")
    cl.add_argument("--results", type=Path, required=True, help="the results folder the tables are under")
    cl.add_argument("--out", type=Path, required=True, help="output Parquet table")
    cl.add_argument("--html", type=Path, required=True, help="output HTML table")
    cl.add_argument("--gpu-check", type=Path, default=None,
                    help="gpu-check.json of `make gpu-check`: the claims that need a GPU take rows from it too "
                         "(default: <results>/gpu-check/gpu-check.json where it exists)")


def cmd_claims(args) -> None:
    from ..atomic import write_all
    from ..report.claims import claims_html, claims_table
    from ..tables import write_parquet

    gpu = args.gpu_check
    if gpu is None and (args.results / "gpu-check" / "gpu-check.json").is_file():
        gpu = args.results / "gpu-check" / "gpu-check.json"
    table = claims_table(args.tables, args.results, gpu_check=gpu)
    page = claims_html(table)
    write_all({args.out: lambda tmp: write_parquet(table, tmp, ""),  # both or neither
               args.html: lambda tmp: tmp.write_text(page, encoding="utf-8")})
    for r in table.itertuples():
        log.info("%-16s %-70.70s paper %-8.3g ours %-8.3g %s", r.paper, r.claim, r.paper_value, r.ours, r.status)


def add_info(sub) -> None:
    info = sub.add_parser("info", help="summarise a snapshot store", description="Print a store's attributes and arrays.")
    info.add_argument("store", type=Path)
    how = info.add_mutually_exclusive_group()
    how.add_argument("--json", action="store_true", help="print the attributes as JSON")
    how.add_argument("--verify", action="store_true",
                     help="read the whole store and check every array against the checksums recorded at "
                          "ingest; print OK, or one error line naming the damaged array and exit 2")


def cmd_info(args) -> None:
    from ..data.store import open_store

    store = open_store(args.store)
    if args.verify:
        checked = store.verify()
        print(f"{store.path}: OK, its {len(store.array_names)} arrays ({checked} bytes) match the checksums "
              "recorded at ingest")
        return
    if args.json:
        print(json.dumps(store.attrs, indent=2, sort_keys=True, default=str))
        return
    a = store.attrs
    print(f"{store.path}: {a.get('name')} (schema {a['schema_version']}, checksum {a['checksum'][:12]})")
    print(f"  nodes {store.num_nodes}, snapshots {store.num_snapshots}, edges {int(store.offsets[-1])}, "
          f"events {a.get('num_events', 0)}, empty snapshots {a.get('empty_snapshots', 0)}")
    print(f"  directed {store.directed}, time unit {a.get('time_unit')}, times {store.times[:1]}..{store.times[-1:]}")
    for name in ("events/features", "features/x", "labels/y", "nodes/id"):
        if store.has(name):
            arr = store.root[name]
            print(f"  {name}: {arr.dtype} {arr.shape}")


def add_check_config(sub) -> None:
    chk = sub.add_parser("check-config", help="validate a config file and print it with defaults filled in")
    chk.add_argument("config", type=Path)


def cmd_check_config(args) -> None:
    from ..api.runs import load_config

    import yaml
    print(yaml.safe_dump(load_config(args.config), sort_keys=False), end="")
