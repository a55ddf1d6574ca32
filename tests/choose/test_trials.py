"""Trials (issue 30): a candidate's real steps timed on the run's data, on one process or as a job of
several, leaving the run that trains afterwards exactly as it would have been."""

import numpy as np
import pytest
import torch

from dynagnn import api
from dynagnn.train.engine import Trainer
from dynagnn.choose.request import Request
from dynagnn.train.run_config import TrainConfig
from dynagnn.choose.trials import _picks, candidate_config, run_trial

from tests.testing.stores import small_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return small_store(tmp_path_factory.mktemp("trials") / "link.zarr", num_snapshots=12)


def test_a_candidate_keeps_the_shared_keys_and_takes_its_own_options():
    run = TrainConfig.of(model="wdgcn", strategy="frames", frame_size=4, hidden=7, seed=3)
    c = candidate_config(run, "sequential", 1, 2, {"checkpoint_blocks": 2})
    assert (c.strategy, c.model, c.hidden, c.seed, c.threads) == ("sequential", "wdgcn", 7, 3, 2)
    assert c.options.checkpoint_blocks == 2 and not hasattr(c.options, "frame_size")


def test_steps_are_spread_over_the_epoch():
    assert _picks(3, 4) == [0, 1, 2]
    assert _picks(10, 4) == [0, 3, 6, 9]
    assert _picks(10, 1) == [0]


def test_a_trial_times_real_steps_and_leaves_the_process_as_it_was(store):
    cfg = TrainConfig.of(model="tgcn", strategy="sequential", hidden=5, window=3, threads=1)
    torch.manual_seed(7)
    np.random.seed(7)
    state, np_state, threads = torch.random.get_rng_state(), np.random.get_state(), torch.get_num_threads()
    trial = run_trial(store, cfg, steps=3)
    assert torch.equal(torch.random.get_rng_state(), state) and torch.get_num_threads() == threads
    assert all(np.array_equal(a, b) for a, b in zip(np.random.get_state(), np_state))
    assert len(trial.step_seconds) == 3 and all(t > 0 for t in trial.step_seconds)
    assert trial.steps_per_epoch == len(Trainer(store, cfg, progress=False).step_ends())
    assert trial.epoch_seconds == pytest.approx(np.median(trial.step_seconds) * trial.steps_per_epoch)


def test_training_after_trials_is_training_without_them(store, tmp_path):
    cfg = TrainConfig.of(model="tgcn", strategy="sequential", hidden=5, window=3, epochs=2, patience=2)
    plain, _ = api.train(store, tmp_path / "plain", cfg, progress=False)
    run_trial(store, candidate_config(cfg, "frames", 1, 1, {"frame_size": 2}), steps=2)
    run_trial(store, cfg, steps=2)
    after, _ = api.train(store, tmp_path / "after", cfg, progress=False)
    assert after["loss"].tolist() == plain["loss"].tolist()
    assert after["val_auc"].tolist() == plain["val_auc"].tolist()


def test_a_candidate_of_two_processes_runs_as_its_own_job(store):
    cfg = candidate_config(Request.of(model="tgcn", hidden=5, window=3), "vertex", 2, 1, {})
    trial = run_trial(store, cfg, steps=2)
    assert len(trial.step_seconds) == 2 and all(t > 0 for t in trial.step_seconds)
    assert trial.steps_per_epoch > 0 and trial.peak_bytes >= 0


def test_the_chooser_times_real_candidates(store):
    from dynagnn.choose.candidates import Candidate
    from dynagnn.choose.resolve import trial_candidates
    from dynagnn.choose.rule import choose

    cfg = Request.of(model="tgcn", hidden=5, window=3)
    cands = [Candidate("sequential", 1, 1), Candidate("frames", 1, 1, (("frame_size", 2),))]
    seconds, peak = trial_candidates(store, cfg, cands, steps=2, rounds=1)
    assert set(seconds) == set(cands) and all(s > 0 for s in seconds.values())
    assert choose(seconds, peak, budget=None)[0] in cands


def test_kept_trials_build_each_trainer_once_and_leave_the_process_as_it_was(store, monkeypatch, tmp_path):
    from dynagnn.choose import trials

    built, steps_run = [], {}
    real = trials._build

    def counted_build(*a):
        tr, name = real(*a), a[2].strategy
        step = tr.strategy.train_step

        def counted(*x, **k):
            steps_run[name] = steps_run.get(name, 0) + 1
            return step(*x, **k)
        tr.strategy.train_step = counted
        built.append(name)
        return tr
    monkeypatch.setattr(trials, "_build", counted_build)
    cfg = TrainConfig.of(model="tgcn", strategy="sequential", hidden=5, window=3, epochs=2, patience=2, threads=1)
    frames = candidate_config(cfg, "frames", 1, 1, {"frame_size": 2})
    plain, _ = api.train(store, tmp_path / "plain", cfg, progress=False)
    torch.manual_seed(11)
    state, threads = torch.random.get_rng_state(), torch.get_num_threads()
    with trials.Trials(store, steps=2, rounds=3) as live:
        got = [live.measure(key, c) for _ in range(3) for key, c in (("seq", cfg), ("frames", frames))]
    assert built == ["sequential", "frames"]                      # one trainer each, kept for 3 rounds
    assert steps_run == {"sequential": 1 + 3 * 2, "frames": 1 + 3 * 2}   # a warm-up step in its first round only
    assert all(len(t.step_seconds) == 2 and t.steps_per_epoch == got[0].steps_per_epoch for t in got[::2])
    assert torch.equal(torch.random.get_rng_state(), state) and torch.get_num_threads() == threads
    after, _ = api.train(store, tmp_path / "after", cfg, progress=False)
    assert after["loss"].tolist() == plain["loss"].tolist()


def test_a_job_of_several_processes_runs_all_its_rounds_at_once(store, monkeypatch):
    from dynagnn.choose import trials

    jobs = []
    real = trials.launch
    monkeypatch.setattr(trials, "launch", lambda *a, **k: jobs.append(a[1]) or real(*a, **k))
    cfg = candidate_config(Request.of(model="tgcn", hidden=5, window=3), "vertex", 2, 1, {})
    live = trials.Trials(store, steps=2, rounds=3)
    got = [live.measure("vertex", cfg) for _ in range(3)]
    assert jobs == [2]                                            # one job of 2 workers for the 3 rounds
    assert all(len(t.step_seconds) == 2 and all(s > 0 for s in t.step_seconds) for t in got)
