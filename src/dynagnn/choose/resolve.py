"""``--strategy auto`` (issue 30): a request resolved into the run of the chosen candidate.

:func:`resolve` turns a :class:`~dynagnn.choose.request.Request` into the run of the chosen candidate,
paying for the choice from the same share of the expected training as its trials (issue 54): a
choice remembered for the same store, run and machine is recalled (:func:`recalled_choice`,
:mod:`dynagnn.choose.remember`); a run too short to pay for measuring is chosen from one snapshot's
step timed (:func:`short_choice`); else the candidates enumerated (:mod:`dynagnn.choose.candidates`),
each one's epoch predicted (:mod:`dynagnn.choose.predict`) and its peak memory (:mod:`dynagnn.choose.memory_model`), the best
predicted that fit the budget timed within the trials' share (:func:`~dynagnn.choose.clock.trial_plan`,
and :class:`~dynagnn.choose.clock.TrialClock` as it is spent: a bound), the fastest measured chosen
(:func:`~dynagnn.choose.rule.choose`); where the share could time none beside the plain loop (a run of
a few seconds), the fastest predicted of one process. :func:`trial_candidates` times candidates on real
steps of the run (:mod:`dynagnn.choose.trials`), interleaved as the frame tuner's trials are
(:func:`dynagnn.schedule.tuner.interleaved`). The API (:func:`dynagnn.api.train`) calls it before
training and hands the engine the chosen config with the report (``auto.json``) to publish beside the
metrics; a group candidate's plan is made by the API's ``planned``.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass

from dynagnn.choose.candidates import (Candidate, check_run, chosen_config, plain_model,  # noqa: F401
                                       run_candidates)
from dynagnn.choose.clock import (BASE_ROUNDS, TRIAL_ROUNDS, TRIAL_STEPS, TrialClock, full_choice_seconds,
                                  trial_plan)
from dynagnn.choose.request import REPORT_FILE, parse_budget
from dynagnn.choose.rule import _mib, choose, report, summary_line
from dynagnn.cpu_load import free_cores
from dynagnn.errors import ConfigError, one_line
from dynagnn.train.strategies.frames import runs_frames

log = logging.getLogger("dynagnn")


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
    from dynagnn.choose.trials import Trials

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
    (:func:`dynagnn.choose.trials.epoch_seconds_of`)."""
    from dynagnn.choose.trials import epoch_seconds_of

    return ({c: epoch_seconds_of(got) for c, got in trials.items()},
            {c: max(t.peak_bytes for t in got) for c, got in trials.items()})



def free_memory(device: str) -> float:
    """The device's free memory in bytes: MemAvailable on a CPU, the allocator's free memory on a GPU."""
    if device.startswith("cuda"):
        import torch

        return float(torch.cuda.mem_get_info(torch.device(device))[0])
    import os

    from dynagnn.host_memory import proc_bytes

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



def peaks(store, config, cands: list[Candidate], frames: bool = True) -> dict[Candidate, float]:
    """Each candidate's predicted peak bytes (:func:`dynagnn.choose.memory_model.predict_peak_bytes`,
    ``frames`` as it takes it), one prediction per strategy, worker count and options (a process's
    memory is not its threads')."""
    import torch

    from dynagnn.choose.memory_model import predict_peak_bytes

    by: dict[tuple, float] = {}
    memo: dict = {}
    for c in cands:
        key = (c.strategy, c.workers, c.options)
        if key not in by:
            by[key] = float(predict_peak_bytes(store, chosen_config(config, c), memo, frames))
    if config.device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.empty_cache()   # the measurements' blocks back to the device: the trials size their caches by free memory
    return {c: by[(c.strategy, c.workers, c.options)] for c in cands}



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



