"""The chooser's candidates and its rule (issue 30, ``--strategy auto``; this module is its first part).

:func:`candidates` enumerates, from the strategy registry, every way to train a run on the cores or
devices given: each strategy that is not a paper's baseline (``Strategy.baseline_of``), at each
worker count the machine allows, with the options that change its speed (frame size, checkpoint
blocks, transfer), and the processes against threads split of the cores. A candidate that cannot run
is kept with its reason (the model's contract rules the strategy out, the store has too few
snapshots or vertices for the workers, a GPU-only strategy on a CPU), never dropped silently.

:func:`choose` is the rule the trials end with: the fastest measured candidate whose peak memory fits
the budget; a tie (within :data:`TIE`) goes to the simpler one (fewer processes, then the plainer
strategy: :data:`SIMPLER`); a budget below every candidate is one line naming the smallest budget
that would fit.

:func:`trial_candidates` times candidates on real steps of the run (:mod:`dynagnn.train.trials`),
interleaved as the frame tuner's trials are (:func:`dynagnn.schedule.tuner.interleaved`), and gives
:func:`choose` its epoch seconds and peak memory.

:func:`report` is what ``auto.json`` holds and :func:`summary_line` the log line.

Not yet here: the predictions of epoch time and memory that pick which candidates to try, and the
``auto`` strategy itself, which will write that report beside a run's metrics (issue 30).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dynagnn.errors import ConfigError

# plainest first: a tie goes to the one earlier here (less machinery to trust)
SIMPLER = ("sequential", "frames", "vertex", "snapshot", "group", "group_frames", "events", "tgnn", "sampled")
TIE = 0.02          # measured epochs within 2% of each other are a tie
FRAME_SIZES = (2, 4, 8, 16)
CHECKPOINT_BLOCKS = (1, 2, 4)


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

    def label(self) -> str:
        opts = ", ".join(f"{k}={v}" for k, v in self.options)
        return f"{self.strategy} {self.workers}x{self.procs}x{self.threads}t" + (f" ({opts})" if opts else "")

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


def _option_sets(cls, window: int, device: str) -> list[tuple[tuple[str, object], ...]]:
    """The speed options of strategy class ``cls`` worth trying (those it declares)."""
    declared = set(cls.Options.declared()) - set(cls.fixed)
    sets: list[tuple[tuple[str, object], ...]] = [()]
    if "frame_size" in declared:
        sets = [(("frame_size", s),) for s in FRAME_SIZES if s <= max(window, 1)] or [(("frame_size", 1),)]
    if "checkpoint_blocks" in declared and "frame_size" not in declared:
        sets = [o + ((("checkpoint_blocks", b),) if b > 1 else ()) for o in sets for b in CHECKPOINT_BLOCKS
                if b <= max(window, 1)]
    if "transfer" in declared and device != "cpu":   # a difference pays across PCIe, never on a CPU (docs/gpu.md)
        sets = [o + t for o in sets for t in ((), (("transfer", "diff"),))]
    return sets


def candidates(model_kind: str, *, cores: int, device: str = "cpu", gpus: int = 0, window: int = 4,
               refusal=None) -> list[Candidate]:
    """Every candidate of a run (module docstring). ``model_kind``: the kind of the run's model
    (``snapshot``, ``event``, ``sampled``); ``cores``: the CPU cores the run may use; ``gpus``: the
    devices on a GPU (a worker per GPU); ``refusal(strategy_class, workers) -> str | None``: why the
    run's model, task and store rule that strategy out at that worker count (the contract check and
    the strategy's own ``check``), None where it can run."""
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
        else:   # a worker per GPU; BLAD's two processes share one
            splits = [(w, max(1, cores // (w * cls.procs_per_worker))) for w in range(1, max(gpus, 1) + 1)]
        for workers, threads in splits:
            why = None
            if cls.gpu_only and device == "cpu":
                why = f"{name} pays only on a GPU"
            elif refusal is not None:
                why = refusal(cls, workers)
            for opts in _option_sets(cls, window, device):
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
                     measure=None) -> tuple[dict[Candidate, float], dict[Candidate, float]]:
    """({candidate: predicted epoch seconds}, {candidate: peak bytes}) of the candidates that can run,
    each timed ``rounds`` times on ``steps`` real steps after a warm-up round, interleaved; an epoch's
    seconds are the per-step medians over the rounds, summed and scaled to the epoch's step count (the
    frame tuner's :func:`~dynagnn.schedule.tuner.trial_seconds`). ``measure(candidate) -> Trial``
    replaces the real trial (tests inject timings)."""
    from dynagnn.schedule.tuner import interleaved, trial_seconds
    from dynagnn.train.trials import candidate_config, run_trial

    runnable = [c for c in cands if c.reason is None]
    if measure is None:
        def measure(c: Candidate):
            return run_trial(store_path, candidate_config(config, c.strategy, c.workers, c.threads, dict(c.options)),
                             steps=steps)
    trials = interleaved(runnable, measure, rounds)
    seconds = {c: trial_seconds([t.step_seconds for t in got]) / len(got[0].step_seconds) * got[0].steps_per_epoch
               for c, got in trials.items()}
    return seconds, {c: max(t.peak_bytes for t in got) for c, got in trials.items()}


def run_refusal(store, config, model):
    """The ``refusal`` of :func:`candidates` for a run of ``config`` on ``store`` with ``model`` (built):
    the model's contract (:meth:`Strategy.model_refusal`, checked at the run's widths), then the
    strategy's own check at that worker count (too few vertices or snapshots for the workers, a window
    too short to split): its one-line ConfigError is the candidate's reason."""
    from dynagnn.models.contract import check_contract
    from dynagnn.train.trials import candidate_config

    contract = check_contract(type(model), config.model, model.in_dim, model.hidden_dim)

    def why(cls, workers: int) -> str | None:
        refused = cls.model_refusal(type(model), contract)
        if refused:
            return refused
        try:
            cls(candidate_config(config, cls.name, workers, 1, {})).check(model, store, workers)
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
    for c in cands:
        if c.reason and c.strategy not in refused and not any(o.strategy == c.strategy for o in seconds):
            refused[c.strategy] = c.reason
    parts += [f"{name} refused: {reason}" for name, reason in refused.items()]
    return "auto: " + "; ".join(parts)
