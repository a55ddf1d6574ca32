"""The chooser's candidates: every way to train a run on the cores or devices given.

:func:`candidates` enumerates, from the strategy registry, each strategy that is not a paper's
baseline (``Strategy.baseline_of``), at each worker count the machine allows, with the values of its
speed options (``Strategy.speed_options``: frame size, checkpoint blocks, the graph difference on a
GPU, micro-batches, one cache level or two, as the options declare them), and the processes against threads split of the cores (each split also at one
thread per process). A candidate that cannot run is kept with its reason (the model's contract rules
the strategy out, the store has too few snapshots or vertices for the workers, a GPU-only strategy on
a CPU), never dropped silently. What the chooser knows of a strategy it asks of its class
(``Strategy.simplicity``, ``splits_only``, ``plain``, ``step_traffic``, ``divides``): a new strategy
needs no change here. :func:`run_candidates` applies a request's refusals
(:func:`run_refusal`) and the keys it carries; :func:`chosen_config` is the config that trains one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from dynagnn.errors import ConfigError

log = logging.getLogger("dynagnn")

@dataclass(frozen=True)
class Candidate:
    """One way to train the run: ``strategy`` on ``workers`` workers of ``procs`` processes each, every
    process with ``threads`` torch threads, with ``options`` (a strategy option: value); ``reason`` is
    None when it can run, else why it cannot."""

    strategy: str
    workers: int = 1
    threads: int = 1
    options: tuple[tuple[str, object], ...] = ()
    procs: int = 1
    reason: str | None = field(default=None, compare=False)

    @property
    def processes(self) -> int:
        return self.workers * self.procs

    @property
    def plain(self) -> bool:
        """One process of a model kind's plain loop (``Strategy.plain``), no option set: what every
        technique must beat."""
        return self.processes == 1 and not self.options and strategy_of(self.strategy).plain

    def label(self) -> str:
        opts = ", ".join(f"{k}={v}" for k, v in self.options)
        return f"{self.strategy} {self.workers}x{self.procs}x{self.threads}t" + (f" ({opts})" if opts else "")

    @classmethod
    def from_row(cls, row: dict) -> "Candidate":
        """The candidate of a row of ``auto.json``'s candidates."""
        return cls(row["strategy"], int(row["workers"]), int(row["threads"]), tuple(row["options"].items()),
                   int(row["processes_per_worker"]))

    def simplicity(self) -> tuple:
        """The tie-break key: fewer processes, then the plainer strategy (``Strategy.simplicity``), then
        fewer options set."""
        return (self.processes, strategy_of(self.strategy).simplicity, len(self.options))


