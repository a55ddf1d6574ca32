"""An auto run (issue 30): resolved before training into the candidate the trials chose, trained from the
same initial weights as a run that names that candidate, its choice in auto.json and metrics.parquet;
the predictions' terms against their formulas; the bad inputs refused in one line with nothing written."""

import dataclasses
import json
import logging

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from dynagnn import api
from dynagnn.errors import ConfigError
from dynagnn.choose.predict import Base, STEP_SYNC_SECONDS, communication, predict, spearman
from dynagnn.choose.candidates import Candidate
from dynagnn.choose.clock import TRIAL_MARGIN, TRIAL_ROUNDS, TRIAL_STEPS, pick_trials
from dynagnn.choose.request import Request, parse_budget
from dynagnn.train.run_config import TrainConfig

from tests.testing.devices import DEVICES

from tests.testing.stores import small_store

TINY = dict(model="tgcn", hidden=6, window=3, epochs=2, seed=3)


@pytest.fixture
def measured(monkeypatch):
    """A choice by measurement however short the run (measuring predicted free): the full path's tests."""
    from dynagnn.choose import resolve

    monkeypatch.setattr(resolve, "full_choice_seconds", lambda base: 0.0)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return small_store(tmp_path_factory.mktemp("auto") / "link.zarr", num_snapshots=12)


@pytest.mark.parametrize("device", DEVICES)
def test_an_auto_run_equals_the_run_of_its_choice(store, tmp_path, caplog, device, measured):
    caplog.set_level(logging.INFO, logger="dynagnn")
    # a share that times them all (two epochs of this tiny run would time none: test_a_share_too_small...)
    auto = Request.of(device=device, trial_share=1000.0, **TINY)
    metrics, _ = api.train(store, tmp_path / "auto", auto, progress=False)
    doc = json.loads((tmp_path / "auto" / "auto.json").read_text())
    row = next(r for r in doc["candidates"] if r["chosen"])
    assert doc["device"] == device
    if device == "cuda":   # the budget is the GPU's free memory; a worker per GPU, the graph difference tried
        import torch

        assert 0 < doc["memory_budget_bytes"] <= torch.cuda.get_device_properties(0).total_memory
        assert all(r["workers"] <= torch.cuda.device_count() for r in doc["candidates"])
        assert any(r["options"].get("transfer") == "diff" for r in doc["candidates"])
    assert set(metrics["auto_choice"]) == {doc["chosen"]} == {row["label"]}
    assert any(m.startswith("auto: " + doc["chosen"]) for m in caplog.messages)
    # the run that names the chosen candidate: the same losses and metrics, epoch by epoch
    named = TrainConfig.of(strategy=row["strategy"], workers=row["workers"], threads=row["threads"], device=device,
                           **row["options"], **TINY)
    direct, _ = api.train(store, tmp_path / "named", named, progress=False)
    cols = ["loss"] + [c for c in direct.columns if c.startswith(("val_", "test_"))]
    pd.testing.assert_frame_equal(metrics[cols], direct[cols])
    # every candidate is in the report, the ones that cannot run with their reason; the timed ones measured
    assert all(r["reason"] for r in doc["candidates"] if not r["chosen"])
    timed = [r for r in doc["candidates"] if r["trial_seconds"] is not None]
    assert len(timed) >= 2 and all(r["predicted_seconds"] > 0 and r["predicted_peak_bytes"] > 0 for r in timed)
    assert row["trial_seconds"] == min(r["trial_seconds"] for r in timed) or "ties" in " ".join(r["reason"] for r in timed if not r["chosen"])
    # the run again into its out-dir is the same run (strategy auto, same options): no --overwrite needed
    api.train(store, tmp_path / "auto", auto, progress=False)
    again = json.loads((tmp_path / "auto" / "auto.json").read_text())   # the same job: its choice recalled
    assert again["source"] == "remembered" and again["chosen"] == doc["chosen"] and again["trial_seconds_total"] == 0
    # --resume trains what auto.json chose, without trials
    doc = json.loads((tmp_path / "auto" / "auto.json").read_text())
    again = api.choose_strategy(store, tmp_path / "auto", auto, tmp_path, resume=tmp_path / "auto" / "model.pt")
    assert again.label == doc["chosen"] and again.config.strategy == doc["chosen"].split()[0]


