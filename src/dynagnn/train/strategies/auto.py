"""``--strategy auto`` (issue 30): the chooser's candidates, its trials, its rule and its report.

:func:`candidates` enumerates, from the strategy registry, every way to train a run on the cores or
devices given: each strategy that is not a paper's baseline (``Strategy.baseline_of``), at each
worker count the machine allows, with the options that change its speed (frame size, checkpoint
blocks, the graph difference on a GPU, micro-batches, one cache level or two), and the processes
against threads split of the cores (each split also at one thread per process). A candidate that cannot run
is kept with its reason (the model's contract rules the strategy out, the store has too few
snapshots or vertices for the workers, a GPU-only strategy on a CPU), never dropped silently.

:func:`choose` is the rule the choice ends with: the fastest candidate whose peak memory fits the
budget, by its trial (or, where the trials' share timed none, by its prediction); a tie (within
:data:`TIE`) goes to the simpler one (fewer processes, then the plainer strategy: :data:`SIMPLER`); a
budget below every candidate is one line naming the smallest budget that would fit.

:func:`trial_candidates` times candidates on real steps of the run (:mod:`dynagnn.train.trials`),
interleaved as the frame tuner's trials are (:func:`dynagnn.schedule.tuner.interleaved`), and gives
:func:`choose` its epoch seconds and peak memory.

:func:`report` is what ``auto.json`` holds and :func:`summary_line` the log line.

:class:`Auto` is the ``auto`` strategy of the registry: its options (the memory budget, the trials'
share of the run, the cores) and nothing that trains. :func:`resolve` turns a run that names it into
the run of the chosen candidate: the candidates enumerated, each one's epoch predicted
(:mod:`dynagnn.train.predict`) and its peak memory (:mod:`dynagnn.train.memory_model`), the best
predicted that fit the budget timed within the trials' share (:func:`trial_plan`, and
:class:`TrialClock` as it is spent: a bound), the
fastest measured chosen; where the share could time none beside the plain loop (a run of a few
seconds), the fastest predicted of one process. The API
(:func:`dynagnn.api.train`) calls it before training and hands the report to the engine, which writes
``auto.json`` beside the metrics; a group candidate's plan is made by the API's ``planned``.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from dataclasses import dataclass, field

from dynagnn.errors import ConfigError, one_line
from dynagnn.train.options import SequenceMode, Truncation, option
from dynagnn.train.strategies.base import Strategy
from dynagnn.train.strategies.events import EventOptions
from dynagnn.train.strategies.frames import runs_frames
from dynagnn.train.strategies.sampled import SampledOptions

log = logging.getLogger("dynagnn")

# plainest first: a tie goes to the one earlier here (less machinery to trust)
SIMPLER = ("sequential", "frames", "vertex", "snapshot", "group", "group_frames", "events", "tgnn", "sampled")
TIE = 0.02          # measured epochs within 2% of each other are a tie
FRAME_SIZES = (2, 4, 8, 16)
SPLITTERS = ("vertex", "snapshot", "tgnn")   # strategies whose only point is the split among workers
PLAIN = {"snapshot": "sequential", "event": "events", "sampled": "sampled"}   # the one-process loop of each model kind
PLAIN_STRATEGIES = tuple(PLAIN.values())
CHECKPOINT_BLOCKS = (1, 2, 4)
MICRO_BATCHES = (1, 2, 4)


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
        """One process of a model kind's plain loop, no option set: what every technique must beat."""
        return self.processes == 1 and not self.options and self.strategy in PLAIN_STRATEGIES

    def label(self) -> str:
        opts = ", ".join(f"{k}={v}" for k, v in self.options)
        return f"{self.strategy} {self.workers}x{self.procs}x{self.threads}t" + (f" ({opts})" if opts else "")

    @classmethod
    def from_row(cls, row: dict) -> "Candidate":
        """The candidate of a row of ``auto.json``'s candidates."""
        return cls(row["strategy"], int(row["workers"]), int(row["threads"]), tuple(row["options"].items()),
                   int(row["processes_per_worker"]))

    def simplicity(self) -> tuple:
        """The tie-break key: fewer processes, then the plainer strategy, then fewer options set."""
        rank = SIMPLER.index(self.strategy) if self.strategy in SIMPLER else len(SIMPLER)
        return (self.processes, rank, len(self.options))