def resolve(store_path, config, planned=None, steps: int = TRIAL_STEPS, rounds: int = TRIAL_ROUNDS) -> Choice:
    """The :class:`Choice` of the auto run ``config`` on ``store_path`` (module docstring).
    ``planned(config) -> config``: the config with a plan where its strategy trains by one (the
    API's :func:`~dynagnn.api.with_plan`); trials of a group candidate need it."""
    from dynagnn.data.store import open_store
    from dynagnn.distributed.launch import available_cores
    from dynagnn.choose.predict import DEFAULT_LINK, measure_base, predict, quick_base, spearman, with_predictor
    from dynagnn.choose import remember
    from dynagnn.choose.trials import Trials

    o = config.options
    budget = parse_budget(o.memory_budget)
    t0 = time.perf_counter()
    store = open_store(store_path)
    asked = int(o.cores or available_cores())
    key = remember.what(store, config, asked)
    cores, busy = free_cores(asked)
    recalled = None if o.choose_again else recalled_choice(key, config, budget, t0, cores)
    if recalled is not None:
        return recalled
    if cores < asked:   # measured at the cores the others leave: a busy core's threads time the contention
        log.info("auto: other jobs keep %.1f cores busy: choosing among candidates of %d of the %d cores, not "
                 "remembered", busy, cores, asked)
        config = dataclasses.replace(config, options=dataclasses.replace(o, cores=cores))
        key = None
    model = plain_model(store, config)
    cands = run_candidates(store, config, model)
    runnable = [c for c in cands if c.reason is None]
    if not runnable:
        reasons = "; ".join(sorted({f"{c.strategy}: {c.reason}" for c in cands}))
        raise ConfigError(f"auto: no strategy can train {config.model} on this store ({reasons})")
    if budget is None:
        budget_used, budget_from = free_memory(config.device), "free memory"
    else:
        budget_used, budget_from = budget, "--memory-budget"
    multi = [c for c in cands if c.processes > 1]
    multi_runnable = [c for c in multi if c.reason is None]
    if multi and not multi_runnable:
        log.info("auto: no candidate of several processes can train this run (%s: %s); one process only",
                 multi[0].label(), multi[0].reason)
    quick = quick_base(store, config, model, cores)
    if quick is not None:
        choice = short_choice(store, config, model, cands, quick, budget_used, cores, t0)
        if choice is not None:
            choice.report.update(memory_budget_from=budget_from, cores_asked=asked, others_busy_cores=busy)
            if key is not None:
                remember.remember(key, next(r for r in choice.report["candidates"] if r["chosen"]), choice.report)
            return choice
    peak = peaks(store, config, runnable)
    fits = [c for c in runnable if peak[c] <= budget_used]
    if not fits:
        smallest = min(runnable, key=peak.get)
        raise ConfigError(f"memory budget {_mib(budget_used)} ({budget_from}) fits no candidate; the smallest, "
                          f"{smallest.label()}, needs {_mib(peak[smallest])}: give at least that (--memory-budget)")
    if multi_runnable and not any(c.processes > 1 for c in fits):
        log.info("auto: no candidate of several processes fits the memory budget (%s needs %s); one process only",
                 multi_runnable[0].label(), _mib(peak[multi_runnable[0]]))
    # the plain loop's trainers kept for its trials too, as many trainers as the budget holds at once
    with Trials(store_path, steps, rounds + 1, budget=budget_used) as live:
        configs = TrialConfigs(config, planned)

        def measure(c):
            return live.measure(c, configs[c], peak.get(c, 0.0))
        one = sorted((c for c in fits if c.processes == 1), key=lambda c: (peak[c], c.simplicity()))
        plain = [c for c in one if c.plain]
        base = measure_base(store, config, model, cores, measure, max(rounds, BASE_ROUNDS), cands=plain or one[:1] or None,
                            frame_sizes=_frame_sizes(fits))
        link = DEFAULT_LINK
        if o.predictor:   # the profile stage's cost model and channel costs for this device
            base, link = with_predictor(base, o.predictor, store, config)
        predicted = {c: predict(c, base, link) for c in fits}
        expected = min(predicted.values()) * int(config.epochs)
        # the share bounds the whole choice: what its measurements spent is not the trials' to spend
        share_s = max(0.0, float(o.trial_share) * expected - (time.perf_counter() - t0))
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
    rep.update({"source": "trials" if tried else "prediction", "memory_budget_from": budget_from, "cores": cores,
                "cores_asked": asked, "others_busy_cores": busy,
                "device": config.device,
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
    if key is not None:
        remember.remember(key, next(r for r in rep["candidates"] if r["chosen"]), rep)
    # the config its trials ran (a group candidate's plan: trained by the plan it was timed with)
    return Choice(configs.get(chosen) or chosen_config(config, chosen), config, rep, line)


def _frame_sizes(cands) -> set[int]:
    return {dict(c.options).get("frame_size", 1) for c in cands if runs_frames(c.strategy)}


#: what the short path may spend measuring the frames, a share of the predicted training: what they
#: save where they win (the fastest in 9 of the epoch-regret matrix's 11 snapshot cases, saving 17% of
#: the plain loop's epoch at the median of those, 24% at the upper quartile, 38% at most), so that the
#: measurement pays for itself where they do. The trials' share (10%) left out england_covid's T-GCN
#: (20 epochs, 0.5 s of training), where frames save 38% and measuring them costs 0.07-0.09 s; a fifth
#: missed it by a millisecond of estimate
FRAMES_SAVING = 0.25
def frames_budget(share_s: float, expected_s: float) -> float:
    """What the short path may spend measuring the frames of a run of ``expected_s`` predicted
    training whose trials' share is ``share_s`` seconds: :data:`FRAMES_SAVING` of it, or the share
    where that is more; nothing where the share is nothing (a run that pays for no choosing)."""
    return max(share_s, FRAMES_SAVING * expected_s) if share_s > 0 else 0.0


#: the short path's margin on a peak predicted without the frames' own measurement
SHORT_MARGIN = 2.0
#: predictions from one snapshot's step within 10% of each other are a tie: that step times the
#: thread counts apart from the trainer's own serial work, and on issue 54's matrix its 1-against-2
#: thread call flipped between runs of the same case (1.25-1.5x either way)
QUICK_TIE = 0.10


#: frames and the plain loop at the same threads tie within 3% on the short path, not QUICK_TIE: their
#: ratio is measured on one range, the two interleaved, not as two one-snapshot steps at different
#: thread counts (its rounds moved 0.68-0.76x on CollegeMsg daily's WD-GCN). At QUICK_TIE blad_group's
#: WD-GCN frames, 0.83-0.92x the plain loop measured so and 1.32x faster by the exhaustive search,
#: tied the plain loop in 2 of 3 runs
FRAMES_TIE = 0.03
#: what a candidate of fewer threads must beat the others by, beyond the tie, on the short path: one
#: snapshot's step timed 2 threads 0.51-0.78 s an epoch between runs of churn MPNN-LSTM, whose
#: 1-thread pick then took 115.6 s against 78.5 s at 2; a wrong call the other way cost these tiny
#: graphs a few per cent (england_covid: 5.8 s at 2 threads, 6.2 s at 1)
QUICK_FEWER = 0.15


def _quick_key(c: Candidate) -> tuple:
    """The short path's tie-break: the simpler, then the more threads (all the cores were the
    fastest in 9 of the epoch-regret matrix's 13 cases)."""
    return (*c.simplicity(), -c.threads)


def short_choice(store, config, model, cands: list[Candidate], quick, budget: float, cores: int,
                 t0: float) -> Choice | None:
    """The choice of a run too short to pay for a choice by trials (issue 54), or None for one long
    enough: where the trials' share of the training the quick base predicts
    (:func:`~dynagnn.choose.predict.quick_base`, one snapshot's step timed, no trainer built) is less
    than what measuring the base would cost (:func:`~dynagnn.choose.clock.full_choice_seconds`), the
    fastest predicted candidate of one process whose predicted peak fits the budget (a tie to the
    simpler), decided from that prediction alone, with what it pays once (the frame engine's build)
    spread over the run's epochs; None too where none of one process fits. The frames' saving is
    measured only where that costs at most what they are expected to save (:data:`FRAMES_SAVING` of
    the predicted training; none where the trials' share is 0), at one size
    (:func:`~dynagnn.choose.predict.quick_frames`); frames not measured are no candidates here."""
    from dynagnn.choose.predict import predict, quick_frames

    one = [c for c in cands if c.reason is None and c.processes == 1]
    if not one:
        return None
    predicted = {c: predict(c, quick) for c in one}
    expected = min(predicted.values()) * int(config.epochs)
    full = full_choice_seconds(quick)
    share_s = float(config.options.trial_share) * expected
    if full <= share_s:
        return None
    short = (f"the run is too short to pay for trials: {share_s:.2g} s of choosing (the trials' share of "
             f"{expected:.2g} s of predicted training) against {full:.2g} s to measure the base")
    quick, not_measured = quick_frames(quick, store, config, model, _frame_sizes(one),
                                       frames_budget(share_s, expected))
    unmeasured = {c: not_measured or "frames not measured at this size (the short path measures the largest "
                  "a frame's span holds)" for c in one if runs_frames(c.strategy) and quick.frame_saving(c) is None}
    one = [c for c in one if c not in unmeasured]
    if not one:   # nothing it measured can run: the full choice measures them
        return None
    predicted = {c: predict(c, quick) for c in one}
    expected = min(predicted.values()) * int(config.epochs)
    # a short run counts what a candidate pays once, per epoch of the run: the frame engine's build
    # over the store (measured at start) outweighs the frames' saving on a run of 15 epochs of 20 ms
    once = {c: quick.frame_build_seconds if runs_frames(c.strategy) else 0.0 for c in one}
    most = max(c.threads for c in one)
    left, peak, why = {c: (predicted[c] + once[c] / int(config.epochs)) * (1 + QUICK_FEWER * (c.threads < most))
                       for c in one}, {}, {}
    cost, beaten = dict(left), {}
    for c in [c for c in left if c.plain]:   # frames against the plain loop at its threads: FRAMES_TIE
        twins = [f for f in left if runs_frames(f.strategy) and f.threads == c.threads]
        faster = min(twins, key=left.get) if twins else None
        if faster is not None and left[faster] < left[c] * (1 - FRAMES_TIE):
            why[c] = (f"{predicted[c]:.3g} s/epoch; {faster.label()} is {left[c] / left[faster]:.2f}x faster at its "
                      "threads, measured on the same range")
            beaten[c] = faster
            del left[c]
    while left:
        chosen, _ = choose(left, {}, None, QUICK_TIE, _quick_key)
        # frames' own measurement only where the estimate without it comes within half the budget
        peak.update(peaks(store, config, [chosen], frames=False))
        if peak[chosen] > budget / SHORT_MARGIN:
            peak.update(peaks(store, config, [chosen]))
        if peak[chosen] <= budget:
            break
        why[chosen] = f"predicted peak {_mib(peak[chosen])} over the budget {_mib(budget)}"
        del left[chosen]
        for c in [c for c, f in beaten.items() if f == chosen]:   # what it beat is a candidate again
            left[c] = cost[c]
            why.pop(c)
    else:   # none of one process fits: several may (each holds its share), which only the full choice weighs
        log.info("auto: no candidate of one process fits the memory budget %s; choosing among all", _mib(budget))
        return None
    _, ranked = choose(left, {}, None, QUICK_TIE, _quick_key)
    why.update(ranked)
    why.update(unmeasured)
    for c in cands:
        if c.reason is None and c not in predicted and c not in unmeasured:
            why[c] = f"several processes are chosen only on a trial, and {short}"
    rep = report(cands, {}, {}, chosen, why, budget)
    for row, c in zip(rep["candidates"], cands):
        row.update(predicted_seconds=predicted.get(c), predicted_peak_bytes=peak.get(c), trial_seconds=None,
                   once_seconds=once.get(c))
    rep.update({"source": "prediction", "chosen_by": "prediction",
                "cores": cores, "device": config.device, "trial_share": float(config.options.trial_share),
                "expected_training_seconds": expected, "full_choice_estimate_seconds": full,
                "trial_seconds_total": 0.0, "resolve_seconds_total": time.perf_counter() - t0,
                "spearman_predicted_vs_trials": None,
                "base": {"seconds_by_threads": {str(k): v for k, v in quick.seconds.items()}, "steps": quick.steps,
                         "agg_share": quick.agg_share, "fwd_share": quick.fwd_share, "quick": True}})
    line = summary_line(predicted, chosen, cands) + f" (predicted from one snapshot's step: {short})"
    return Choice(chosen_config(config, chosen), config, rep, line)


def remembered_choice(store, config) -> Choice | None:
    """The choice remembered for the auto run ``config`` on ``store`` (an open store), or None (none,
    one not to trust, or ``choose_again``): what :func:`resolve` would recall first."""
    from dynagnn.choose import remember
    from dynagnn.distributed.launch import available_cores

    o = config.options
    if o.choose_again:
        return None
    asked = int(o.cores or available_cores())
    key = remember.what(store, config, asked)
    t0 = time.perf_counter()
    return recalled_choice(key, config, parse_budget(o.memory_budget), t0, free_cores(asked)[0])


def recalled_choice(key: dict, config, budget: float | None, t0: float, cores: int | None = None) -> Choice | None:
    """The remembered choice of ``key`` (:mod:`dynagnn.choose.remember`) as this run's, or None: none
    remembered, one stale or damaged, one whose strategy is gone, one whose predicted peak no longer
    fits the memory budget, or one that needs more than the ``cores`` other jobs leave free
    (:func:`dynagnn.cpu_load.free_cores`) (each logged, and chosen anew)."""
    from dynagnn.choose.remember import path_of, recall

    entry = recall(key)
    if entry is None:
        return None
    row = entry["chosen"]
    try:
        cand = Candidate.from_row(row)
        cfg = chosen_config(config, cand)
    except (ConfigError, KeyError, TypeError, ValueError, AttributeError) as exc:
        log.warning("auto: the remembered choice %s cannot be trained now (%s): choosing anew", row.get("label"),
                    one_line(exc))
        return None
    if cores is not None and cand.processes * cand.threads > cores:
        log.info("auto: the remembered choice %s needs %d cores; other jobs leave %d free now: choosing anew",
                 cand.label(), cand.processes * cand.threads, cores)
        return None
    need = row.get("predicted_peak_bytes") or 0.0
    free = budget if budget is not None else free_memory(config.device)
    if need > free:
        log.info("auto: the remembered choice %s needs %s, over the budget %s now: choosing anew", cand.label(),
                 _mib(need), _mib(free))
        return None
    rep = dict(entry.get("report") or {})
    rep.update({"source": "remembered", "remembered_from": str(path_of(key)),
                "remembered_chosen_by": rep.get("chosen_by"), "trial_seconds_total": 0.0,
                "resolve_seconds_total": time.perf_counter() - t0})
    return Choice(cfg, config, rep, f"auto: {cand.label()}, remembered (chosen by {rep.get('chosen_by')} for the "
                  f"same store, run and machine; --choose-again to choose anew)")



def previous_choice(out, config) -> Choice | None:
    """The choice a run in ``out`` made (its ``auto.json``), for ``--resume``: trained again as chosen,
    without new trials; None when ``out`` has none."""
    import json
    from pathlib import Path

    path = Path(out) / REPORT_FILE
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