@pytest.mark.parametrize("frames_cost", [0.0, 1e9])   # frames measured (free); not (over any share)
def test_a_run_too_short_to_pay_for_measuring_is_chosen_from_one_snapshot_s_step(store, monkeypatch, frames_cost):
    from dynagnn.choose import frame_timing
    from dynagnn.choose import resolve as auto
    from dynagnn.choose import trials

    def no_trainer(*args, **kwargs):
        raise AssertionError("the short path builds no trainer")
    monkeypatch.setattr(trials.Trials, "measure", no_trainer)
    monkeypatch.setattr(frame_timing, "FRAME_MEASURE_FACTOR", frames_cost)
    choice = auto.resolve(store, Request.of(cores=2, **TINY))   # 2 epochs of a tiny store: ms of training
    rep = choice.report
    assert rep["source"] == rep["chosen_by"] == "prediction" and rep["base"]["quick"]
    # what measuring would cost is over the share of the training predicted
    assert rep["full_choice_estimate_seconds"] > rep["trial_share"] * rep["expected_training_seconds"]
    one = [r for r in rep["candidates"] if r["reason"] is None or r["predicted_seconds"] is not None]
    assert one and all(r["workers"] * r["processes_per_worker"] == 1 for r in one)
    best = min(r["predicted_seconds"] for r in one)
    assert rep["expected_training_seconds"] == pytest.approx(best * TINY["epochs"])
    # what a candidate pays once (the frame engine's build, measured at start) spread over the epochs;
    # frames whose measurement the run would not pay for are not candidates
    # (the largest size a frame's span holds, the only one measured)
    frames = [r for r in rep["candidates"] if r["strategy"] == "frames" and r["workers"] == 1]
    sizes = {r["options"].get("frame_size", 1) for r in frames}
    assert {r["options"].get("frame_size", 1) for r in frames if r in one} == ({max(sizes)} if frames_cost == 0 else set())
    assert all(r["reason"].startswith("frames not measured" + (": ~" if frames_cost else " at this size"))
               for r in frames if r not in one)
    assert all(r["once_seconds"] > 0 if r["strategy"] == "frames" else r["once_seconds"] == 0 for r in one)
    most = max(r["threads"] for r in one)   # fewer threads must win by QUICK_FEWER beyond the tie
    cost = {r["label"]: (r["predicted_seconds"] + r["once_seconds"] / TINY["epochs"])
            * (1 + auto.QUICK_FEWER * (r["threads"] < most)) for r in one}
    chosen = next(r for r in rep["candidates"] if r["chosen"])
    least = min(cost.values())
    assert cost[chosen["label"]] <= least * (1 + auto.QUICK_TIE) and chosen["predicted_peak_bytes"] > 0
    # a tie within the quick prediction's 10% goes to the simpler, then to more threads
    # a plain loop is out where its frames twin at its threads is faster by more than FRAMES_TIE
    beaten = {r["label"] for r in one if "faster at its threads" in (r["reason"] or "")}
    for r in one:
        twins = [cost[f["label"]] for f in one if f["strategy"] == "frames" and f["threads"] == r["threads"]]
        if not r["options"] and r["strategy"] == "sequential":
            assert (r["label"] in beaten) == bool(twins and min(twins) < cost[r["label"]] * (1 - auto.FRAMES_TIE))
    ties = [Candidate.from_row(r) for r in one
            if r["label"] not in beaten and cost[r["label"]] <= least * (1 + auto.QUICK_TIE)]
    assert auto._quick_key(Candidate.from_row(chosen)) == min(auto._quick_key(c) for c in ties)
    several = [r for r in rep["candidates"] if r["workers"] * r["processes_per_worker"] > 1 and
               "chosen only on a trial" in (r["reason"] or "")]
    assert several and all("too short to pay for trials" in r["reason"] for r in several)
    assert "predicted from one snapshot's step" in choice.line


