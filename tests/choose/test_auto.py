"""The chooser's candidates and rule (issue 30, first part): every non-baseline strategy of the registry
at each worker count the cores allow, with its speed options, the ones that cannot run kept with their
reason; with injected timings the choice is the fastest that fits the budget, ties go to the simpler,
and a budget below every candidate names the smallest that would fit."""

import pytest

from dynagnn.errors import ConfigError
from dynagnn.models import check_contract, model_class
from dynagnn.train.strategies import STRATEGIES
from dynagnn.choose.candidates import Candidate, candidates
from dynagnn.choose.clock import TrialClock
from dynagnn.choose.resolve import trial_candidates
from dynagnn.choose.rule import choose


def _refusal(model):
    cls = model_class(model)
    contract = check_contract(cls, model)

    def why(strategy_cls, workers, options=None):
        return strategy_cls.model_refusal(cls, contract)
    return why


def test_snapshot_candidates_on_two_cores():
    cands = candidates("snapshot", cores=2, window=4, refusal=_refusal("tgcn"))
    names = {c.strategy for c in cands}
    assert names == {"sequential", "vertex", "snapshot", "group", "group_frames", "frames"}
    assert not names & {n for n, cls in STRATEGIES.items() if cls.baseline_of}   # no baseline
    # processes x threads fill the 2 cores without oversubscribing them
    assert all(c.processes * c.threads <= 2 for c in cands)
    # one process with all the cores' threads and with one; two of one thread each
    assert {(c.workers, c.threads) for c in cands if c.strategy == "vertex"} == {(1, 2), (1, 1), (2, 1)}
    # a strategy that only splits among workers is, at 1, the one-process loop with more to do
    assert all("splits a step among workers" in c.reason for c in cands if c.strategy == "vertex" and c.workers == 1)
    assert {(c.workers, c.procs, c.threads) for c in cands if c.strategy == "group"} == {(1, 2, 1)}
    # the speed options: frame sizes up to the window, checkpoint blocks; no graph difference on a CPU
    assert {dict(c.options)["frame_size"] for c in cands if c.strategy == "frames"} == {2, 4}
    assert {dict(c.options).get("checkpoint_blocks", 1) for c in cands if c.strategy == "sequential"} == {1, 2, 4}
    assert not any("transfer" in dict(c.options) for c in cands)
    # T-GCN has no seam for ESDG's split: kept, with the contract's reason
    snap = [c for c in cands if c.strategy == "snapshot"]
    assert snap and all("its GCN runs inside the recurrence" in c.reason for c in snap)
    assert all(c.reason is None for c in cands if c.strategy != "snapshot" and (c.strategy, c.workers) != ("vertex", 1))


def test_on_a_gpu_a_worker_per_device_and_the_graph_difference():
    cands = candidates("snapshot", cores=16, device="cuda", gpus=1, window=4, refusal=_refusal("wdgcn"))
    assert {c.workers for c in cands} == {1}
    seq = [c for c in cands if c.strategy == "sequential"]
    assert {dict(c.options).get("transfer", "full") for c in seq} == {"full", "diff"}
    assert all(c.threads == 16 for c in seq) and all(c.reason is None for c in cands if not STRATEGIES[c.strategy].splits_only)


def test_event_models_get_the_event_strategies():
    assert {c.strategy for c in candidates("event", cores=2)} == {"events", "tgnn"}
    assert {c.strategy for c in candidates("sampled", cores=2)} == {"sampled"}


A, B, C = Candidate("sequential", threads=2), Candidate("frames", threads=2, options=(("frame_size", 4),)), \
    Candidate("vertex", workers=2)


def test_the_fastest_that_fits_the_budget():
    chosen, why = choose({A: 1.0, B: 0.5, C: 0.7}, {A: 100.0, B: 300.0, C: 150.0}, budget=200.0)
    assert chosen == C
    assert "over the budget" in why[B] and "1.43x the chosen" in why[A]
    assert choose({A: 1.0, B: 0.5, C: 0.7}, {A: 100.0, B: 300.0, C: 150.0}, budget=None)[0] == B


def test_a_tie_goes_to_the_simpler():
    chosen, why = choose({A: 1.0, B: 0.99, C: 0.985}, {}, budget=None)
    assert chosen == A and "ties" in why[B] and "simpler" in why[C]
    assert choose({A: 1.0, B: 0.95}, {}, budget=None)[0] == B   # 5% is no tie


def test_a_budget_no_candidate_fits_names_the_smallest():
    with pytest.raises(ConfigError) as e:
        choose({A: 1.0, B: 0.5}, {A: 3 * 2**20, B: 5 * 2**20}, budget=2**20)
    assert str(e.value) == ("memory budget 1.0 MiB fits no candidate; the smallest, sequential 1x1x2t, needs "
                            "3.0 MiB: give at least that (--memory-budget)")
    with pytest.raises(ConfigError, match="no candidate could run"):
        choose({}, {}, budget=None)


