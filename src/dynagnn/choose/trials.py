"""Trials: real training steps of a candidate configuration, timed without touching the run (issue 30).

The chooser (:mod:`dynagnn.choose.resolve`) times its best candidates on the run's own data
before training. A trial builds its own trainer for the candidate (the same seed, so the same initial
weights), runs a warm-up step and then ``steps`` steps spread evenly over the epoch's steps, each
timed on every process (a kept trainer's later rounds without the warm-up step), and returns the
epoch time they predict (the median step times the epoch's
step count) and the memory it took above the start (on a CPU the RSS grown by the trial's end, not
its peak, which a process cannot reset; on a GPU the allocator's peak).

:func:`run_trial` is one such trial. :class:`Trials` times candidates round after round, as the
chooser's interleaved rounds ask: a one-process candidate on a CPU keeps its trainer from one round to
the next (built once: a trainer's start, loading the store and the task, costs more than a few steps
of a small run), and a candidate of several processes runs all its rounds in one job of its own
(:func:`dynagnn.distributed.launch.launch`: a process's start is paid once), a step ending with its
slowest rank. A one-process trial runs here, inside a saved and restored random state (torch's,
numpy's) and thread count, so the run that trains afterwards draws exactly what it would have drawn
without the trial; its weights and optimiser are its own and never seen by a trial.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from dynagnn.distributed.launch import launch
from dynagnn.host_memory import current_rss_bytes
from dynagnn.train.engine import Trainer, caller_state_kept
from dynagnn.train.run_config import TrainConfig, run_keys


@dataclass(frozen=True)
class Trial:
    """What a trial measured: each timed step's seconds (rank 0's; the slowest rank's on a job of
    several), the epoch's step count, and the peak memory above the start in bytes (the largest over
    the processes)."""

    step_seconds: tuple[float, ...]
    steps_per_epoch: int
    peak_bytes: float

    @property
    def epoch_seconds(self) -> float:
        return statistics.median(self.step_seconds) * self.steps_per_epoch


def candidate_config(config, strategy: str, workers: int, threads: int, options: dict) -> TrainConfig:
    """``config``'s shared keys (a request's, or a TrainConfig's) with another strategy, worker count,
    thread count and options (the candidate's; the run's own strategy options do not carry over). The
    keys are routed, not validated again: the request's were at its front door, and a candidate's
    options are the values its strategy declares (the schema check costs 8 ms a candidate)."""
    shared = {f: getattr(config, f) for f in run_keys()}
    return TrainConfig.from_dict({**shared, "strategy": strategy, "workers": int(workers), "threads": int(threads),
                                  **options}, where="auto candidate", validate=False)


def _picks(n: int, steps: int) -> list[int]:
    """``steps`` step indices spread evenly over an epoch of ``n`` (all of them when n <= steps)."""
    if n <= steps:
        return list(range(n))
    return sorted({int(round(i * (n - 1) / (steps - 1))) for i in range(steps)}) if steps > 1 else [0]


def epoch_seconds_of(rounds: list[Trial]) -> float:
    """The epoch seconds a candidate's timed rounds predict: the per-step medians over the rounds
    summed (the frame tuner's :func:`~dynagnn.schedule.tuner.trial_seconds`) and scaled from the timed
    steps to the epoch's step count."""
    from dynagnn.schedule.tuner import trial_seconds

    return trial_seconds([t.step_seconds for t in rounds]) / len(rounds[0].step_seconds) * rounds[0].steps_per_epoch


def _memory_now(gpu: bool) -> float:
    return float(torch.cuda.memory_allocated() if gpu else current_rss_bytes())


def _build(ctx, store_path, config: TrainConfig) -> Trainer:
    from dynagnn.distributed.comm import Comm

    if config.device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    tr = Trainer(store_path, config, progress=False, ctx=ctx, comm=Comm(ctx) if ctx is not None else None,
                 checked=ctx is not None)
    tr.model.train()
    tr.head.train()
    tr.run.epoch = 0
    tr.strategy.start_epoch(0)
    return tr


def _timed_steps(tr: Trainer, steps: int, warm: bool = True) -> tuple[list[float], int]:
    """(the seconds of ``steps`` steps spread over the epoch, the epoch's steps), after a warm-up step
    where ``warm`` (a trainer's first round; a later round of a kept trainer follows its own earlier
    steps: its first step ran at 0.94-0.99x the others' median, after another candidate's round at
    another thread count, on CollegeMsg's T-GCN and twitter_tennis's carried EvolveGCN-O)."""
    gpu = tr.config.device.startswith("cuda")
    sync = torch.cuda.synchronize if gpu else (lambda: None)
    all_steps = tr.step_ends()
    picks = _picks(len(all_steps), steps)
    seconds = []
    for k, i in enumerate([picks[0]] * warm + picks):   # the first, again, where warm: a warm-up left out
        tr.optimizer.zero_grad(set_to_none=True)
        sync()
        t0 = time.perf_counter()
        tr.strategy.train_step(all_steps[i])
        tr.optimizer.step()
        sync()
        if k >= warm:
            seconds.append(time.perf_counter() - t0)
    return seconds, len(all_steps)


def _peak(gpu: bool, before: float) -> float:
    return float(max((torch.cuda.max_memory_allocated() if gpu else current_rss_bytes()) - before, 0))


def _trial_here(ctx, store_path, config: TrainConfig, steps: int, rounds: int = 1) -> list[tuple[list[float], int, float]]:
    """One process's trial of ``rounds`` rounds on one trainer: per round (its timed steps' seconds,
    the epoch's step count, its peak bytes above the start)."""
    gpu = config.device.startswith("cuda")
    before = _memory_now(gpu)
    tr = _build(ctx, store_path, config)
    try:
        out = []
        for r in range(rounds):
            seconds, n = _timed_steps(tr, steps, warm=r == 0)
            out.append((seconds, n, _peak(gpu, before)))
        return out
    finally:
        tr.strategy.close()


def _trial_of(results: list, r: int) -> Trial:
    """Round ``r`` of a job's per-rank results: a step ends with its slowest rank."""
    slowest = [max(rank[r][0][i] for rank in results) for i in range(len(results[0][r][0]))]
    return Trial(tuple(slowest), results[0][r][1], max(rank[r][2] for rank in results))


def run_trial(store_path, config: TrainConfig, steps: int = 4) -> Trial:
    """The trial of ``config`` (a candidate's, :func:`candidate_config`) on ``store_path`` (module
    docstring): ``steps`` timed steps after a warm-up."""
    return _run(store_path, config, steps, 1)[0]


def _run(store_path, config: TrainConfig, steps: int, rounds: int) -> list[Trial]:
    procs = int(config.workers) * config.strategy_cls.procs_per_worker
    if procs == 1:
        with caller_state_kept():
            return [Trial(tuple(s), n, p) for s, n, p in _trial_here(None, store_path, config, steps, rounds)]
    results = launch(_trial_here, int(config.workers), store_path, config, steps, rounds, device=config.device,
                     threads=config.threads, procs_per_worker=config.strategy_cls.procs_per_worker)
    return [_trial_of(results, r) for r in range(rounds)]


def _quiesce(strategy) -> None:
    """Stop the producer threads of a kept trainer's pipelined feed (:class:`~dynagnn.train.pipeline.
    Prefetcher`, on the strategy or its engine) between its rounds: one left running would prepare its
    next items, and hold the interpreter's shortened switch interval, while another candidate is timed.
    Its next round prepares inline until the feed is scheduled again, as the spread-out steps of a
    trial mostly do anyway (they are not the order the feed prepares)."""
    from dynagnn.train.pipeline import Prefetcher

    for obj in (strategy, *vars(strategy).values()):
        for value in (vars(obj).values() if hasattr(obj, "__dict__") else ()):
            if isinstance(value, Prefetcher):
                value.close()


class Trials:
    """Candidates timed round after round on ``store_path`` (module docstring): ``measure(key, config)``
    is the next round of the candidate ``key`` trains by ``config`` (each key's config is its first);
    ``rounds``: how many a candidate of several processes will be asked for (its job runs them all at
    its first). :meth:`close` releases the kept trainers."""

    def __init__(self, store_path, steps: int = 4, rounds: int = 3, budget: float | None = None):
        self.store_path, self.steps, self.rounds, self.budget = store_path, int(steps), int(rounds), budget
        self.kept: dict = {}       # key -> (trainer, the memory its first round took)
        self.queued: dict = {}     # key -> the rounds of its job not handed out yet
        self.held = 0.0            # the predicted peaks of the kept trainers

    def measure(self, key, config: TrainConfig, peak: float = 0.0) -> Trial:
        """The next round of candidate ``key``'s trial; ``peak``: its predicted peak bytes (a trainer
        is kept only while the kept ones' peaks fit ``budget``: else it is built for each round)."""
        procs = int(config.workers) * config.strategy_cls.procs_per_worker
        # a job of its own; a GPU's peak per trial; BGL's stages, whose sampler processes and fetch
        # thread a kept trainer would leave running beside the next candidate's steps; a trainer the
        # memory budget cannot hold beside those kept
        over = self.budget is not None and key not in self.kept and self.held + peak > self.budget
        if procs > 1 or config.device.startswith("cuda") or "sampled" in config.strategy_cls.models or over:
            if not self.queued.get(key):
                self.queued[key] = _run(self.store_path, config, self.steps, self.rounds if procs > 1 else 1)
            return self.queued[key].pop(0)
        with caller_state_kept():
            torch.set_num_threads(int(config.threads or torch.get_num_threads()))
            first = key not in self.kept
            if first:
                before = _memory_now(False)
                self.kept[key] = (_build(None, self.store_path, config), before)
                self.held += peak
            tr, took = self.kept[key]
            try:
                seconds, n = _timed_steps(tr, self.steps, warm=first)
            finally:
                _quiesce(tr.strategy)
            if first:   # the RSS its build and first round added (later rounds' RSS holds the others' too)
                took = _peak(False, took)
                self.kept[key] = (tr, took)
            return Trial(tuple(seconds), n, took)

    def close(self) -> None:
        for tr, _ in self.kept.values():
            tr.strategy.close()
        self.kept.clear()
        self.held = 0.0

    def __enter__(self) -> "Trials":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["Trial", "Trials", "candidate_config", "epoch_seconds_of", "run_trial"]