def test_a_share_too_small_to_time_a_candidate_leaves_the_choice_to_the_prediction(store, measured):
    from dynagnn.choose import resolve as auto
    from dynagnn.choose.rule import TIE
    choice = auto.resolve(store, Request.of(cores=2, **TINY))   # 2 epochs: a share of ms
    rep = choice.report
    assert rep["chosen_by"] == "prediction" and rep["trial_seconds_total"] < 0.05 and "quick" not in rep["base"]
    rows = [r for r in rep["candidates"] if r["predicted_seconds"] is not None]
    assert all(r["trial_seconds"] is None and r["epoch_seconds"] is None for r in rep["candidates"])
    one = [r for r in rows if r["workers"] * r["processes_per_worker"] == 1]
    chosen = next(r for r in rep["candidates"] if r["chosen"])
    # the fastest predicted of one process (a tie within TIE to the simpler one); several processes only on a trial
    assert chosen in one and chosen["predicted_seconds"] <= min(r["predicted_seconds"] for r in one) * (1 + TIE)
    several = [r for r in rows if r["workers"] * r["processes_per_worker"] > 1]
    assert several and all("chosen only on a trial" in r["reason"] for r in several)
    assert choice.line.endswith("could time none beside the plain loop's measurement)")


def test_a_failed_plain_trial_with_the_others_turned_away_leaves_the_choice_to_the_prediction(store, monkeypatch,
                                                                                              measured):
    from dynagnn.choose import resolve as auto

    def trials(store_path, config, tried, *, steps, rounds, measure, failed, clock):
        for c in tried:   # the plain loop fails; the share's clock turns every other one away
            if c.plain:
                failed[c] = "its trial failed: out of memory"
            else:
                clock.refused.add(c)
                failed[c] = "not timed: the share"
        return {}, {}
    monkeypatch.setattr(auto, "trial_candidates", trials)
    rep = auto.resolve(store, Request.of(cores=2, trial_share=100.0, **TINY)).report
    rows = {r["label"]: r for r in rep["candidates"]}
    assert rep["chosen_by"] == "prediction"
    chosen = next(r for r in rows.values() if r["chosen"])
    # chosen by prediction among the one-process candidates whose trial did not fail
    assert chosen["workers"] * chosen["processes_per_worker"] == 1 and chosen["options"]
    assert rows["sequential 1x1x2t"]["reason"] == "its trial failed: out of memory"
    assert all("not timed" not in (r["reason"] or "") for r in rows.values())


def test_the_engine_refuses_an_unresolved_auto(store, tmp_path):
    from dynagnn.train.engine import train

    with pytest.raises(ConfigError, match="the engine trains a TrainConfig of a registered strategy, not a Request"):
        train(store, tmp_path / "x", Request.of(**TINY))
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("budget, words", [
    (0, "memory_budget 0: a budget must be more than 0 bytes"),
    ("0MiB", "memory_budget '0MiB': a budget must be more than 0 bytes"),
    ("lots", "memory_budget 'lots': expected bytes or a size such as 512MiB or 4GB"),
    ("12 parsecs", "memory_budget '12 parsecs': expected bytes or a size such as 512MiB or 4GB"),
])
def test_a_bad_budget_is_one_line_and_nothing_is_written(store, tmp_path, budget, words):
    with pytest.raises(ConfigError) as e:
        api.train(store, tmp_path / "run", Request.of(memory_budget=budget, **TINY))
    assert str(e.value) == words and not (tmp_path / "run").exists()


def test_sizes():
    assert parse_budget("512MiB") == 512 * 2**20 and parse_budget("4GB") == 4e9 and parse_budget(1000) == 1000
    assert parse_budget("1.5g") == 1.5 * 2**30 and parse_budget(None) is None


def test_a_budget_no_candidate_fits_names_the_smallest(store, tmp_path):
    with pytest.raises(ConfigError) as e:
        api.train(store, tmp_path / "run", Request.of(memory_budget=1024, **TINY))
    msg = str(e.value)
    assert msg.startswith("memory budget 0.0 MiB (--memory-budget) fits no candidate; the smallest, ") and \
        msg.endswith("give at least that (--memory-budget)") and "\n" not in msg
    assert not (tmp_path / "run").exists()