def test_trials_interleave_drop_the_warm_up_and_scale_to_the_epoch():
    from dynagnn.choose.trials import Trial

    order = []
    times = {A: [9.0, 1.0, 1.2, 1.0], B: [9.0, 0.5, 0.4, 0.6], C: [0.1, 0.1, 0.1, 0.1]}

    def measure(c):
        order.append(c)
        t = times[c].pop(0)
        return Trial((t, 2 * t), steps_per_epoch=10, peak_bytes={A: 1.0, B: 3.0}[c])

    refused = Candidate("snapshot", 2, reason="its GCN runs inside the recurrence")
    seconds, peak = trial_candidates("unused", None, [A, B, refused], rounds=2, measure=measure)
    assert order == [A, B, A, B, A, B]            # A B, A B, A B: the first round a warm-up
    assert set(seconds) == {A, B}                 # a candidate that cannot run is never timed
    # per step the median over the 2 kept rounds, summed over the 2 steps, scaled from 2 steps to 10
    assert seconds[A] == pytest.approx((1.1 + 2.2) / 2 * 10) and seconds[B] == pytest.approx((0.45 + 0.9) / 2 * 10)
    assert peak == {A: 1.0, B: 3.0}
    assert choose(seconds, peak, budget=2.0)[0] == A


def test_the_trials_share_is_held_as_it_is_spent():
    """A slow warm-up round leaves out a candidate the plan had room for, and a second timed round that
    would not fit is not run; the plain loop is timed whatever its cost."""
    from dynagnn.choose.trials import Trial

    t = [0.0]
    took = {A: [1.0, 0.4, 0.4], B: [2.0, 0.4, 0.4], C: [0.5, 0.1, 0.1]}   # B's build ran 1 s over its plan
    order = []

    def measure(c):
        order.append(c)
        t[0] += took[c].pop(0)
        return Trial((t[0],), steps_per_epoch=1, peak_bytes=0.0)

    # each (warm-up round, timed rounds) as planned: 1.0 + 0.5 each, 4.5 s in all, within the 4.5 s share
    parts = {A: (1.0, 0.5), B: (1.0, 0.5), C: (1.0, 0.5)}
    failed = {}
    seconds, _ = trial_candidates("unused", None, [A, B, C], rounds=2, measure=measure, failed=failed,
                                  clock=TrialClock(4.5, parts, must=[A], now=lambda: t[0]))
    # at C: 3 s spent, its 1.5 and the 1.0 owed by A and B's timed rounds: over the share
    assert failed == {C: "not timed: its trial (~1.5 s) and the 1 s owed to those started would pass the "
                         "trials' share (4.5 s, 3 s spent)"}
    # the first timed round ends at 3.8 s; a second (0.8 s) would end past 4.5: one timed round only
    assert order == [A, B, A, B] and seconds == {A: pytest.approx(3.4), B: pytest.approx(3.8)}
    # the plain loop is timed even when its own plan is over the share
    t[0] = 0.0
    took.update({A: [1.0, 0.1, 0.1], B: [1.0, 0.1, 0.1]})
    failed = {}
    seconds, _ = trial_candidates("unused", None, [A, B], rounds=2, measure=measure, failed=failed,
                                  clock=TrialClock(1.0, {A: (5.0, 1.0), B: (0.1, 0.1)}, must=[A], now=lambda: t[0]))
    assert set(seconds) == {A} and B in failed


