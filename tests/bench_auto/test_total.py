"""``python -m benchmarks auto``'s total-time regret: the candidates named by hand from an auto.json,
their keys as flags, and the summary over cases."""

import math

import pytest

from benchmarks import bench_auto_total as total

from tests.testing.auto_reports import ROWS

PLAIN_1T = {"label": "sequential 1x1x1t", "strategy": "sequential", "workers": 1, "threads": 1, "options": {},
            "processes_per_worker": 1, "predicted_seconds": 0.9, "predicted_peak_bytes": 10.0, "trial_seconds": None,
            "chosen": False, "reason": "ties"}


def test_the_named_candidates_are_the_pick_the_plain_loops_the_best_predicted_and_the_best_timed():
    report = {"candidates": [*ROWS[:2], {**ROWS[2], "trial_seconds": 0.4}, ROWS[3], PLAIN_1T]}
    got = [r["label"] for r in total.named_rows(report)]
    # the pick, the plain loop at each thread count (also the two best predicted of one process), the best
    # timed (group, 0.4 s); the vertex candidate over the budget is never named; none twice
    assert got == ["sequential 1x1x2t", "sequential 1x1x1t", "group 1x2x1t"]
    frames = ROWS[1]
    report = {"candidates": [{**ROWS[0], "chosen": False}, {**frames, "chosen": True}, PLAIN_1T]}
    assert [r["label"] for r in total.named_rows(report)] == [frames["label"], "sequential 1x1x2t", "sequential 1x1x1t"]


def test_a_candidate_s_keys_are_its_flags():
    keys = {**total.named_keys(ROWS[1]), "graph_input": "x", "replan": False, "fanouts": [10, 5]}
    assert total._flags(keys) == ["--strategy", "frames", "--workers", "1", "--threads", "2", "--frame-size", "4",
                                  "--graph-input", "x", "--no-replan", "--fanouts", "10", "5"]


def test_the_summary_takes_medians_and_names_the_cases_whose_choosing_cost_more_than_training():
    rows = [{"case": "a", "regret": 1.0, "remembered_regret": 1.0, "remembered_choose_s": 0.01, "choose_s": 0.3,
             "train_s": 1.0},
            {"case": "b", "regret": 1.3, "remembered_regret": 0.9, "remembered_choose_s": 0.02, "choose_s": 2.0,
             "train_s": 1.5},
            {"case": "c", "regret": 1.1, "remembered_regret": 1.2, "remembered_choose_s": 0.05, "choose_s": 0.1,
             "train_s": 9.0},
            {"case": "d", "error": "RuntimeError: boom"},
            {"case": "e", "regret": 1.1, "remembered_regret": 1.0, "remembered_choose_s": 0.7, "choose_s": 0.7,
             "train_s": 1.5, "loaded": True}]   # chooses again (under load): no recall to count
    s = total.summary(rows)
    assert (s["cases"], s["measured"]) == (5, 4)
    assert s["median_regret"] == pytest.approx(1.1) and s["worst_regret"] == pytest.approx(1.3)
    assert s["median_remembered_regret"] == pytest.approx(1.0) and s["worst_remembered_choose_s"] == 0.05
    assert s["choosing_over_training"] == ["b"]
    assert math.isnan(total.summary([rows[3]])["median_regret"])


def test_the_training_s_seconds_are_read_from_the_run_s_log():
    log = ("2026-12-07 INFO dynagnn: auto: frames 1x1x1t (frame_size=4), remembered\n"
           "2026-12-07 INFO dynagnn: tgcn/frames: 7 epochs in 3.6s; best epoch 1: val_mse 0.5294\n")
    assert total.training_seconds(log) == 3.6
    with pytest.raises(ValueError, match="no 'N epochs in X s' line"):
        total.training_seconds("a run that logged nothing of its epochs")