def test_an_option_of_one_family_is_carried_to_the_candidates_that_take_it(store):
    """A strategy's option given to auto narrows the choice to the strategies that take it, at that value
    (it is not one auto varies); a key no candidate takes is refused in one line; one at its default is
    no request at all."""
    from dynagnn.choose.candidates import chosen_config, plain_model, run_candidates
    from dynagnn.choose.request import request_of
    from dynagnn.data.store import open_store

    req = request_of({"strategy": "auto", "frame_size": 4, "tbptt": None, **TINY}, "--options")
    assert req.carried == {"frame_size": 4}
    s = open_store(store)
    cands = run_candidates(s, dataclasses.replace(req, options=dataclasses.replace(req.options, cores=2)),
                           plain_model(s, req))
    runnable = {c.strategy for c in cands if c.reason is None}
    assert runnable and runnable <= {"frames", "group_frames"}
    assert all(chosen_config(req, c).options.frame_size == 4 for c in cands if c.reason is None)
    assert all(c.reason == f"{c.strategy} takes no frame_size (given to auto)" for c in cands
               if c.strategy in ("sequential", "vertex", "group"))
    with pytest.raises(ConfigError) as e:
        request_of({"strategy": "auto", "frame_sise": 4}, "--options")
    assert str(e.value).startswith("--options: unknown key 'frame_sise' (did you mean 'frame_size'?)")


def test_workers_and_threads_are_auto_s_to_choose(store, tmp_path):
    with pytest.raises(ConfigError, match=r"workers 2 with --strategy auto \(the default\): auto chooses the workers"):
        api.train(store, tmp_path / "run", Request.of(workers=2, **TINY))
    assert not (tmp_path / "run").exists()


def test_a_store_too_small_for_several_processes_trains_on_one(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="dynagnn")
    # windows of one snapshot: too short for BLAD's groups and ESDG's split; EvolveGCN-H's weights evolve
    # from every vertex, so the vertex split cannot serve it either
    tiny = small_store(tmp_path / "tiny.zarr", num_snapshots=6)
    cfg = Request.of(model="evolvegcn_h", hidden=4, window=1, epochs=1)
    metrics, _ = api.train(tiny, tmp_path / "run", cfg, progress=False)
    doc = json.loads((tmp_path / "run" / "auto.json").read_text())
    chosen = next(r for r in doc["candidates"] if r["chosen"])
    assert chosen["workers"] * chosen["processes_per_worker"] == 1
    assert all(r["reason"] for r in doc["candidates"] if r["workers"] * r["processes_per_worker"] > 1)
    assert any("no candidate of several processes can train this run" in m for m in caplog.messages)


# ------------------------------------------------------------------------------------------ the predictions

BASE = Base(seconds={1: 2.0, 2: 1.2}, steps=10, agg_share=0.4, fwd_share=0.5, layers=2, params=1000,
            num_nodes=100, window=4, hidden=8, overlap={2: 0.5, 4: 0.25}, halo_rows={2: 30.0})


def test_amdahl_through_the_measured_thread_counts():
    # 1.2 / 2.0 = s + (1 - s) / 2  ->  s = 0.2; at 4 threads 2.0 * (0.2 + 0.8 / 4) = 0.8
    assert BASE.epoch(1) == 2.0 and BASE.epoch(2) == 1.2 and BASE.epoch(4) == pytest.approx(0.8)