def _splits(cores: int, procs_per_worker: int, max_workers: int) -> list[tuple[int, int]]:
    """(workers, threads per process) pairs that fill ``cores`` without oversubscribing them."""
    out = []
    for w in range(1, max_workers + 1):
        procs = w * procs_per_worker
        if procs <= cores:
            out.append((w, max(1, cores // procs)))
    return out


def _option_sets(cls, window: int, device: str, given=()) -> list[tuple[tuple[str, object], ...]]:
    """The speed options of strategy class ``cls`` worth trying (those it declares, less the ``given``
    ones: the run fixed them)."""
    declared = set(cls.Options.declared()) - set(cls.fixed) - set(given)
    sets: list[tuple[tuple[str, object], ...]] = [()]
    if "frame_size" in declared:
        sets = [(("frame_size", s),) for s in FRAME_SIZES if s <= max(window, 1)] or [(("frame_size", 1),)]
    if "checkpoint_blocks" in declared and "frame_size" not in declared:
        sets = [o + ((("checkpoint_blocks", b),) if b > 1 else ()) for o in sets for b in CHECKPOINT_BLOCKS
                if b <= max(window, 1)]
    if "transfer" in declared and device != "cpu":   # a difference pays across PCIe, never on a CPU (docs/gpu.md)
        sets = [o + t for o in sets for t in ((), (("transfer", "diff"),))]
    if "micro_batches" in declared:   # Sven's pipelining of a worker's share
        sets = [o + ((("micro_batches", m),) if m > 1 else ()) for o in sets for m in MICRO_BATCHES]
    if "cache_l1_mb" in declared and "cache_policy" not in cls.fixed:   # BGL's two levels, or the host's only
        sets = [o + c for o in sets for c in ((), (("cache_l1_mb", 0),))]
    return sets


def candidates(model_kind: str, *, cores: int, device: str = "cpu", gpus: int = 0, window: int = 4,
               refusal=None, given=()) -> list[Candidate]:
    """Every candidate of a run (module docstring). ``model_kind``: the kind of the run's model
    (``snapshot``, ``event``, ``sampled``); ``cores``: the CPU cores the run may use; ``gpus``: the
    devices on a GPU (a worker per GPU); ``refusal(strategy_class, workers, options) -> str | None``:
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
        if cls.baseline_of is not None or name == "auto":
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
            for opts in _option_sets(cls, window, device, given):
                why = None
                if cls.gpu_only and device == "cpu":
                    why = f"{name} pays only on a GPU"
                elif refusal is not None:
                    why = refusal(cls, workers, dict(opts))
                if why is None and workers == 1 and name in SPLITTERS:
                    why = f"{name} splits a step among workers: on 1 it is the one-process loop with more to do"
                out.append(Candidate(name, workers, threads, opts, cls.procs_per_worker, why))
    return out


def choose(measured: dict[Candidate, float], peak_bytes: dict[Candidate, float], budget: float | None,
           tie: float = TIE) -> tuple[Candidate, dict[Candidate, str]]:
    """(the chosen candidate, {candidate: why it was not chosen}) from the measured epoch seconds and
    peak memory of the candidates that ran (module docstring). ConfigError, in one line, when the
    budget fits none: it names the smallest budget that would fit and the candidate that needs it."""
    if not measured:
        raise ConfigError("auto: no candidate could run (each one's reason is in auto.json)")
    fits = {c: t for c, t in measured.items() if budget is None or peak_bytes.get(c, 0.0) <= budget}
    if not fits:
        smallest = min(measured, key=lambda c: peak_bytes.get(c, 0.0))
        raise ConfigError(f"memory budget {_mib(budget)} fits no candidate; the smallest, {smallest.label()}, "
                          f"needs {_mib(peak_bytes[smallest])}: give at least that (--memory-budget)")
    best = min(fits.values())
    chosen = min((c for c, t in fits.items() if t <= best * (1 + tie)), key=lambda c: c.simplicity())
    why = {}
    for c, t in measured.items():
        if c == chosen:
            continue
        if c not in fits:
            why[c] = f"peak {_mib(peak_bytes[c])} over the budget {_mib(budget)}"
        elif t <= best * (1 + tie):
            why[c] = f"{t:.3g} s/epoch ties {chosen.label()} ({measured[chosen]:.3g} s), which is simpler"
        else:
            why[c] = f"{t:.3g} s/epoch, {t / measured[chosen]:.2f}x the chosen"
    return chosen, why


def _mib(n: float | None) -> str:
    return "none" if n is None else f"{n / 2**20:.1f} MiB"



def trial_candidates(store_path, config, cands: list[Candidate], *, steps: int = 4, rounds: int = 2,
                     measure=None, failed: dict | None = None,
                     clock: TrialClock | None = None) -> tuple[dict[Candidate, float], dict[Candidate, float]]:
    """({candidate: predicted epoch seconds}, {candidate: peak bytes}) of the candidates that can run,
    each timed ``rounds`` times on ``steps`` real steps after a warm-up round, interleaved; an epoch's
    seconds are the per-step medians over the rounds, summed and scaled to the epoch's step count (the
    frame tuner's :func:`~dynagnn.schedule.tuner.trial_seconds`). ``measure(candidate) -> Trial``
    replaces the real trial (tests inject timings). A candidate whose trial fails (a worker dies, a
    strategy's error) is left out, its one-line reason in ``failed``: the run trains another.
    ``clock``: the trials' share as it is spent (:class:`TrialClock`); a candidate it cannot afford is
    left out with that reason in ``failed``, and the rounds end early where the last round's seconds
    would pass the share."""
    from dynagnn.schedule.tuner import interleaved
    from dynagnn.train.trials import Trials

    runnable = [c for c in cands if c.reason is None]
    failed = {} if failed is None else failed
    asked: set = set()

    def guarded(c: Candidate, measure):
        if c in failed:
            return None
        if clock is not None and c not in asked:
            asked.add(c)
            why = clock.refusal(c)
            if why is not None:
                failed[c] = why
                log.info("auto: %s %s", c.label(), why)
                return None
        try:
            return measure(c)
        except Exception as exc:   # noqa: BLE001 (a strategy's step may raise anything: the run trains another)
            failed[c] = f"its trial failed: {one_line(exc)}"
            log.warning("auto: %s %s", c.label(), failed[c])
            if clock is not None:
                clock.refund(c)
            return None
    if measure is None:
        with Trials(store_path, steps, rounds + 1) as live:   # the tuner's rounds and its warm-up round
            trials = interleaved(runnable, lambda c: guarded(c, lambda c: live.measure(c, chosen_config(config, c))),
                                 rounds, clock.more if clock else None)
    else:
        trials = interleaved(runnable, lambda c: guarded(c, measure), rounds, clock.more if clock else None)
    return _epochs({c: got for c, got in trials.items() if c not in failed})


def _epochs(trials: dict) -> tuple[dict[Candidate, float], dict[Candidate, float]]:
    """({candidate: epoch seconds}, {candidate: peak bytes}) of each candidate's timed rounds
    (:func:`dynagnn.train.trials.epoch_seconds_of`)."""
    from dynagnn.train.trials import epoch_seconds_of

    return ({c: epoch_seconds_of(got) for c, got in trials.items()},
            {c: max(t.peak_bytes for t in got) for c, got in trials.items()})


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
    from dynagnn.train.trials import candidate_config

    contract = None
    if model_kind(config.model) == "snapshot":
        contract = check_contract(type(model), config.model, model.in_dim, model.hidden_dim)
    keys = carried(config)
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


def report(cands: list[Candidate], seconds: dict[Candidate, float], peak: dict[Candidate, float],
           chosen: Candidate, why: dict[Candidate, str], budget: float | None) -> dict:
    """``auto.json``: every candidate in enumeration order with its measured epoch seconds and peak
    bytes (null where it was not timed), whether it was chosen, and one line of reason for each one
    not chosen (it cannot run, or the choice's reason)."""
    rows = []
    for c in cands:
        rows.append({"strategy": c.strategy, "workers": c.workers, "processes_per_worker": c.procs,
                     "threads": c.threads, "options": dict(c.options), "label": c.label(),
                     "epoch_seconds": seconds.get(c), "peak_bytes": peak.get(c), "chosen": c == chosen,
                     "reason": None if c == chosen else (c.reason or why.get(c, "not timed"))})
    return {"version": 1, "memory_budget_bytes": budget, "chosen": chosen.label(), "candidates": rows}


def summary_line(seconds: dict[Candidate, float], chosen: Candidate, cands: list[Candidate], shown: int = 3) -> str:
    """``auto: frames 1x1x2t (frame_size=4) 0.31 s/epoch; sequential 1x1x2t 0.42; ...; snapshot refused:
    <its reason>``: the chosen one first, then the next fastest, then each refused strategy once."""
    order = sorted(seconds, key=seconds.get)
    parts = [f"{chosen.label()} {seconds[chosen]:.3g} s/epoch"]
    parts += [f"{c.label()} {seconds[c]:.3g}" for c in order if c != chosen][:shown - 1]
    refused: dict[str, str] = {}
    for c in cands:   # the reason at the most workers: at 1, a splitting strategy's is only that it has one
        if c.reason and all(o.reason for o in cands if o.strategy == c.strategy):
            refused[c.strategy] = c.reason
    parts += [f"{name} refused: {reason}" for name, reason in refused.items()]
    return "auto: " + "; ".join(parts)


# --------------------------------------------------------------------------------------------------
# The ``auto`` strategy: its options, and the resolution of a run that names it

# what one more process's start costs a trial beyond its steps (spawn, import torch, the group's
# rendezvous), and a BLAD plan made at start: this 2-core machine's, so that the trials' share counts them
LAUNCH_SECONDS = 4.0
PLAN_SECONDS = 6.0
TRIAL_STEPS, TRIAL_ROUNDS = 3, 2
# the plain loop's rounds at each thread count, which the prediction's every term scales: a median of
# three, one disturbed round moving nothing (at two, one slow round of the 2-thread loop on this shared
# machine, 0.67 s against 0.49-0.57, made CollegeMsg's one-step epoch predict 1 thread faster, 1.23x wrong)
BASE_ROUNDS = 3
# what a trial's rounds cost beyond their steps' predicted seconds (each round's epoch start, the
# gradients zeroed, the thread count switched, a step slower than predicted): on issue 30's CPU
# matrix the trials took 0.95-1.30x the steps' estimate, so the share is planned with this margin
TRIAL_MARGIN = 1.3
_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 10**3, "kib": 2**10, "m": 2**20, "mb": 10**6, "mib": 2**20,
          "g": 2**30, "gb": 10**9, "gib": 2**30, "t": 2**40, "tb": 10**12, "tib": 2**40}


@dataclass(frozen=True)
class AutoOptions(SequenceMode, Truncation, EventOptions, SampledOptions):
    """The chooser's own options, and those that say what is trained (the sequence mode and its
    truncation, the link task's evaluation negatives, the event models' widths and batches, the
    sampled models' fan-outs, batches and caches), which every candidate that declares them gets; a
    candidate that does not take one given is refused with that reason."""

    memory_budget: str | int | None = option(
        None, "auto: the peak memory a training process may take, in bytes or as a size (512MiB, 4GB); null = "
        "the device's free memory (the host's available memory on a CPU)", type=["string", "integer", "null"])
    trial_share: float = option(
        0.1, "auto: the trials' time as a share of the expected training time (the best predicted epoch times "
        "the epochs), a bound: the best predicted candidates are timed while it lasts; a share too small to time "
        "one beside the plain loop leaves the choice to the prediction (above 1: trials longer than the training, "
        "for a comparison)", type="number", exclusiveMinimum=0)
    cores: int | None = option(
        None, "auto: the CPU cores its candidates may fill with processes x threads (null = the cores this "
        "process may run on)", type=["integer", "null"], minimum=1)
    predictor: str | None = option(
        None, "auto: the profile stage's predictor.json for this device (results/cost/<device>/): its operator "
        "model gives a step's aggregation share and its measured channel costs the communication's (null = the "
        "share measured at start, this machine's channel figures)", type=["string", "null"])


class Auto(Strategy):
    """``--strategy auto``: chooses among the others (module docstring); it trains nothing itself."""

    name = "auto"
    Options = AutoOptions
    family = "auto"
    models = ("snapshot", "stacked", "event", "sampled")
    tasks = ("link", "classify", "regress")

    def check(self, model, store, workers):
        raise ConfigError("the auto strategy is resolved before training (dynagnn.api.train, dynagnn train, "
                          "dynagnn.fit): the engine trains the candidate it chose")


CARRIED = tuple(f for f in AutoOptions.declared() if f not in ("memory_budget", "trial_share", "cores", "predictor"))


def parse_budget(value, where: str = "memory_budget") -> float | None:
    """Bytes of a memory budget: an integer, or a number with a unit (512MiB, 4GB, 1.5g); None stays
    None. ConfigError in one line for zero, a negative or a malformed size."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigError(f"{where} {value!r}: expected bytes or a size such as 512MiB or 4GB")
    if isinstance(value, (int, float)):
        n = float(value)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(value))
        if not m or m.group(2).lower() not in _UNITS:
            raise ConfigError(f"{where} {value!r}: expected bytes or a size such as 512MiB or 4GB")
        n = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not n > 0:
        raise ConfigError(f"{where} {value!r}: a budget must be more than 0 bytes")
    return n


def free_memory(device: str) -> float:
    """The device's free memory in bytes: MemAvailable on a CPU, the allocator's free memory on a GPU."""
    if device.startswith("cuda"):
        import torch

        return float(torch.cuda.mem_get_info(torch.device(device))[0])
    import os

    from dynagnn.timing import proc_bytes

    available = proc_bytes("/proc/meminfo", "MemAvailable")
    return float(available if available is not None else os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


@dataclass
class Choice:
    """A resolved ``auto`` run: the config the engine trains (the chosen candidate's), the run's own
    config (its identity in the out-dir), ``auto.json``'s content and the log line."""

    config: object
    requested: object
    report: dict
    line: str

    @property
    def label(self) -> str:
        return self.report["chosen"]


def carried(config) -> dict:
    """The auto run's options that its candidates take (those it gives other than their defaults);
    none for a run of another strategy (its own options are its own)."""
    if config.strategy != "auto":
        return {}
    defaults = AutoOptions()
    return {k: getattr(config.options, k) for k in CARRIED if getattr(config.options, k) != getattr(defaults, k)}


def chosen_config(config, cand: Candidate):
    """The config that trains candidate ``cand`` of the auto run ``config``."""
    from dynagnn.train.trials import candidate_config   # trials import the engine, which imports the registry

    return candidate_config(config, cand.strategy, cand.workers, cand.threads, {**dict(cand.options), **carried(config)})


def plain_strategy(config):
    """The auto run's plain one-process loop (:data:`PLAIN` of its model's kind),
    with the options it carries that the loop takes (an event model's widths)."""
    from dynagnn.models import model_kind
    from dynagnn.train.trials import candidate_config

    cls = _strategy(PLAIN[model_kind(config.model)])
    given = {k: v for k, v in carried(config).items() if k in cls.settable()}
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


def peaks(store, config, cands: list[Candidate]) -> dict[Candidate, float]:
    """Each candidate's predicted peak bytes (:func:`dynagnn.train.memory_model.predict_peak_bytes`),
    one prediction per strategy, worker count and options (a process's memory is not its threads')."""
    import torch

    from dynagnn.train.memory_model import predict_peak_bytes

    by: dict[tuple, float] = {}
    memo: dict = {}
    for c in cands:
        key = (c.strategy, c.workers, c.options)
        if key not in by:
            by[key] = float(predict_peak_bytes(store, chosen_config(config, c), memo))
    if config.device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.empty_cache()   # the measurements' blocks back to the device: the trials size their caches by free memory
    return {c: by[(c.strategy, c.workers, c.options)] for c in cands}


def _strategy(name: str):
    """The registry's class of ``name`` (imported here: the registry imports this module)."""
    from dynagnn.train.strategies import strategy_class

    return strategy_class(name)


def _trial_parts(c: Candidate, predicted: float, steps_per_epoch: int, build_s: float = 0.0,
                 steps: int = TRIAL_STEPS, rounds: int = TRIAL_ROUNDS, frame_build_s: float = 0.0,
                 gpu: bool = False) -> tuple[float, float]:
    """Seconds a trial of ``c`` is expected to take, as (its warm-up round, its timed rounds): its
    ``rounds`` and a warm-up round of ``steps`` timed steps and a warm-up step per trainer built, its
    trainers' builds (``build_s``, the plain loop's, measured; a frames trainer's frame engine,
    ``frame_build_s``, measured at start, on top), its processes' start once and a plan where it needs
    one. A trainer is built once where :class:`~dynagnn.train.trials.Trials` keeps it (one process on
    a CPU, not BGL's stages); else once per round. A job of several processes runs every round at its
    first (its timed rounds cost nothing later)."""
    per_step = predicted / max(steps_per_epoch, 1)
    n = min(steps, steps_per_epoch)
    start = LAUNCH_SECONDS if c.processes > 1 else 0.0
    plan = PLAN_SECONDS if _strategy(c.strategy).needs_plan else 0.0
    build = build_s + (frame_build_s if runs_frames(c.strategy) else 0.0)
    once = c.processes > 1 or not (gpu or "sampled" in _strategy(c.strategy).models)
    first = TRIAL_MARGIN * (n + 1) * per_step + build + start + plan
    later = TRIAL_MARGIN * rounds * n * per_step + (0.0 if once else rounds * (TRIAL_MARGIN * per_step + build))
    return (first + later, 0.0) if c.processes > 1 else (first, later)


class TrialClock:
    """The trials' share of the run held as it is spent, not only as planned (:func:`trial_plan`
    plans by predicted steps, and a slow build or a loaded machine took the CPU matrix's trials to
    1.07-1.25x their plan). ``parts``: {candidate: (its warm-up round's expected seconds, its timed
    rounds')}; ``budget_s``: the share; ``must``: the candidates timed whatever they cost (the plain
    loops), their whole trials owed from the start. Another candidate starts its trial only while the
    seconds spent, its whole trial and the seconds still owed (the timed rounds of those started, the
    trials of the ``must`` ones not started) fit the share (:meth:`refusal`); a failed one's rounds
    are given back (:meth:`refund`). The first timed round always runs (a choice needs one); a later
    one only while the seconds spent and the last round's, its estimate, fit (:meth:`more`). A
    trainer built again each round where the memory budget cannot keep it costs more than planned:
    :meth:`more` bounds what that overruns. ``now``: the clock (tests inject one)."""

    def __init__(self, budget_s: float, parts: dict, must=(), now=time.perf_counter):
        self.budget_s, self.parts, self.must, self.now = float(budget_s), dict(parts), set(must), now
        self.t0 = now()
        self.owed = sum(sum(self.parts.get(c, (0.0, 0.0))) for c in self.must)
        self.started: set = set()
        self.refused: set = set()
        self.round_start = self.t0
        self.last_round = 0.0    # the seconds of the last timed round

    def spent(self) -> float:
        return self.now() - self.t0

    def refusal(self, c) -> str | None:
        """None, and ``c``'s timed rounds owed from now, where its trial may start; else why not."""
        first, later = self.parts.get(c, (0.0, 0.0))
        if c in self.must:
            self.owed -= first   # paid from now, in the seconds spent
        else:
            spent = self.spent()
            if spent + first + later + self.owed > self.budget_s:
                self.refused.add(c)
                return (f"not timed: its trial (~{first + later:.2g} s) and the {self.owed:.2g} s owed to those "
                        f"started would pass the trials' share ({self.budget_s:.2g} s, {spent:.2g} s spent)")
            self.owed += later
        self.started.add(c)
        return None

    def refund(self, c) -> None:
        """``c``'s trial failed: its timed rounds are no longer owed."""
        if c in self.started:
            self.started.discard(c)
            self.owed -= self.parts.get(c, (0.0, 0.0))[1]

    def more(self, r: int) -> bool:
        now = self.now()
        if r > 1:
            self.last_round = now - self.round_start
        self.round_start = now
        return r <= 1 or self.spent() + self.last_round <= self.budget_s


def trial_plan(predicted: dict[Candidate, float], budget_s: float, steps_per_epoch: int, build_s: float = 0.0,
               steps: int = TRIAL_STEPS, rounds: int = TRIAL_ROUNDS, frame_build_s: float = 0.0,
               gpu: bool = False) -> dict[Candidate, tuple[float, float]]:
    """The candidates to time, within ``budget_s`` (the trials' share of the run, a bound: nothing is
    timed beyond it), each with its trial's expected seconds (:func:`_trial_parts`): the plain
    one-process loops (the ones every technique must beat, timed again beside the others; their
    trainers are warm from the prediction's measurement, so they pay their steps only, counted first),
    then, in predicted order, each candidate whose trial still fits. Empty when the share cannot time
    one candidate beside the plain loops: the prediction then chooses (:func:`resolve`)."""
    order = sorted(predicted, key=lambda c: (predicted[c], c.simplicity()))
    plain = {c: _trial_parts(c, predicted[c], steps_per_epoch, 0.0, steps, rounds, gpu=gpu) for c in order
             if c.plain}
    spent = sum(map(sum, plain.values()))
    others = {}
    for c in order:
        parts = _trial_parts(c, predicted[c], steps_per_epoch, build_s, steps, rounds, frame_build_s, gpu)
        if c not in plain and spent + sum(parts) <= budget_s:
            others[c] = parts
            spent += sum(parts)
    return {**plain, **others} if others else {}


def pick_trials(*args, **kwargs) -> list[Candidate]:
    """The candidates :func:`trial_plan` times, in its order."""
    return list(trial_plan(*args, **kwargs))


class TrialConfigs(dict):
    """Each candidate's config for its trials, made once: a group candidate's plan made by ``planned``
    once per worker count (with_plan's file is ``plan-<workers>.json``) and shared by the others."""

    def __init__(self, config, planned):
        super().__init__()
        self.config, self.planned, self.plans = config, planned, {}

    def __missing__(self, c: Candidate):
        cfg = chosen_config(self.config, c)
        if self.planned is not None and cfg.strategy_cls.needs_plan and c.workers in self.plans:
            cfg.options = dataclasses.replace(cfg.options, plan=self.plans[c.workers])
        elif self.planned is not None:
            cfg = self.planned(cfg)
            if cfg.strategy_cls.needs_plan and getattr(cfg.options, "plan", None):
                self.plans[c.workers] = cfg.options.plan
        self[c] = cfg
        return cfg


def run_candidates(store, config, model=None) -> list[Candidate]:
    """The candidates of the auto run ``config`` on ``store`` (:func:`candidates`), on its ``cores``
    (else the cores this process may use) or the GPUs visible, its run's refusals and carried options
    applied; in a carried sequence, frame sizes up to the sequence (at most the largest tried), not
    the unused window. ``model``: the run's model built (:func:`plain_model` by default)."""
    import torch

    from dynagnn.distributed.launch import available_cores
    from dynagnn.models import model_kind
    from dynagnn.train.predict import carried_snapshots

    kind = model_kind(config.model)
    model = plain_model(store, config) if model is None else model
    window = int(config.window)
    if kind == "snapshot":
        sequence = carried_snapshots(chosen_config(config, Candidate(PLAIN[kind])), store)
        window = min(sequence, max(FRAME_SIZES)) if sequence is not None else window
    gpus = torch.cuda.device_count() if config.device.startswith("cuda") else 0
    return candidates(kind, cores=int(config.options.cores or available_cores()), device=config.device, gpus=gpus,
                      window=window, refusal=run_refusal(store, config, model), given=carried(config))


def resolve(store_path, config, planned=None, steps: int = TRIAL_STEPS, rounds: int = TRIAL_ROUNDS) -> Choice:
    """The :class:`Choice` of the auto run ``config`` on ``store_path`` (module docstring).
    ``planned(config) -> config``: the config with a plan where its strategy trains by one (the
    API's :func:`~dynagnn.api.with_plan`); trials of a group candidate need it."""
    from dynagnn.data.store import open_store
    from dynagnn.distributed.launch import available_cores
    from dynagnn.train.predict import DEFAULT_LINK, measure_base, predict, spearman, with_predictor
    from dynagnn.train.trials import Trials

    o = config.options
    budget = parse_budget(o.memory_budget)
    t0 = time.perf_counter()
    store = open_store(store_path)
    model = plain_model(store, config)
    cores = int(o.cores or available_cores())
    cands = run_candidates(store, config, model)
    runnable = [c for c in cands if c.reason is None]
    if not runnable:
        reasons = "; ".join(sorted({f"{c.strategy}: {c.reason}" for c in cands}))
        raise ConfigError(f"auto: no strategy can train {config.model} on this store ({reasons})")
    if budget is None:
        budget_used, budget_from = free_memory(config.device), "free memory"
    else:
        budget_used, budget_from = budget, "--memory-budget"
    peak = peaks(store, config, runnable)
    fits = [c for c in runnable if peak[c] <= budget_used]
    if not fits:
        smallest = min(runnable, key=peak.get)
        raise ConfigError(f"memory budget {_mib(budget_used)} ({budget_from}) fits no candidate; the smallest, "
                          f"{smallest.label()}, needs {_mib(peak[smallest])}: give at least that (--memory-budget)")
    multi = [c for c in cands if c.processes > 1]
    if multi and not any(c.processes > 1 for c in fits):
        first = next(c for c in multi if c.reason) if any(c.reason for c in multi) else multi[0]
        log.info("auto: no candidate of several processes can train this run (%s: %s); one process only",
                 first.label(), first.reason or "over the memory budget")
    # the plain loop's trainers kept for its trials too, as many trainers as the budget holds at once
    with Trials(store_path, steps, rounds + 1, budget=budget_used) as live:
        configs = TrialConfigs(config, planned)

        def measure(c):
            return live.measure(c, configs[c], peak.get(c, 0.0))
        one = sorted((c for c in fits if c.processes == 1), key=lambda c: (peak[c], c.simplicity()))
        plain = [c for c in one if c.plain]
        base = measure_base(store, config, model, cores, measure, max(rounds, BASE_ROUNDS), cands=plain or one[:1] or None,
                            frame_sizes={dict(c.options).get("frame_size", 1) for c in fits
                                         if runs_frames(c.strategy)})
        link = DEFAULT_LINK
        if o.predictor:   # the profile stage's cost model and channel costs for this device
            base, link = with_predictor(base, o.predictor, store, config)
        predicted = {c: predict(c, base, link) for c in fits}
        expected = min(predicted.values()) * int(config.epochs)
        share_s = float(o.trial_share) * expected
        planned_trials = (trial_plan(predicted, share_s, base.steps, base.build_seconds, steps=steps, rounds=rounds,
                                     frame_build_s=base.frame_build_seconds, gpu=base.gpu)
                          if len(fits) > 1 else {})
        tried = list(planned_trials)
        t_trials = time.perf_counter()
        failed: dict[Candidate, str] = {}
        if not tried:   # one candidate, or a share that times none: the prediction chooses among one process's
            # (a prediction of several processes leaves out their start and their contention: only a trial
            # picks one, unless no candidate of one process fits)
            seconds = {c: predicted[c] for c in ([c for c in fits if c.processes == 1] or fits)}
            measured_peak = {}
        else:   # all interleaved again, the plain loop's trainers warm: no phase's load favours one
            clock = TrialClock(share_s, planned_trials, [c for c in tried if c.plain])
            seconds, measured_peak = trial_candidates(store_path, config, tried, steps=steps, rounds=rounds,
                                                      measure=measure, failed=failed, clock=clock)
            if not seconds and clock.refused:   # the plain loop's trial failed and the share timed no other:
                for c in clock.refused:         # the prediction chooses among those whose trial did not fail
                    failed.pop(c)
                seconds = {c: predicted[c] for c in fits if c.processes == 1 and c not in failed}
                tried = []
        trial_s = time.perf_counter() - t_trials
    if not seconds:
        raise ConfigError("auto: no candidate's trial ran: " + "; ".join(f"{c.label()}: {w}" for c, w in failed.items()))
    chosen, why = choose(seconds, {c: peak[c] for c in seconds}, budget_used)
    why.update(failed)
    for c in runnable:
        if c not in seconds and c not in why:
            why[c] = (f"predicted peak {_mib(peak[c])} over the budget {_mib(budget_used)}" if c not in fits else
                      f"predicted {predicted[c]:.3g} s/epoch, not among the best predicted the trials' share could time"
                      if tried else f"predicted {predicted[c]:.3g} s/epoch; several processes are chosen only on a "
                      f"trial, and the trials' share ({share_s:.2g} s) could time none")
    rep = report(cands, seconds, measured_peak, chosen, why, budget_used)
    for row, c in zip(rep["candidates"], cands):
        row["predicted_seconds"] = predicted.get(c)
        row["predicted_peak_bytes"] = peak.get(c)
        row["trial_seconds"] = seconds.get(c) if c in seconds and tried else None
        if not tried:   # the seconds it was chosen by are predictions, not a trial's
            row["epoch_seconds"] = None
    timed = [c for c in tried if c in seconds]
    rep.update({"memory_budget_from": budget_from, "cores": cores, "device": config.device,
                "trial_share": float(o.trial_share), "expected_training_seconds": expected,
                "chosen_by": "trials" if tried else "prediction",
                "trial_seconds_total": trial_s, "resolve_seconds_total": time.perf_counter() - t0,
                "spearman_predicted_vs_trials": (spearman([predicted[c] for c in timed], [seconds[c] for c in timed])
                                                 if len(timed) > 2 else None),   # two points always rank ±1
                "base": {"seconds_by_threads": {str(k): v for k, v in base.seconds.items()}, "steps": base.steps,
                         "agg_share": base.agg_share, "fwd_share": base.fwd_share, "link": link.to_dict(),
                         "predictor": o.predictor,
                         "trainer_build_seconds": base.build_seconds,
                         "frame_engine_build_seconds": base.frame_build_seconds}})
    line = summary_line(seconds, chosen, cands)
    if len(fits) == 1:   # nothing else could run: its epoch is the prediction, not a trial's
        line += " (predicted: the one candidate, not timed)"
    elif not tried:
        line += (f" (predicted: the trials' share of the run, {share_s:.2g} s, could time none beside the plain "
                 "loop's measurement)")
    # the config its trials ran (a group candidate's plan: trained by the plan it was timed with)
    return Choice(configs.get(chosen) or chosen_config(config, chosen), config, rep, line)


def previous_choice(out, config) -> Choice | None:
    """The choice a run in ``out`` made (its ``auto.json``), for ``--resume``: trained again as chosen,
    without new trials; None when ``out`` has none."""
    import json
    from pathlib import Path

    path = Path(out) / "auto.json"
    if not path.is_file():
        return None
    try:
        rep = json.loads(path.read_text())
        row = next(r for r in rep["candidates"] if r["chosen"])
        cand = Candidate.from_row(row)
    except (ValueError, KeyError, StopIteration, TypeError, AttributeError) as exc:
        raise ConfigError(f"{path}: not an auto.json a run wrote ({type(exc).__name__}); resume names a strategy "
                          "instead, or train anew") from None
    return Choice(chosen_config(config, cand), config, rep, f"auto: resuming {cand.label()} as {path} chose it")