def test_the_trials_clock_judges_a_round_by_the_last_and_gives_back_a_failed_trial():
    from dynagnn.choose.trials import Trial

    t = [0.0]

    def trial(c, took):
        def measure(c):
            t[0] += took[c].pop(0)
            if took.get("fail") == c:
                raise RuntimeError("out of memory")
            return Trial((t[0],), steps_per_epoch=1, peak_bytes=0.0)
        return measure

    def run(took, budget, parts, rounds=3, must=(A,)):
        t[0] = 0.0
        failed = {}
        seconds, _ = trial_candidates("unused", None, list(parts), rounds=rounds, measure=trial(None, took),
                                      failed=failed, clock=TrialClock(budget, parts, must=must, now=lambda: t[0]))
        return seconds, failed

    # rounds of 0.2 s each within a 5 s share: all 3 timed rounds run
    took = {A: [1.0, 0.1, 0.1, 0.1], B: [1.0, 0.1, 0.1, 0.1]}
    seconds, failed = run(took, 5.0, {A: (1.0, 0.3), B: (1.0, 0.3)})
    assert not failed and not any(took.values())
    # round 1 takes 0.2 s, round 2 2.0 s: round 3 is judged by round 2 (3.2 + 2.0 > 4.5), not by round 1
    took = {A: [0.5, 0.1, 1.0, 0.1], B: [0.5, 0.1, 1.0, 0.1]}
    seconds, failed = run(took, 4.5, {A: (0.5, 0.3), B: (0.5, 0.3)})
    assert took == {A: [0.1], B: [0.1]}   # two timed rounds: each step the median of the two
    assert seconds == {A: pytest.approx((1.1 + 2.2) / 2), B: pytest.approx((1.2 + 3.2) / 2)}
    # B's trial fails in its warm-up: its timed rounds (2.0 s) are no longer owed, and C fits
    took = {A: [0.5, 0.1, 0.1, 0.1], B: [0.5], C: [0.5, 0.1, 0.1, 0.1], "fail": B}
    seconds, failed = run(took, 3.5, {A: (0.5, 0.3), B: (0.5, 2.0), C: (0.5, 0.3)})
    assert set(seconds) == {A, C} and failed == {B: "its trial failed: out of memory"}
    # the plain loop's whole trial is owed from the start, wherever it stands in the order
    took = {A: [0.5, 0.1, 0.1, 0.1], B: [0.5, 0.1, 0.1, 0.1]}
    seconds, failed = run(took, 1.5, {B: (0.5, 0.3), A: (0.5, 0.3)})
    assert set(seconds) == {A} and B in failed


def test_the_strategies_own_checks_give_the_reasons(tmp_path):
    from dynagnn.data.store import open_store
    from dynagnn.models import build_model
    from dynagnn.choose.candidates import run_refusal
    from dynagnn.choose.request import Request

    from tests.testing.stores import small_store

    store = open_store(small_store(tmp_path / "s.zarr", num_snapshots=12))
    cfg = Request.of(model="wdgcn", hidden=5, window=1)
    why = run_refusal(store, cfg, build_model("wdgcn", store.feature_dim(), 5))
    cands = candidates("snapshot", cores=2, window=1, refusal=why)
    reasons = {(c.strategy, c.workers): c.reason for c in cands}
    assert "window 1 is too short, use at least 2" in reasons[("group", 1)]   # the group strategy's own check
    assert reasons[("sequential", 1)] is None and reasons[("frames", 1)] is None
    assert "runs on 1 worker, not 2" in reasons[("sequential", 2)]   # listed with its reason, not dropped
    snap2 = next(c for c in cands if c.strategy == "snapshot" and c.workers == 2)
    assert "a step holds batch_windows × window = 1 snapshots, fewer than the 2 workers" in snap2.reason


def test_the_report_and_the_log_line():
    from dynagnn.choose.rule import report, summary_line

    refused = Candidate("snapshot", 1, reason="its GCN runs inside the recurrence")
    cands = [A, B, C, refused]
    seconds, peak = {A: 0.42, B: 0.31, C: 0.47}, {A: 10.0, B: 20.0, C: 5.0}
    chosen, why = choose(seconds, peak, budget=None)
    doc = report(cands, seconds, peak, chosen, why, None)
    assert doc["chosen"] == "frames 1x1x2t (frame_size=4)" and [r["chosen"] for r in doc["candidates"]] == [False, True, False, False]
    rows = {r["label"]: r for r in doc["candidates"]}
    assert rows["sequential 1x1x2t"]["reason"] == "0.42 s/epoch, 1.35x the chosen"
    assert rows["snapshot 1x1x1t"]["reason"] == "its GCN runs inside the recurrence" and rows["snapshot 1x1x1t"]["epoch_seconds"] is None
    assert summary_line(seconds, chosen, cands) == ("auto: frames 1x1x2t (frame_size=4) 0.31 s/epoch; sequential 1x1x2t "
                                                    "0.42; vertex 2x1x1t 0.47; snapshot refused: its GCN runs inside the recurrence")


def test_a_candidate_whose_trial_fails_is_left_out_with_its_reason():
    from dynagnn.distributed.context import DistError
    from dynagnn.choose.trials import Trial

    calls = []

    def measure(c):
        calls.append(c)
        if c == C:
            raise DistError("worker 1 was killed by SIGABRT without reporting an error")
        return Trial((1.0,), steps_per_epoch=2, peak_bytes=1.0)

    failed = {}
    seconds, _ = trial_candidates("unused", None, [A, C], rounds=2, measure=measure, failed=failed)
    assert set(seconds) == {A} and seconds[A] == pytest.approx(2.0)
    assert failed == {C: "its trial failed: worker 1 was killed by SIGABRT without reporting an error"}
    assert calls.count(C) == 1 and calls.count(A) == 3   # not tried again after it failed
