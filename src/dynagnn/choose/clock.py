"""The trials' share of a run: what each candidate's trial is expected to cost, the plan of which to
time (:func:`trial_plan`), and the share held as it is spent (:class:`TrialClock`).
"""

from __future__ import annotations

import time

from dynagnn.choose.candidates import Candidate, strategy_of
from dynagnn.train.strategies.frames import runs_frames

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
# what the full choice's measurements cost beyond their timed steps: two trainers of the plain loop
# built, the memory model's measured step of each strategy, the frames measured at start (issue 54's
# short cases on this 2-core machine: 1.7-4.7 s for the base, 0.9 s for the memory model)
MEASURE_SECONDS = 3.0


def full_choice_seconds(base, rounds: int = BASE_ROUNDS, steps: int = TRIAL_STEPS) -> float:
    """What measuring a run's base costs (:func:`~dynagnn.choose.predict.measure_base`: the plain
    loop at each thread count for ``rounds`` rounds and a warm-up round of ``steps`` steps and a
    warm-up step, and :data:`MEASURE_SECONDS`), from a quick base
    (:func:`~dynagnn.choose.predict.quick_base`): the least a choice by trials costs before its first
    trial."""
    n = min(steps, max(base.steps, 1))
    per_step = sum(base.seconds.values()) / max(base.steps, 1)
    return MEASURE_SECONDS + TRIAL_MARGIN * (rounds + 1) * (n + 1) * per_step


def _trial_parts(c: Candidate, predicted: float, steps_per_epoch: int, build_s: float = 0.0,
                 steps: int = TRIAL_STEPS, rounds: int = TRIAL_ROUNDS, frame_build_s: float = 0.0,
                 gpu: bool = False) -> tuple[float, float]:
    """Seconds a trial of ``c`` is expected to take, as (its warm-up round, its timed rounds): its
    ``rounds`` and a warm-up round of ``steps`` timed steps and a warm-up step per trainer built, its
    trainers' builds (``build_s``, the plain loop's, measured; a frames trainer's frame engine,
    ``frame_build_s``, measured at start, on top), its processes' start once and a plan where it needs
    one. A trainer is built once where :class:`~dynagnn.choose.trials.Trials` keeps it (one process on
    a CPU, not BGL's stages); else once per round. A job of several processes runs every round at its
    first (its timed rounds cost nothing later)."""
    per_step = predicted / max(steps_per_epoch, 1)
    n = min(steps, steps_per_epoch)
    start = LAUNCH_SECONDS if c.processes > 1 else 0.0
    plan = PLAN_SECONDS if strategy_of(c.strategy).needs_plan else 0.0
    build = build_s + (frame_build_s if runs_frames(c.strategy) else 0.0)
    once = c.processes > 1 or not (gpu or "sampled" in strategy_of(c.strategy).models)
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
