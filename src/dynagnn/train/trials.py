"""Trials: real training steps of a candidate configuration, timed without touching the run (issue 30).

The chooser (:mod:`dynagnn.train.strategies.auto`) times its best candidates on the run's own data
before training. A trial builds its own trainer for the candidate (the same seed, so the same initial
weights), runs a warm-up step and then ``steps`` steps spread evenly over the epoch's steps, each
timed on every process, and returns the epoch time they predict (the median step times the epoch's
step count) and the memory it took above the start (on a CPU the RSS grown by the trial's end, not
its peak, which a process cannot reset; on a GPU the allocator's peak). A
candidate of several processes runs as its own job (:func:`dynagnn.distributed.launch.launch`); one
of one process runs here, inside a saved and restored random state (torch's, numpy's) and thread
count, so the run that trains afterwards draws exactly what it would have drawn without the trial;
its weights and optimiser are its own and never seen by a trial.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from dynagnn.distributed.launch import launch
from dynagnn.timing import current_rss_bytes
from dynagnn.train.engine import Trainer, caller_state_kept
from dynagnn.train.run_config import TrainConfig, shared_fields


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


def candidate_config(config: TrainConfig, strategy: str, workers: int, threads: int, options: dict) -> TrainConfig:
    """``config``'s shared keys with another strategy, worker count, thread count and options (the
    candidate's; the run's own strategy options do not carry over)."""
    shared = {f: getattr(config, f) for f in shared_fields()}
    return TrainConfig.from_dict({**shared, "strategy": strategy, "workers": int(workers), "threads": int(threads),
                                  **options}, where="auto candidate")


def _picks(n: int, steps: int) -> list[int]:
    """``steps`` step indices spread evenly over an epoch of ``n`` (all of them when n <= steps)."""
    if n <= steps:
        return list(range(n))
    return sorted({int(round(i * (n - 1) / (steps - 1))) for i in range(steps)}) if steps > 1 else [0]


def _trial_here(ctx, store_path, config: TrainConfig, steps: int) -> tuple[list[float], int, float]:
    """One process's trial: (its timed steps' seconds, the epoch's step count, its peak bytes)."""
    from dynagnn.distributed.comm import Comm

    gpu = config.device.startswith("cuda")
    before = torch.cuda.memory_allocated() if gpu else current_rss_bytes()
    if gpu:
        torch.cuda.reset_peak_memory_stats()
    tr = Trainer(store_path, config, progress=False, ctx=ctx, comm=Comm(ctx) if ctx is not None else None,
                 checked=ctx is not None)
    try:
        tr.model.train()
        tr.head.train()
        tr.run.epoch = 0
        tr.strategy.start_epoch(0)
        all_steps = tr.step_ends()
        picks = _picks(len(all_steps), steps)
        seconds = []
        for k, i in enumerate([picks[0]] + picks):   # the first, again: a warm-up left out
            tr.optimizer.zero_grad(set_to_none=True)
            sync = torch.cuda.synchronize if gpu else (lambda: None)
            sync()
            t0 = time.perf_counter()
            tr.strategy.train_step(all_steps[i])
            tr.optimizer.step()
            sync()
            if k:
                seconds.append(time.perf_counter() - t0)
        peak = (torch.cuda.max_memory_allocated() if gpu else current_rss_bytes()) - before
        return seconds, len(all_steps), float(max(peak, 0))
    finally:
        tr.strategy.close()


def run_trial(store_path, config: TrainConfig, steps: int = 4) -> Trial:
    """The trial of ``config`` (a candidate's, :func:`candidate_config`) on ``store_path`` (module
    docstring): ``steps`` timed steps after a warm-up."""
    procs = int(config.workers) * config.strategy_cls.procs_per_worker
    if procs == 1:
        with caller_state_kept():
            seconds, n, peak = _trial_here(None, store_path, config, steps)
        return Trial(tuple(seconds), n, peak)
    results = launch(_trial_here, int(config.workers), store_path, config, steps, device=config.device,
                     threads=config.threads, procs_per_worker=config.strategy_cls.procs_per_worker)
    slowest = [max(r[0][i] for r in results) for i in range(len(results[0][0]))]   # a step ends with its slowest rank
    return Trial(tuple(slowest), results[0][1], max(r[2] for r in results))


__all__ = ["Trial", "candidate_config", "run_trial"]