def test_the_terms_of_a_prediction():
    seq = Candidate("sequential", threads=2)
    assert predict(seq, BASE) == 1.2 and communication(seq, BASE) == 0.0
    ck = Candidate("sequential", threads=2, options=(("checkpoint_blocks", 4),))
    assert predict(ck, BASE) == pytest.approx(1.2 * (1 + 0.5))   # one more forward
    fr = Candidate("frames", threads=2, options=(("frame_size", 2),))
    speedup = 2 / (0.5 + 0.5 * 2)                                   # PiPAD's traffic speedup at OR 0.5
    saved = 0.4 * (1 - 1 / speedup) + 0.4 / 2 * 0.5 * (1 - 1 / 4)   # the overlap, then the first layer's reuse
    assert predict(fr, BASE) == pytest.approx(1.2 * (1 - saved))
    vx = Candidate("vertex", workers=2, threads=1)
    grads = 2 * 1 * 1000 * 4 / 2                                     # the ring all-reduce's bytes per process
    step = STEP_SYNC_SECONDS + 9e-5 + 2.7e-10 * grads + 4 * 2 * 2 * (9e-5 + 2.7e-10 * 30 * 8 * 4)
    assert communication(vx, BASE) == pytest.approx(10 * step)
    # 2 processes of 1 thread: Amdahl at 2 (the serial part paid by each), then the communication
    assert predict(vx, BASE) == pytest.approx(BASE.epoch(2) + 10 * step) and BASE.epoch(2) == 1.2


def test_frames_measured_at_start_save_their_seconds_per_snapshot_step():
    import dataclasses

    # a range of 4 snapshots: 40 ms stepped one by one, 30 ms in frames of 2, 50 ms in frames of 4 (slower)
    base = dataclasses.replace(BASE, frames={1: {0: 0.040, 2: 0.030, 4: 0.050}, 2: {0: 0.032, 1: 0.031, 2: 0.020, 4: 0.024}},
                               frame_span=4, model_steps=100)
    fr = Candidate("frames", threads=2, options=(("frame_size", 2),))
    assert predict(fr, base) == pytest.approx(1.2 - (0.032 - 0.020) / 4 * 100)   # 3 ms a snapshot step, 100 steps
    slow = Candidate("frames", threads=1, options=(("frame_size", 4),))
    assert predict(slow, base) == pytest.approx(2.0 + (0.050 - 0.040) / 4 * 100)  # costs what it measured
    # BLAD's pair of 1-thread processes in frames: Amdahl at 2, each saving on its half of the steps
    pair = Candidate("group_frames", workers=1, procs=2, threads=1, options=(("frame_size", 2),))
    assert predict(pair, base) - communication(pair, base) == pytest.approx(1.2 - (0.040 - 0.030) / 4 * 100 / 2)
    # a frame of one reads the reused aggregation: it saves too
    one = Candidate("frames", threads=2, options=(("frame_size", 1),))
    assert predict(one, base) == pytest.approx(1.2 - 0.001 / 4 * 100)
    # a size not measured: the closed form
    assert predict(Candidate("frames", threads=2, options=(("frame_size", 8),)), base) == \
        predict(Candidate("frames", threads=2, options=(("frame_size", 8),)), BASE)


def test_the_quick_base_takes_the_frames_measured_ratio():
    """The quick base's epoch (one snapshot's step times the steps) and the frames' range timing are of
    different scales: the frames' measured ratio to the stepped range multiplies the epoch."""
    import dataclasses

    base = dataclasses.replace(BASE, frames={2: {0: 0.032, 2: 0.020, 4: 0.040}}, frame_span=4, model_steps=100,
                               frames_ratio=True)
    fr = Candidate("frames", threads=2, options=(("frame_size", 2),))
    assert predict(fr, base) == pytest.approx(1.2 * 0.020 / 0.032)
    slow = Candidate("frames", threads=1, options=(("frame_size", 4),))
    assert predict(slow, base) == pytest.approx(2.0 * 0.040 / 0.032)   # the nearest thread count measured


def test_the_epoch_s_snapshot_steps():
    from dynagnn.choose.predict import model_steps_per_epoch

    assert model_steps_per_epoch([0, 1, 2, 5, 9], window=3, carry=False) == 1 + 2 + 3 + 3 + 3
    assert model_steps_per_epoch(range(7), window=3, carry=True) == 7


