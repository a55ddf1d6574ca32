"""The Python API's training: :func:`fit` and what it returns (``import dynagnn; dynagnn.fit(...)``).

A thin front over :func:`dynagnn.api.run.train`, the one the CLI calls (one engine, no second
trainer): the same keys, checks, outputs and refusals as ``dynagnn train``.
"""

from __future__ import annotations

import copy
import dataclasses
import tempfile
from pathlib import Path

from dynagnn.api.run import train
from dynagnn.errors import ConfigError, DynagnnError, one_line

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
    """The TrainConfig (or the chooser's request) of ``keys``, checked and routed as ``dynagnn train``
    checks and routes its ``--options`` and flags (the schema's check of every key, then the router)."""
    from dynagnn.choose.request import request_of
    from dynagnn.config import check_options

    check_options("train", keys, FIT_WHERE)
    return request_of(keys, FIT_WHERE)


def _refuse_unimportable(cls: type | None, name: str, config) -> None:
    """A class that worker processes cannot import (:func:`dynagnn.models.registry.unimportable`), in a
    run that starts some: ConfigError in one line saying where to define it. (An auto run leaves out
    the candidates of several processes instead: ``run_refusal``.)"""
    from dynagnn.distributed.launch import under_torchrun
    from dynagnn.models.registry import unimportable

    if cls is None or not hasattr(config, "strategy_cls"):   # a request: its candidates are refused one by one
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
    from dynagnn.choose.request import REPORT_FILE, Request

    if isinstance(config, Request) and (out / REPORT_FILE).is_file():   # the model as the chosen strategy built it
        from dynagnn.choose.resolve import previous_choice

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
