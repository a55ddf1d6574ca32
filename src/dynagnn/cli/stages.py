"""The workflow's stages before training, each a sub-command: its parser (``add_<stage>``) beside
its command (``cmd_<stage>``): ingest, stats, analyze, profile, schedule; with the Dask client
the stats and analyze stages run on (:func:`_dask`, its flags :func:`_dask_args`)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
from contextlib import ExitStack, contextmanager
from pathlib import Path

from ..analysis.stage import ANALYSES, AnalysisOptions
from ..errors import ConfigError, one_line
from .values import _positive, check_device

log = logging.getLogger("dynagnn")

# Seconds to wait for a Dask scheduler named by --scheduler (Dask's own default is 30).
SCHEDULER_CONNECT_S = 10


def _dask_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=1, help="LocalCluster workers (default 1)")
    p.add_argument("--scheduler", help="address of an existing Dask scheduler (default: "
                                       "$DASK_SCHEDULER_ADDRESS, else a LocalCluster)")
    p.add_argument("--threads-only", action="store_true", help="LocalCluster of threads, not processes")


def _store_title(path) -> str:
    from ..data.store import open_store

    store = open_store(path)
    return f"{store.attrs.get('name', '')}: N={store.num_nodes}, T={store.num_snapshots}"


@contextmanager
def _dask(args):
    """The stage's Dask client (:func:`dynagnn.analysis.parallel.dask_client`). A scheduler named by
    --scheduler (or $DASK_SCHEDULER_ADDRESS) that does not answer within :data:`SCHEDULER_CONNECT_S`
    is a ConfigError, not Dask's traceback after 30 s. With a scheduler, ``args.store`` becomes
    absolute: the workers do not share this process's working directory (a shared file system is
    assumed, as on a cluster)."""
    import dask

    from ..analysis.parallel import dask_client

    address = args.scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS")
    if address:  # the cluster's workers run elsewhere: they read the store by its absolute path
        args.store = Path(args.store).resolve()
    with ExitStack() as stack:
        if address:
            stack.enter_context(dask.config.set({"distributed.comm.timeouts.connect": f"{SCHEDULER_CONNECT_S}s"}))
        try:
            client = stack.enter_context(dask_client(args.workers, args.scheduler, processes=not args.threads_only))
        except (OSError, ValueError) as exc:
            if not address:
                raise
            name = "--scheduler" if args.scheduler else "$DASK_SCHEDULER_ADDRESS"
            raise ConfigError(f"{name} {address}: no Dask scheduler reachable there "
                              f"({one_line(exc)})") from None
        yield client


def add_ingest(sub) -> None:
    ing = sub.add_parser("ingest", help="read (or generate) a dataset into a Zarr snapshot store",
                         description="Read a temporal graph (or generate one), cut it into snapshots and "
                                     "write the snapshot store. The dataset is an entry of config.yaml "
                                     "(--config with --dataset) or given inline as JSON (--spec).")
    src = ing.add_mutually_exclusive_group(required=True)
    src.add_argument("--config", type=Path, help="config.yaml holding the dataset's entry")
    src.add_argument("--spec", help="the dataset's entry as JSON (what the workflow passes)")
    ing.add_argument("--dataset", required=True, help="dataset name (the key under `datasets:`)")
    ing.add_argument("--out", type=Path, help="store path (default: results/<dataset>/store.zarr)")
    ing.add_argument("--threads", type=int, default=1, help="Dask threads for discretising and writing (default 1)")


def cmd_ingest(args) -> None:
    from ..api.runs import load_config, validate
    from ..config import check_dataset, dataset_spec
    from ..data.ingest import ingest

    if args.config:
        spec = dataset_spec(load_config(args.config), args.dataset)
    else:
        try:
            spec = json.loads(args.spec)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--spec is not valid JSON: {exc}") from exc
        spec = validate({"datasets": {args.dataset: spec}})["datasets"][args.dataset]
        check_dataset(args.dataset, spec)
    out = args.out or Path("results") / args.dataset / "store.zarr"
    ingest(spec, out, name=args.dataset, threads=args.threads)


def add_stats(sub) -> None:
    st = sub.add_parser("stats", help="per-snapshot statistics of a store, on Dask, with a figure",
                        description="Per-snapshot active vertices, edges, degree summary and change against "
                                    "the previous snapshot, computed in parallel on a Dask cluster; a "
                                    "Parquet table and a figure of the load variation.")
    st.add_argument("store", type=Path, help="the snapshot store (a .zarr directory)")
    st.add_argument("--out", type=Path, required=True, help="output Parquet file")
    st.add_argument("--figure", type=Path, help="output figure (PNG; a PDF is written beside it)")
    _dask_args(st)


def cmd_stats(args) -> None:
    from ..analysis.stage import stats_stage
    from ..report.figures import load_variation

    with _dask(args) as client:
        df = stats_stage(args.store, args.out, client, progress=not args.quiet)
    if args.figure:
        load_variation(df, args.figure, title=_store_title(args.store))


def add_analyze(sub) -> None:
    an = sub.add_parser("analyze", help="overlap, formats, redundancy, partition, cache and volume tables of a store, on Dask",
                        description="PiPAD's frame overlap and sliced-CSR sizes, ESDG's graph-difference "
                                    "transfer (raw and edge-life smoothed), Sven's temporal redundancy, partition "
                                    "quality, BGL's cache and modelled against counted communication volume, "
                                    "each a Parquet table and a figure in --out-dir.")
    an.add_argument("store", type=Path, help="the snapshot store (a .zarr directory)")
    an.add_argument("--out-dir", type=Path, required=True, help="directory of the tables and figures")
    an.add_argument("--parts", nargs="+", choices=ANALYSES,
                    help="which analyses (default: every one the store allows; redundancy needs an event "
                         "stream, overlap a frame size that fits)")
    d = AnalysisOptions()  # the defaults of every analysis flag
    an.add_argument("--frame-sizes", nargs="+", type=int, default=list(d.frame_sizes), help="snapshots per frame (PiPAD)")
    an.add_argument("--edge-lives", nargs="+", type=int, default=list(d.edge_lives), help="edge lives for the format table")
    an.add_argument("--batch-sizes", nargs="+", type=int, default=list(d.batch_sizes), help="events per batch (Sven)")
    an.add_argument("--neighbors", type=int, default=d.neighbors, help="k most recent neighbours sampled per event")
    an.add_argument("--partition-workers", nargs="+", type=int, default=list(d.partition_workers),
                    help="worker counts for the partitioners")
    an.add_argument("--cache-batch-size", type=int, default=d.cache_batch_size,
                    help="training nodes per mini-batch (BGL cache)")
    an.add_argument("--cache-fanouts", nargs="+", type=int, default=list(d.cache_fanouts),
                    help="neighbours sampled per hop")
    an.add_argument("--cache-fractions", nargs="+", type=float, default=list(d.cache_fractions),
                    help="cache sizes as fractions of the vertices")
    an.add_argument("--cache-epochs", type=int, default=d.cache_epochs,
                    help="epochs the caches run through (they persist: the first warms them)")
    an.add_argument("--volume-layers", type=int, default=d.volume_layers, help="GCN-RNN layers of the volume model")
    an.add_argument("--volume-hidden", type=int, default=d.volume_hidden, help="hidden width of the volume model")
    an.add_argument("--volume-window", type=int, default=d.volume_window, help="BLAD snapshot-group window l")
    an.add_argument("--volume-partitioners", nargs="+", default=list(d.volume_partitioners),
                    help="vertex partitioners whose volume is counted")
    an.add_argument("--volume-batch-size", type=int, default=d.volume_batch_size, help="events per batch (Sven volumes)")
    an.add_argument("--volume-memory-dim", type=int, default=d.volume_memory_dim,
                    help="node-memory width d_mem (Sven volumes)")
    _dask_args(an)


def cmd_analyze(args) -> None:
    from ..analysis.stage import analyze_stage
    from ..report.figures import ANALYSIS_FIGURES

    options = AnalysisOptions(**{f.name: getattr(args, f.name) for f in dataclasses.fields(AnalysisOptions)})
    title = _store_title(args.store)
    with _dask(args) as client:
        analyze_stage(args.store, args.out_dir, client, args.parts, options, progress=not args.quiet,
                      on_table=lambda part, df: ANALYSIS_FIGURES[part](df, args.out_dir / f"{part}.png", title))


def add_profile(sub) -> None:
    pr = sub.add_parser("profile", help="time the training operators on a device and fit the cost model",
                        description="Micro-benchmark the operators of the GCN-RNN models (sparse aggregation, "
                                    "dense update, LSTM/GRU cells, EvolveGCN's weight step, element-wise ops, "
                                    "sigmoid, tanh), forward and backward, over a grid of vertex counts, edge "
                                    "counts and widths; fit one linear model per operator and direction. Writes "
                                    "profile.parquet, "
                                    "predictor.json (with each operator's held-out mape) and "
                                    "predicted_vs_measured.png in --out-dir.")
    pr.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    pr.add_argument("--out-dir", type=Path, required=True, help="directory of the outputs (results/cost/<device>)")
    pr.add_argument("--grid", default="auto",
                    help="auto (default): a small grid spanning the --stores' snapshot shapes and the models' "
                         "widths; quick: a tiny fixed grid (tests); medium: the benchmark's grid")
    pr.add_argument("--stores", nargs="+", type=Path, default=[], help="snapshot stores whose shapes the grid spans")
    pr.add_argument("--models", nargs="+", help="models whose operators are profiled (default: every operator)")
    pr.add_argument("--hidden", nargs="+", type=int, default=[32], help="hidden widths of the models (default 32)")
    pr.add_argument("--widths", nargs="+", type=_positive(int),
                    help="feature widths the grid spans (default: every width the models run at)")
    pr.add_argument("--threads", type=int, help="torch intra-op threads while timing (default: torch's choice)")
    pr.add_argument("--repeats", type=int, default=5, help="timed samples per shape; the median is kept (default 5)")
    pr.add_argument("--seed", type=int, default=0, help="seed of the random graphs and the held-out split")


def cmd_profile(args) -> None:
    from ..cost.stage import profile_stage
    from ..report.figures import predicted_vs_measured

    check_device(args.device)
    _, pred, held = profile_stage(args.out_dir, device=args.device, grid=args.grid, stores=args.stores,
                                  widths=args.widths, models=args.models, hidden=args.hidden, threads=args.threads,
                                  repeats=args.repeats, seed=args.seed, progress=not args.quiet)
    predicted_vs_measured(held, args.out_dir / "predicted_vs_measured.png",
                          title=f"cost model on {pred.device}: held-out shapes")
    worst = max((m.mape for m in pred.models.values() if m.mape == m.mape), default=float("nan"))
    log.info("wrote %s (worst held-out mape %.3f)", args.out_dir / "predictor.json", worst)


def add_schedule(sub) -> None:
    sc = sub.add_parser("schedule", help="plan snapshot groups onto workers and processes from predicted costs",
                        description="Predict every snapshot's forward and backward time for a model from the "
                                    "cost model, then plan BLAD's two levels: snapshot groups (of --window "
                                    "snapshots) to --workers workers, and each worker's groups split between "
                                    "its two co-located processes; the even split is kept in the plan as the "
                                    "baseline. Writes the plan (JSON) and a figure of the planned loads "
                                    "(plan-<workers>.png beside it unless --figure says otherwise).")
    sc.add_argument("store", type=Path, help="the snapshot store (a .zarr directory)")
    sc.add_argument("--predictor", type=Path, required=True, help="the profile stage's predictor.json")
    sc.add_argument("--model", required=True, help="a model registered in dynagnn.models.MODELS (e.g. tgcn)")
    sc.add_argument("--workers", type=int, required=True, help="workers (devices) to plan for")
    sc.add_argument("--out", type=Path, help="the plan (JSON); required unless --check")
    sc.add_argument("--window", type=int, default=4, help="snapshots per group, l (the training window; default 4)")
    sc.add_argument("--hidden", type=int, default=32, help="the model's hidden width (default 32)")
    sc.add_argument("--stats", type=Path, help="the stats stage's table (edges per snapshot; default: from the store)")
    sc.add_argument("--overlap", type=Path, help="the analysis stage's overlap.parquet: adds PiPAD's per-frame tuner")
    sc.add_argument("--balance", choices=("dp", "eq2", "even"), default="dp",
                    help="intra-worker split: dp (exact programme, default), eq2 (printed Eq. 2), even")
    sc.add_argument("--memory-gb", type=_positive(float), default=8.0, help="device memory for one tuner partition (default 8)")
    sc.add_argument("--pipeline-depth", type=_positive(int), default=4,
                    help="groups p1's queue holds (default 4: a shorter fill and drain than BLAD's 2, at the "
                         "price of two more groups' activations held)")
    sc.add_argument("--figure", type=Path, help="the figure (PNG; default: plan-<workers>.png beside --out)")
    sc.add_argument("--windows", choices=("train", "all"), default="train",
                    help="which groups to plan: train (default: the training windows of --task, what the group "
                         "strategies train) or all (every window of the store)")
    sc.add_argument("--task", choices=("auto", "link", "classify", "regress"), default="auto",
                    help="the training task whose training windows are planned (default auto, as train)")
    sc.add_argument("--check", type=Path, metavar="PLAN",
                    help="instead of planning, load PLAN, check it is for this store, model and worker count, "
                         "and print its predicted figures")


def cmd_schedule(args) -> None:
    from ..report.figures import plan_loads
    from ..schedule.stage import check_plan, schedule_stage

    if args.check is not None:
        plan = check_plan(args.store, args.check, model=args.model, workers=args.workers)
        print(json.dumps(plan.summary(), indent=1))
        return
    if args.out is None:
        raise ConfigError("schedule: give --out (the plan to write) or --check PLAN")
    groups = tail = transfers = None
    if args.windows == "train":
        from ..api import run_costs
        from ..data.store import open_store

        groups, tail, transfers = run_costs(open_store(args.store), args.model, args.hidden, args.window, args.task)
    plan = schedule_stage(args.store, args.predictor, model=args.model, workers=args.workers, window=args.window,
                          hidden=args.hidden, stats=args.stats, overlap=args.overlap, balance_method=args.balance,
                          memory_bytes=args.memory_gb * 2**30, groups=groups, tail=tail, transfers=transfers,
                          depth=args.pipeline_depth)
    s = plan.summary()
    log.info("%s/%s on %d workers: predicted epoch %.4gs (even split %.4gs), worker imbalance max/mean %.3f "
             "(even %.3f), synchronisation %.1f%% (even %.1f%%)", plan.dataset, plan.model, plan.num_workers,
             s["epoch_time"], s["baseline_epoch_time"], s["imbalance"], s["baseline_imbalance"],
             100 * s["sync_fraction"], 100 * s["baseline_sync_fraction"])
    if plan.operators is not None:
        log.info("operator order of each worker's two processes: compute/memory overlap %.1f%% of the time "
                 "(both aggregation-first: %.1f%%)", 100 * s["overlap_fraction"], 100 * s["default_overlap_fraction"])
    figure = args.figure or args.out.with_name(f"plan-{args.workers}.png")
    plan_loads(plan, figure, title=f"{plan.dataset}: {plan.model}, {plan.num_workers} workers, "
                                   f"groups of {plan.group_len}")
    plan.save(args.out)  # last: the plan's presence means the stage (figure included) is complete