def test_the_frames_measurement_times_each_size_and_leaves_the_model_and_streams_alone(store):
    import torch

    from dynagnn.data.store import open_store
    from dynagnn.choose.frame_timing import frame_seconds
    from dynagnn.choose.candidates import plain_model

    s = open_store(store)
    cfg = Request.of(**TINY)
    model = plain_model(s, cfg)
    before = [p.detach().clone() for p in model.parameters()]
    torch.manual_seed(11)
    expected_draw = torch.rand(3)
    torch.manual_seed(11)
    threads = torch.get_num_threads()
    built = []
    got = frame_seconds(s, cfg, model, threads=1, sizes=[1, 3], span=3, carry=False, rounds=2, built=built)
    assert set(got) == {0, 1, 3} and all(v > 0 for v in got.values())
    assert len(built) == 2 and all(b > 0 for b in built)   # an engine's build per snapshot, per size
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert all(p.grad is None for p in model.parameters())
    assert torch.equal(torch.rand(3), expected_draw) and torch.get_num_threads() == threads


def test_spearman_against_scipy():
    a, b = [0.3, 0.1, 0.2, 0.5, 0.4], [3.0, 1.0, 2.5, 2.0, 4.0]
    assert spearman(a, b) == pytest.approx(spearmanr(a, b).statistic)
    tied_a, tied_b = [0.2, 0.1, 0.2, 0.5, 0.2, 0.1], [3.0, 1.0, 3.0, 2.0, 4.0, 0.5]   # ties: average ranks
    assert spearman(tied_a, tied_b) == pytest.approx(spearmanr(tied_a, tied_b).statistic)
    assert np.isnan(spearman([1.0], [2.0])) and np.isnan(spearman([1.0, 1.0], [1.0, 2.0]))
    assert np.isnan(spearman([1.0, float("nan"), 3.0], [1.0, 2.0, 3.0]))   # as scipy: a NaN ranks nothing


def test_the_trials_take_the_plain_loop_and_the_best_predicted_within_the_share():
    seq = Candidate("sequential", threads=2)
    fr = Candidate("frames", threads=2, options=(("frame_size", 2),))
    grp = Candidate("group", workers=1, procs=2, threads=1)
    vx = Candidate("vertex", workers=2, threads=1)
    predicted = {seq: 1.0, fr: 0.8, grp: 0.5, vx: 0.9}
    # a trial: a warm-up round and 2 rounds of 3 timed steps, and its trainer's one warm-up step, 0.1
    # s/step for seq, 0.08 for frames; group and vertex pay a process's start (group a plan too)
    cost = {c: TRIAL_MARGIN * ((TRIAL_ROUNDS + 1) * TRIAL_STEPS + 1) * predicted[c] / 10 for c in predicted}
    assert cost[seq] + cost[fr] == pytest.approx(1.8 * TRIAL_MARGIN)
    # a share too small for a process's start: the plain loop and the cheapest other one
    assert pick_trials(predicted, 1.81 * TRIAL_MARGIN, steps_per_epoch=10) == [seq, fr]
    # the share is a bound: too small to time one candidate beside the plain loop, nothing is timed
    assert pick_trials(predicted, 1.79 * TRIAL_MARGIN, steps_per_epoch=10) == []
    assert pick_trials(predicted, 0.1, steps_per_epoch=10) == []
    # room for everything: the plain loop first, then in predicted order
    assert pick_trials(predicted, 1000.0, steps_per_epoch=10) == [seq, grp, fr, vx]
    # on a GPU a one-process trainer is built for each round (a warm-up step each): the same share fits less
    assert pick_trials(predicted, 1.81 * TRIAL_MARGIN, steps_per_epoch=10, gpu=True) == []
    # a frames trainer's engine build, measured at start, is paid on top: the same share no longer fits it
    assert pick_trials(predicted, 1.81 * TRIAL_MARGIN, steps_per_epoch=10, frame_build_s=0.05) == []


def test_a_carried_sequence_reaches_every_candidate_and_rules_out_what_it_cannot_take(store):
    from dynagnn.data.store import open_store
    from dynagnn.choose.candidates import candidates, plain_model, run_refusal

    cfg = Request.of(sequence="carry", **TINY)
    s = open_store(store)
    cands = candidates("snapshot", cores=2, window=3, refusal=run_refusal(s, cfg, plain_model(s, cfg)))
    reasons = {c.label(): c.reason for c in cands}
    assert reasons["sequential 1x1x2t"] is None and reasons["frames 1x1x2t (frame_size=2)"] is None
    assert "checkpoint_blocks" in reasons["sequential 1x1x2t (checkpoint_blocks=2)"]   # the strategy's own check


