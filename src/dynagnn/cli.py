"""Command line: one sub-command per stage, each a thin front over the library.

    python -m dynagnn ingest  --config config.yaml --dataset collegemsg --out results/collegemsg/store.zarr
    python -m dynagnn stats   results/collegemsg/store.zarr --out results/collegemsg/stats.parquet
    python -m dynagnn profile --device cpu --out-dir results/cost/cpu --stores results/collegemsg/store.zarr
    python -m dynagnn schedule results/collegemsg/store.zarr --predictor results/cost/cpu/predictor.json \
                              --model tgcn --workers 2 --out results/collegemsg/tgcn/plan-2.json
    python -m dynagnn train   results/collegemsg/store.zarr --out-dir results/collegemsg/tgcn/sequential --model tgcn
    python -m dynagnn info    results/collegemsg/store.zarr

Errors in the input (a missing file, a malformed row, a config typo, a bad flag, a store of another
version) print one line naming what is wrong and exit with status 2; nothing half-written is left
behind. A flag that stands for a config key (:data:`FLAG_KEYS`) is checked against that key's schema,
the check config.yaml gets, before the stage starts; so are the output paths (:data:`OUTPUTS`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

from . import __version__
from .analysis.stage import ANALYSES, AnalysisOptions
from .atomic import unwritable_reason
from .errors import ConfigError, DynagnnError, one_line

log = logging.getLogger("dynagnn")

# Seconds to wait for a Dask scheduler named by --scheduler (Dask's own default is 30).
SCHEDULER_CONNECT_S = 10


class _Parser(argparse.ArgumentParser):
    """argparse's errors on one line, as dynagnn's own (argparse prints the usage, then the error),
    and an unknown flag blamed on the stage's parser, whose --help lists the flags it knows."""

    stages: dict[str, argparse.ArgumentParser] = {}

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    def parse_args(self, args=None, namespace=None):
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            self.stages.get(getattr(parsed, "stage", None), self).error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed


def _positive(kind):
    """An argparse type: a ``kind`` (int, float) above 0, for flags that no config key stands for."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {kind.__name__} value: {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text}: must be greater than 0")
        return value

    parse.__name__ = f"positive {kind.__name__}"
    return parse


def _table_and_figure(parser: argparse.ArgumentParser) -> None:
    """The outputs of a sub-command that gathers runs into a table and draws it."""
    parser.add_argument("--out", type=Path, required=True, help="output Parquet table")
    parser.add_argument("--figure", type=Path, required=True, help="output figure (PNG; a PDF is written beside it)")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="dynagnn",
        description="Fast training of dynamic graph neural networks: the stages of the dynagnn workflow. "
                    "Snakemake runs them for you (`snakemake --cores N`); each also runs alone.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run `python -m dynagnn <stage> --help` for a stage's options.")
    p.add_argument("--version", action="version", version=f"dynagnn {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    p.add_argument("-q", "--quiet", action="store_true", help="log warnings only, no progress bars")
    sub = p.add_subparsers(dest="stage", required=True, metavar="stage")
    p.stages = sub.choices

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

    st = sub.add_parser("stats", help="per-snapshot statistics of a store, on Dask, with a figure",
                        description="Per-snapshot active vertices, edges, degree summary and change against "
                                    "the previous snapshot, computed in parallel on a Dask cluster; a "
                                    "Parquet table and a figure of the load variation.")
    st.add_argument("store", type=Path, help="the snapshot store (a .zarr directory)")
    st.add_argument("--out", type=Path, required=True, help="output Parquet file")
    st.add_argument("--figure", type=Path, help="output figure (PNG; a PDF is written beside it)")
    _dask_args(st)

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

    tr = sub.add_parser("train", help="train a dynamic GNN on a store with one strategy, on one or many workers",
                        description="Train one model with one strategy on a snapshot store: steps of "
                                    "--batch-windows windows of --window snapshots, Adam, evaluation on "
                                    "held-out time steps, early stopping. Writes metrics.parquet (per epoch), "
                                    "timings.parquet (per epoch, worker and phase), comm.parquet (bytes per "
                                    "epoch, worker and collective), model.pt (best epoch) and training.png in "
                                    "--out-dir. Strategies: sequential (1 worker), vertex (vertices split by "
                                    "METIS or hash, halo exchange), snapshot (ESDG: a step's snapshots split, "
                                    "two all-to-alls per layer). --workers N spawns N local processes (gloo on "
                                    "CPU, nccl on GPU); under torchrun the process joins torchrun's group "
                                    "instead (torchrun --nnodes M --nproc-per-node P -m dynagnn train ...). "
                                    "Options come from --options (JSON, what the workflow passes), then "
                                    "from the flags below, which win.")
    tr.add_argument("store", type=Path, help="the snapshot store (a .zarr directory)")
    tr.add_argument("--out-dir", type=Path, required=True, help="directory of the outputs")
    tr.add_argument("--model", help="a model of dynagnn.models.ALL_MODELS: tgcn (default), evolvegcn_o, evolvegcn_h, "
                                      "wdgcn, mpnn_lstm, gcrn, cdgcn, tmgcn; on a store with events tgn, jodie, "
                                      "apan (with --strategy events)")
    tr.add_argument("--strategy", help="sequential (default), vertex or snapshot")
    tr.add_argument("--workers", type=int, help="worker processes (default 1; ignored under torchrun, "
                                                 "whose WORLD_SIZE wins)")
    tr.add_argument("--batch-windows", type=int, help="windows per optimiser step, B (default 1)")
    tr.add_argument("--partitioner", help="vertex strategy: vertex split, metis (default) or hash")
    tr.add_argument("--options", help="training options as a JSON object (keys of config.yaml's train section)")
    tr.add_argument("--task", help="auto (default: classify with integer labels, regress with float labels, else "
                                   "link), link, classify (integer class labels) or regress")
    tr.add_argument("--epochs", type=int, help="maximum epochs (default 20)")
    tr.add_argument("--window", type=int, help="snapshots per window, l (default 4)")
    tr.add_argument("--hidden", type=int, help="embedding width (default 32)")
    tr.add_argument("--lr", type=float, help="Adam learning rate (default 0.01)")
    tr.add_argument("--checkpoint-blocks", type=int, help="ESDG time blocks per window; 1 = no checkpointing")
    tr.add_argument("--transfer", help="snapshot transfer: full (default) or diff (ESDG graph difference)")
    tr.add_argument("--device", help="cpu (default), cuda or cuda:N")
    tr.add_argument("--threads", type=int, help="torch intra-op threads per worker process (default: one "
                                                 "process: torch's choice; several: the cores divided among them)")
    tr.add_argument("--seed", type=int, help="seed of initial weights and negative samples (default 0)")
    tr.add_argument("--graph-input", help="tgcn: xh (default: its gates convolve [X_t ‖ H_{t-1}]) or x (only X_t, "
                                          "as PyG Temporal's TGCN; frames can reuse Â_t X_t)")
    tr.add_argument("--frame-size", type=int, help="frames strategy (PiPAD): snapshots per frame, S (default: "
                                                    "tuned after a profiling epoch)")
    tr.add_argument("--frame-reuse", help="frames strategy: on (default) or off, the reuse of the first "
                                          "aggregation Â_t X_t across frames and epochs")
    tr.add_argument("--pipeline", help="auto (default: on for frames, off for sequential), on or off: prepare "
                                       "the next frame or snapshot while this one computes (PiPAD; sequential "
                                       "with it is PiPAD's -A)")
    tr.add_argument("--event-batch", type=int, help="event models (tgn, jodie, apan): events per batch (default 200)")
    tr.add_argument("--memory-dim", type=int, help="event models: node-memory width (default 100)")
    tr.add_argument("--neighbors", type=int, help="event models: most recent neighbours per endpoint (default 10)")
    tr.add_argument("--memory-partitioner", help="tgnn strategies (Sven): reflexbicut (default), hash or range")
    tr.add_argument("--micro-batches", type=_count_or_word, help="tgnn strategies: micro-batches per worker and "
                                                                 "batch, a number (default 1) or adaptive")
    tr.add_argument("--stale-allreduce", action="store_const", const=True,
                    help="tgnn strategies: one-step-stale gradient all-reduce (default off)")
    tr.add_argument("--fanouts", type=int, nargs="+", help="sampled strategies (BGL): neighbours per layer, the "
                                                          "seeds' first (default 15 10 5)")
    tr.add_argument("--batch-size", type=int, help="sampled strategies: seeds per mini-batch (default 1000)")
    tr.add_argument("--cache-policy", help="sampled: fifo (default), static or none")
    tr.add_argument("--order", help="sampled: proximity (default, BGL's BFS order) or random")
    tr.add_argument("--samplers", type=int, help="sampled: sampler processes (default 1; 0 = in the fetch thread)")
    tr.add_argument("--resume", type=Path, help="start from this model.pt (same model, task, width, data)")

    cmp_ = sub.add_parser("compare", help="strategies side by side against the plan's predictions (BLAD Figs. 12, 15, 16)",
                          description="Gather training runs of one dataset, model and worker count: the median "
                                      "epoch time, the synchronisation-wait share and the operator-overlap share "
                                      "of each, beside what the schedule plan predicted for the group strategies. "
                                      "Writes a Parquet table and a figure.")
    cmp_.add_argument("runs", nargs="+", metavar="STRATEGY=DIR",
                      help="a training run's strategy and output directory (metrics.parquet, timings.parquet)")
    cmp_.add_argument("--plan", type=Path, help="the plan the group strategies ran (their predictions)")
    _table_and_figure(cmp_)

    cs = sub.add_parser("compare-sampled", help="sampled training's data path side by side (BGL): epoch time, "
                                                "hit ratio per cache level, store bytes per epoch",
                        description="Gather sampled training runs (no cache, static cache, BGL's FIFO + proximity "
                                    "order, ...) of one dataset and model: the median epoch time, the hit ratio of "
                                    "each cache level and the bytes read from the store per epoch (rows asked "
                                    "for, chunks decoded). Writes a Parquet table and a figure.")
    cs.add_argument("runs", nargs="+", metavar="STRATEGY=DIR", help="a sampled training run's strategy and output "
                                                                   "directory (metrics.parquet)")
    _table_and_figure(cs)

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

    rt = sub.add_parser("runtimes", help="how long each workflow stage took, from Snakemake's benchmark files",
                        description="Read the benchmark files a workflow run wrote (<results>/benchmarks/<rule>/"
                                    "<job>.tsv): one row per job with its wall seconds, CPU seconds and peak "
                                    "memory, and a figure of the seconds per stage.")
    rt.add_argument("bench_dir", type=Path, help="the run's benchmark folder (results/benchmarks)")
    _table_and_figure(rt)

    st = sub.add_parser("study", help="training runs side by side: epoch time and speed-up over the first, peak "
                                      "memory, accuracy (PiPAD's ladder, ESDG's checkpoint blocks, BLAD's accuracy)",
                        description="Gather training runs, the baseline first: the median epoch time and the speed-up "
                                    "over the baseline, peak memory, the transfer share, and the best validation "
                                    "metric with the test metric at that epoch. Writes a Parquet table and a figure.")
    st.add_argument("runs", nargs="+", metavar="NAME=DIR", help="a name for the run and its output directory "
                                                               "(metrics.parquet, timings.parquet)")
    _table_and_figure(st)
    st.add_argument("--title", default="", help="the figure's title")

    cl = sub.add_parser("claims", help="the papers' headline claims beside ours, from the result tables",
                        description="One row per headline claim of the five papers and result table that checks "
                                    "it: the paper's number, ours, their ratio and why they may differ; a claim "
                                    "none of the tables checks says 'not run'. Writes Parquet and an HTML table.")
    cl.add_argument("tables", nargs="*", type=Path, help="result tables under --results (others are left out)")
    cl.add_argument("--results", type=Path, required=True, help="the results folder the tables are under")
    cl.add_argument("--out", type=Path, required=True, help="output Parquet table")
    cl.add_argument("--html", type=Path, required=True, help="output HTML table")

    info = sub.add_parser("info", help="summarise a snapshot store", description="Print a store's attributes and arrays.")
    info.add_argument("store", type=Path)
    how = info.add_mutually_exclusive_group()
    how.add_argument("--json", action="store_true", help="print the attributes as JSON")
    how.add_argument("--verify", action="store_true",
                     help="read the whole store and check every array against the checksums recorded at "
                          "ingest; print OK, or one error line naming the damaged array and exit 2")

    chk = sub.add_parser("check-config", help="validate a config file and print it with defaults filled in")
    chk.add_argument("config", type=Path)
    return p


def _dask_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=1, help="LocalCluster workers (default 1)")
    p.add_argument("--scheduler", help="address of an existing Dask scheduler (default: "
                                       "$DASK_SCHEDULER_ADDRESS, else a LocalCluster)")
    p.add_argument("--threads-only", action="store_true", help="LocalCluster of threads, not processes")


def _setup_logging(verbose: bool, quiet: bool) -> None:
    """dynagnn's own messages at the chosen level; other libraries' (Dask's chatter) at WARNING."""
    level = logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(lambda r: r.name.startswith("dynagnn") or r.levelno >= logging.WARNING)
    logging.basicConfig(level=level, handlers=[handler], force=True)


def cmd_ingest(args) -> None:
    from .config import check_dataset, dataset_spec, load_config, validate
    from .data.ingest import ingest

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


def _store_title(path) -> str:
    from .data.store import open_store

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

    from .analysis.parallel import dask_client

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


def cmd_stats(args) -> None:
    from .analysis.stage import stats_stage
    from .report.figures import load_variation

    with _dask(args) as client:
        df = stats_stage(args.store, args.out, client, progress=not args.quiet)
    if args.figure:
        load_variation(df, args.figure, title=_store_title(args.store))


def cmd_analyze(args) -> None:
    from .analysis.stage import analyze_stage
    from .report.figures import ANALYSIS_FIGURES

    options = AnalysisOptions(**{f.name: getattr(args, f.name) for f in dataclasses.fields(AnalysisOptions)})
    title = _store_title(args.store)
    with _dask(args) as client:
        analyze_stage(args.store, args.out_dir, client, args.parts, options, progress=not args.quiet,
                      on_table=lambda part, df: ANALYSIS_FIGURES[part](df, args.out_dir / f"{part}.png", title))


def check_device(device: str, name: str = "--device") -> None:
    """A CUDA device that this machine has (the schema checked the spelling: cpu, cuda or cuda:N);
    else torch fails later with a traceback, or after the store was read."""
    if not device.startswith("cuda"):
        return
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = int(device.partition(":")[2] or 0)
    if index >= count:
        sees = f"{count} CUDA device(s)" if count else f"no CUDA device (torch {torch.__version__}); use cpu"
        raise ConfigError(f"{name} {device}: this machine has {sees}")


def cmd_profile(args) -> None:
    from .cost.stage import profile_stage
    from .report.figures import predicted_vs_measured

    check_device(args.device)
    _, pred, held = profile_stage(args.out_dir, device=args.device, grid=args.grid, stores=args.stores,
                                  widths=args.widths, models=args.models, hidden=args.hidden, threads=args.threads,
                                  repeats=args.repeats, seed=args.seed, progress=not args.quiet)
    predicted_vs_measured(held, args.out_dir / "predicted_vs_measured.png",
                          title=f"cost model on {pred.device}: held-out shapes")
    worst = max((m.mape for m in pred.models.values() if m.mape == m.mape), default=float("nan"))
    log.info("wrote %s (worst held-out mape %.3f)", args.out_dir / "predictor.json", worst)


def cmd_schedule(args) -> None:
    from .report.figures import plan_loads
    from .schedule.stage import check_plan, schedule_stage

    if args.check is not None:
        plan = check_plan(args.store, args.check, model=args.model, workers=args.workers)
        print(json.dumps(plan.summary(), indent=1))
        return
    if args.out is None:
        raise ConfigError("schedule: give --out (the plan to write) or --check PLAN")
    groups = tail = transfers = None
    if args.windows == "train":
        from .api import run_costs
        from .data.store import open_store

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


TRAIN_FLAGS = ("model", "strategy", "task", "epochs", "window", "hidden", "lr", "checkpoint_blocks",
               "transfer", "device", "threads", "seed", "workers", "batch_windows", "partitioner",
               "event_batch", "memory_dim", "neighbors",
               "graph_input", "frame_size", "frame_reuse", "pipeline", "fanouts", "batch_size", "cache_policy", "order", "samplers",
               "memory_partitioner", "micro_batches", "stale_allreduce")


def _analysis_key(field: str) -> str:
    """The config key of an AnalysisOptions field: ``cache_fractions`` is ``analysis.cache.fractions``."""
    for sub in ("cache", "volume"):
        if field.startswith(f"{sub}_"):
            return f"analysis.{sub}.{field[len(sub) + 1:]}"
    return f"analysis.{field}"


_DASK_KEYS = {"workers": "dask.workers", "scheduler": "dask.scheduler_address"}

# Per stage, each flag (argparse dest) that stands for a config key: the key's schema checks the flag.
# A flag giving a list for a key of one value (profile --hidden) has each item checked.
FLAG_KEYS: dict[str, dict[str, str]] = {
    "ingest": {"threads": "ingest_threads"},
    "stats": _DASK_KEYS,
    "analyze": {**_DASK_KEYS, **{f.name: _analysis_key(f.name) for f in dataclasses.fields(AnalysisOptions)}},
    "profile": {"device": "train.device", "grid": "cost.grid", "threads": "cost.threads", "repeats": "cost.repeats",
                "models": "train.runs.items.models", "hidden": "train.hidden", "seed": "seed"},
    "schedule": {"model": "schedule.runs.items.models.items", "workers": "schedule.workers.items",
                 "window": "schedule.runs.items.window", "hidden": "schedule.runs.items.hidden",
                 "task": "train.task"},
    "train": {k: f"train.{k}" for k in TRAIN_FLAGS},
}

# Per stage, each output flag: the suffixes its file must have, or None for a directory.
OUTPUTS: dict[str, dict[str, tuple[str, ...] | None]] = {
    "stats": {"out": (".parquet",), "figure": (".png",)},
    "analyze": {"out_dir": None},
    "profile": {"out_dir": None},
    "schedule": {"out": (".json",), "figure": (".png",)},
    "train": {"out_dir": None},
    "compare": {"out": (".parquet",), "figure": (".png",)},
    "compare-sampled": {"out": (".parquet",), "figure": (".png",)},
    "compare-sven": {"out": (".parquet",), "figure": (".png",)},
    "runtimes": {"out": (".parquet",), "figure": (".png",)},
    "study": {"out": (".parquet",), "figure": (".png",)},
    "claims": {"out": (".parquet",), "html": (".html",)},
}


def _count_or_word(text: str) -> int | str:
    """A flag's value as an int when it is one (``--micro-batches 2``), else the word (``adaptive``)."""
    try:
        return int(text)
    except ValueError:
        return text


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def check_flags(args) -> None:
    """Every given flag of the stage that stands for a config key, against that key's schema."""
    from .config import check_value

    for dest, key in FLAG_KEYS.get(args.stage, {}).items():
        value = getattr(args, dest, None)
        if value is not None:
            check_value(key, value, _flag(dest))


def check_output(path: Path, flag: str, suffixes: tuple[str, ...] | None) -> None:
    """Refuse, before anything is written, an output path that could not be written whole: a file
    output of another suffix or that is a directory, a directory output that is a file, or a place
    whose nearest existing folder is not a writable directory."""
    if suffixes is None:
        if path.exists() and not path.is_dir():
            raise ConfigError(f"{flag} {path}: exists and is not a directory")
    else:
        if path.is_dir():
            raise ConfigError(f"{flag} {path}: is a directory; expected a {' or '.join(suffixes)} file")
        if path.suffix.lower() not in suffixes:
            raise ConfigError(f"{flag} {path}: expected a file name ending in {' or '.join(suffixes)}")
    reason = unwritable_reason(path)
    if reason:
        raise ConfigError(f"{flag} {path}: {reason}")


def check_outputs(args) -> None:
    for dest, suffixes in OUTPUTS.get(args.stage, {}).items():
        if getattr(args, dest, None) is not None:
            check_output(getattr(args, dest), _flag(dest), suffixes)


def cmd_train(args) -> None:
    from .config import check_options
    from .report.figures import training_curves
    from .api import train
    from .train.engine import TrainConfig

    options = {}
    if args.options:
        try:
            options = json.loads(args.options)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--options is not valid JSON: {exc}") from exc
        check_options("train", options, "--options")
    options.update({k: getattr(args, k) for k in TRAIN_FLAGS if getattr(args, k) is not None})
    config = TrainConfig.from_dict(options)
    check_device(config.device, "--device" if args.device else "--options device")
    t0 = time.perf_counter()
    result = train(args.store, args.out_dir, config, resume=args.resume, progress=not args.quiet)
    if result is None:  # a rank other than 0 of a torchrun job: rank 0 reports and draws
        return
    metrics, _ = result
    best = metrics[metrics["best"]].iloc[0]
    log.info("%s/%s: %d epochs in %.1fs; best epoch %d: %s", config.model, config.strategy, len(metrics),
             time.perf_counter() - t0, int(best["epoch"]),
             ", ".join(f"{k} {best[k]:.4f}" for k in metrics.columns if k.startswith(("val_", "test_"))))
    training_curves(metrics, args.out_dir / "training.png", f"{args.store.parent.name}: {config.model}, {config.strategy}")


def _read_runs(items: list[str], names: tuple[str, ...], command: str) -> dict[str, tuple]:
    """STRATEGY=DIR arguments -> {strategy: (the DataFrame of each of ``names`` in DIR)}."""
    import pandas as pd

    from .errors import InputError

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


def cmd_compare(args) -> None:
    from .report.figures import strategy_comparison
    from .report.strategies import strategy_table
    from .schedule.plan import SchedulePlan
    from .tables import write_table

    runs = _read_runs(args.runs, ("metrics.parquet", "timings.parquet"), "compare")
    plan = SchedulePlan.load(args.plan) if args.plan else None
    table = strategy_table(plan, runs)
    title = f"{plan.dataset}: {plan.model}, {plan.num_workers} workers" if plan else ""
    strategy_comparison(table, args.figure, title)
    write_table(table, args.out, (plan.store_checksum if plan else None) or "")
    for r in table.itertuples():
        log.info("%-10s epoch %.3fs (plan %.3gs, re-planned %.3gs), sync wait %.1f%% (plan %.1f%%), overlap %.1f%% "
                 "(plan %.1f%%)", r.strategy, r.epoch_s, r.predicted_epoch_s, r.replanned_epoch_s,
                 100 * r.sync_share, 100 * r.predicted_sync_share,
                 100 * r.overlap_share, 100 * r.predicted_overlap_share)


def cmd_compare_sampled(args) -> None:
    from .report.figures import sampled_data_path
    from .report.sampled import sampled_table
    from .tables import write_table

    table = sampled_table({k: v[0] for k, v in _read_runs(args.runs, ("metrics.parquet",), "compare-sampled").items()})
    sampled_data_path(table, args.figure, "sampled training: the feature data path")
    write_table(table, args.out, "")
    for r in table.itertuples():
        log.info("%-16s epoch %.2fs, hit L1 %.3f L2 %.3f, store %.1f MiB rows (%.1f MiB chunks) per epoch", r.strategy,
                 r.epoch_s, r.l1_hit_ratio, r.l2_hit_ratio, r.store_bytes / 2**20, r.store_chunk_bytes / 2**20)


def cmd_compare_sven(args) -> None:
    from .report.sven import sven_communication, sven_table
    from .tables import write_table

    table = sven_table(_read_runs(args.runs, ("metrics.parquet", "comm.parquet"), "compare-sven"))
    sven_communication(table, args.figure, "Sven: communication per batch and epoch time")
    write_table(table, args.out, "")
    for r in table.itertuples():
        log.info("%-20s worker %d: %.1f KiB dispatch, %.1f KiB aggregation per batch; epoch %.2fs", r.run, r.worker,
                 r.dispatch / 2**10, r.aggregation / 2**10, r.epoch_s)


def cmd_runtimes(args) -> None:
    from .report.figures import stage_durations
    from .report.runtimes import stage_times
    from .tables import write_table

    times = stage_times(args.bench_dir)
    stage_durations(times, args.figure, "time per workflow stage")
    write_table(times, args.out, "")
    for rule, seconds in times.groupby("rule")["seconds"].sum().sort_values(ascending=False).items():
        log.info("%-12s %8.1f s", rule, seconds)


def cmd_study(args) -> None:
    from .report.paper_figures import runs_side_by_side
    from .report.studies import run_config, runs_table
    from .tables import write_table

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


def cmd_claims(args) -> None:
    from .atomic import write_all
    from .report.claims import claims_html, claims_table
    from .tables import write_parquet

    table = claims_table(args.tables, args.results)
    page = claims_html(table)
    write_all({args.out: lambda tmp: write_parquet(table, tmp, ""),  # both or neither
               args.html: lambda tmp: tmp.write_text(page, encoding="utf-8")})
    for r in table.itertuples():
        log.info("%-16s %-70.70s paper %-8.3g ours %-8.3g %s", r.paper, r.claim, r.paper_value, r.ours, r.status)


def cmd_info(args) -> None:
    from .data.store import open_store

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


def cmd_check_config(args) -> None:
    from .config import load_config

    import yaml
    print(yaml.safe_dump(load_config(args.config), sort_keys=False), end="")


COMMANDS = {"ingest": cmd_ingest, "stats": cmd_stats, "analyze": cmd_analyze, "profile": cmd_profile,
            "schedule": cmd_schedule, "train": cmd_train, "compare": cmd_compare, "compare-sampled": cmd_compare_sampled, "compare-sven": cmd_compare_sven, "runtimes": cmd_runtimes, "study": cmd_study, "claims": cmd_claims,
            "info": cmd_info, "check-config": cmd_check_config}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _setup_logging(args.verbose, args.quiet)
    try:
        check_flags(args)
        check_outputs(args)
        COMMANDS[args.stage](args)
        sys.stdout.flush()  # here, so that a closed pipe is met below and not at exit
    except DynagnnError as exc:
        print(f"dynagnn {args.stage}: error: {' '.join(str(exc).splitlines())}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader of stdout went away (`dynagnn info | head`): stop quietly, the Python docs' way
        # (stdout to devnull, so that the interpreter's last flush does not fail again).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:
        # The machine's refusal (a full disk, a permission the checks above could not foresee): one
        # line as well; the writes are atomic, so nothing half-written is left. -v shows where.
        log.debug("OSError in %s", args.stage, exc_info=True)
        print(f"dynagnn {args.stage}: error: {' '.join(str(exc).splitlines())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"dynagnn {args.stage}: interrupted", file=sys.stderr)
        return 130
    return 0