def _splits(cores: int, procs_per_worker: int, max_workers: int) -> list[tuple[int, int]]:
    """(workers, threads per process) pairs that fill ``cores`` without oversubscribing them."""
    out = []
    for w in range(1, max_workers + 1):
        procs = w * procs_per_worker
        if procs <= cores:
            out.append((w, max(1, cores // procs)))
    return out


def candidates(model_kind: str, *, cores: int, device: str = "cpu", gpus: int = 0, window: int = 4,
               refusal=None, given=()) -> list[Candidate]:
    """Every candidate of a run (module docstring). ``model_kind``: the kind of the run's model
    (``snapshot``, ``event``, ``sampled``); ``cores``: the CPU cores the run may use; ``gpus``: the
    devices on a GPU (a worker per GPU); ``window``: the snapshots a step reads (a speed option
    bounded by the window tries values up to it); ``refusal(strategy_class, workers, options) -> str | None``:
    why the run's model, task and store rule that strategy out at that worker count with those options
    (the contract check and the strategy's own ``check``), None where it can run. Each split of the
    cores is also tried at one thread per process (on a small step one thread can be the faster: the
    pool's hand-offs cost more than they share). ``given``: options the run fixed (none of
    their values is tried)."""
    from dynagnn.train.strategies import STRATEGIES

    if cores < 1:
        raise ConfigError(f"cores {cores}: a run needs at least one core")
    out = []
    for name, cls in STRATEGIES.items():
        if cls.baseline_of is not None:
            continue
        kinds = {"snapshot", "stacked"} if model_kind == "snapshot" else {model_kind}
        if not kinds & set(cls.models):
            continue
        if device == "cpu":
            splits = _splits(cores, cls.procs_per_worker, cores)
            splits += [(w, 1) for w, t in splits if t > 1]
        else:   # a worker per GPU; BLAD's two processes share one
            splits = [(w, max(1, cores // (w * cls.procs_per_worker))) for w in range(1, max(gpus, 1) + 1)]
        for workers, threads in splits:
            for opts in cls.speed_options(window, device, given):
                why = None
                if cls.gpu_only and device == "cpu":
                    why = f"{name} pays only on a GPU"
                elif refusal is not None:
                    why = refusal(cls, workers, dict(opts))
                if why is None and workers == 1 and cls.splits_only:
                    why = f"{name} splits a step among workers: on 1 it is the one-process loop with more to do"
                out.append(Candidate(name, workers, threads, opts, cls.procs_per_worker, why))
    return out



def run_refusal(store, config, model):
    """The ``refusal`` of :func:`candidates` for a run of ``config`` on ``store`` with ``model`` (built):
    a snapshot model's contract (:meth:`Strategy.model_refusal`, checked at the run's widths), the
    options the auto run carries that the strategy does not take, then the strategy's own check at that
    worker count with the candidate's options and those carried (too few vertices or snapshots for the
    workers, a window too short to split, checkpointing in a carried sequence): its one-line
    ConfigError is the candidate's reason."""
    from dynagnn.distributed.launch import under_torchrun
    from dynagnn.models import model_kind
    from dynagnn.models.contract import check_contract
    from dynagnn.models.registry import resolve_model, unimportable
    from dynagnn.choose.trials import candidate_config

    contract = None
    if model_kind(config.model) == "snapshot":
        contract = check_contract(type(model), config.model, model.in_dim, model.hidden_dim)
    keys = config.carried
    alone = None if under_torchrun() else unimportable(resolve_model(config.model), config.model)

    def why(cls, workers: int, options: dict | None = None) -> str | None:
        refused = cls.model_refusal(type(model), contract) if contract is not None else None
        if refused:
            return refused
        if alone and workers * cls.procs_per_worker > 1:
            return f"the model's class {alone}"
        missing = [k for k in keys if k not in cls.settable()]
        if missing:
            return f"{cls.name} takes no {', '.join(missing)} (given to auto)"
        try:
            cfg = candidate_config(config, cls.name, workers, 1, {**(options or {}), **keys})
            cfg.strategy_cls(cfg).check(model, store, workers)
        except ConfigError as exc:
            return str(exc)
        return None
    return why



def chosen_config(config, cand: Candidate):
    """The config that trains candidate ``cand`` of the request ``config``: the keys it carries that
    the candidate's strategy takes (one that takes not all is refused before it is trialled,
    :func:`run_refusal`; the plain loop measured for the prediction's base takes what it can)."""
    from dynagnn.choose.trials import candidate_config   # trials import the engine: torch

    settable = strategy_of(cand.strategy).settable()
    given = {k: v for k, v in config.carried.items() if k in settable}
    return candidate_config(config, cand.strategy, cand.workers, cand.threads, {**dict(cand.options), **given})


def plain_name(kind: str) -> str:
    """The plain one-process loop of models of ``kind`` (``snapshot``, ``event``, ``sampled``): the
    registry's strategy that says it is (``Strategy.plain``), not a baseline."""
    from dynagnn.train.strategies import STRATEGIES

    return next(n for n, c in STRATEGIES.items() if c.plain and c.baseline_of is None and kind in c.models)


def plain_strategy(config):
    """The auto run's plain one-process loop (:func:`plain_name` of its model's kind),
    with the options it carries that the loop takes (an event model's widths)."""
    from dynagnn.models import model_kind
    from dynagnn.choose.trials import candidate_config

    cls = strategy_of(plain_name(model_kind(config.model)))
    given = {k: v for k, v in config.carried.items() if k in cls.settable()}
    return cls(candidate_config(config, cls.name, 1, 1, given))


def plain_model(store, config):
    """The run's model, built as its plain strategy builds it, without drawing from the caller's stream."""
    import torch

    plain = plain_strategy(config)
    with torch.random.fork_rng(devices=[]):
        return plain.build_model(plain.input_dim(store))


def check_run(store, config) -> None:
    """The run's model and task as its plain loop builds them (a task the store's labels cannot serve,
    a model of another kind): their one-line errors before the out-dir's and before any trial."""
    import torch

    plain = plain_strategy(config)
    with torch.random.fork_rng(devices=[]):   # the task's negatives draw from a generator of their own seed
        plain.make_task(store)
        plain.build_model(plain.input_dim(store))



def strategy_of(name: str):
    """The registry's class of ``name`` (the registry imports every strategy: torch, on first use)."""
    from dynagnn.train.strategies import strategy_class

    return strategy_class(name)



def run_candidates(store, config, model=None) -> list[Candidate]:
    """The candidates of the auto run ``config`` on ``store`` (:func:`candidates`), on its ``cores``
    (else the cores this process may use) or the GPUs visible, its run's refusals and carried options
    applied; in a carried sequence, frame sizes up to the sequence (at most the largest tried), not
    the unused window. ``model``: the run's model built (:func:`plain_model` by default)."""
    import torch

    from dynagnn.distributed.launch import available_cores
    from dynagnn.models import model_kind
    from dynagnn.choose.predict import carried_snapshots

    kind = model_kind(config.model)
    model = plain_model(store, config) if model is None else model
    window = int(config.window)
    if kind == "snapshot":
        sequence = carried_snapshots(chosen_config(config, Candidate(plain_name(kind))), store)
        window = sequence if sequence is not None else window
    gpus = torch.cuda.device_count() if config.device.startswith("cuda") else 0
    return candidates(kind, cores=int(config.options.cores or available_cores()), device=config.device, gpus=gpus,
                      window=window, refusal=run_refusal(store, config, model), given=config.carried)