def test_an_event_model_chooses_among_the_event_strategies_and_fit_loads_it(tmp_path):
    import dynagnn

    from tests.testing.stores import event_store

    ev = event_store(tmp_path / "ev.zarr")
    result = dynagnn.fit(ev, model="tgn", epochs=1, out=tmp_path / "run", memory_dim=8, time_dim=8, event_batch=100)
    doc = json.loads((tmp_path / "run" / "auto.json").read_text())
    assert {r["strategy"] for r in doc["candidates"]} == {"events", "tgnn"}
    assert result.config.strategy in ("events", "tgnn") and result.config.strategy == doc["chosen"].split()[0]
    assert result.model is not None and set(result.metrics["auto_choice"]) == {doc["chosen"]}


def test_a_class_other_processes_cannot_import_keeps_auto_to_one_process(store, clean_model_registry):
    from dynagnn.data.store import open_store
    from dynagnn.models import register_model
    from dynagnn.models.tgcn import TGCN
    from dynagnn.choose.candidates import candidates, plain_model, run_refusal

    Local = type("LocalCell", (TGCN,), {"__module__": __name__, "__qualname__": "f.<locals>.LocalCell"})
    name = f"{__name__}:f.<locals>.LocalCell"
    register_model(Local, name=name)
    cfg = Request.of(**{**TINY, "model": name})
    s = open_store(store)
    cands = candidates("snapshot", cores=2, window=3, refusal=run_refusal(s, cfg, plain_model(s, cfg)))
    # the importable T-GCN's candidates of several processes that could run now cannot, for that reason
    plain = Request.of(**TINY)
    before = candidates("snapshot", cores=2, window=3, refusal=run_refusal(s, plain, plain_model(s, plain)))
    could = {c for c in before if c.processes > 1 and c.reason is None}
    assert could and all("is defined in a function, which other processes cannot import" in c.reason
                         for c in cands if c in could)
    assert {c for c in cands if c.reason is None} == {c for c in before if c.processes == 1 and c.reason is None}


def test_auto_is_the_default_of_every_front():
    import inspect

    import dynagnn
    from dynagnn.config import load_schema
    from dynagnn.choose.request import DEFAULT_STRATEGY

    assert DEFAULT_STRATEGY == "auto"
    assert inspect.signature(dynagnn.fit).parameters["strategy"].default == DEFAULT_STRATEGY
    assert load_schema()["properties"]["train"]["properties"]["strategy"]["default"] == DEFAULT_STRATEGY


def test_the_frames_measurement_is_paid_up_to_what_frames_save():
    from dynagnn.choose.resolve import FRAMES_SAVING, frames_budget

    assert frames_budget(0.1, 1.0) == FRAMES_SAVING * 1.0 > 0.1   # more than the trials' share of 10%
    assert frames_budget(0.5, 1.0) == 0.5                          # a share above it: the share
    assert frames_budget(0.0, 1.0) == 0.0                          # a run that pays for no choosing


def test_a_run_paying_for_no_choosing_measures_no_frames(store, monkeypatch):
    from dynagnn.choose import frame_timing
    from dynagnn.choose import resolve as auto

    monkeypatch.setattr(frame_timing, "FRAME_MEASURE_FACTOR", 1e-12)   # frames nearly free to measure
    rep = auto.resolve(store, Request.of(cores=2, trial_share=0.0, **TINY)).report
    frames = [r for r in rep["candidates"] if r["strategy"] == "frames" and r["workers"] == 1]
    assert frames and all(r["reason"].startswith("frames not measured: ~") and r["reason"].endswith("over the 0 s they may save")
                          for r in frames if r["options"].get("frame_size") == max(f["options"].get("frame_size", 1) for f in frames))
