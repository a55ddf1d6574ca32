"""The compare figure's auto run (issue 30): its row is the candidate it chose, and the candidates it
timed (its auto.json) are placed at the compared runs of the same strategy and hardware, exact values."""

import numpy as np
import pandas as pd

from dynagnn.report.figures import strategy_comparison, strategy_labels
from dynagnn.report.strategies import AUTO_COLUMNS, auto_trials, strategy_table
from dynagnn.tables import write_table


def run(seconds, processes, threads, choice=None):
    """(metrics, timings) of a run of ``len(seconds)`` epochs on ``processes`` x ``threads``."""
    n = len(seconds)
    metrics = pd.DataFrame({"epoch": range(n), "train_seconds": seconds, "val_auc": [0.5 + 0.1 * i for i in range(n)],
                            "best": [i == n - 1 for i in range(n)], "processes": [processes] * n,
                            "threads": [threads] * n, "cores": [processes * threads] * n, "oversubscribed": [False] * n})
    if choice is not None:
        metrics["auto_choice"] = choice
    timings = pd.DataFrame({"epoch": list(range(n)) * 2, "phase": ["forward"] * n + ["sync_wait"] * n,
                            "seconds": [s * 0.75 for s in seconds] + [s * 0.25 for s in seconds]})
    return metrics, timings


def cand(label, strategy, workers, threads, trial=None, predicted=None, chosen=False, ppw=1, reason=None):
    return {"label": label, "strategy": strategy, "workers": workers, "threads": threads, "options": {},
            "processes_per_worker": ppw, "predicted_seconds": predicted, "predicted_peak_bytes": 1e6,
            "trial_seconds": trial, "epoch_seconds": trial, "chosen": chosen, "reason": reason}


PICK = "frames 1x1x2t (frame_size=4)"
AUTO_JSON = {"version": 1, "chosen": PICK, "candidates": [
    cand("sequential 1x1x2t", "sequential", 1, 2, trial=0.5, predicted=0.6),
    cand("vertex 2x1x1t", "vertex", 2, 1, trial=0.8, predicted=0.4),
    cand(PICK, "frames", 1, 2, trial=0.375, predicted=0.45, chosen=True),
    cand("group 1x2x1t", "group", 1, 1, ppw=2, trial=0.25, predicted=0.3),
    cand("snapshot 2x1x1t", "snapshot", 2, 1, predicted=0.35, reason="not among the best predicted"),
    cand("sequential 2x1x1t", "sequential", 2, 1, reason="the sequential strategy runs on 1 worker"),
]}


def test_auto_pick_beside_the_compared_runs_and_its_trials(tmp_path):
    runs = {"vertex": run([2.0, 1.0, 1.5], 2, 1), "sequential": run([1.0, 0.5, 0.5], 1, 2),
            "snapshot": run([1.0, 0.75], 2, 1), "auto": run([0.9, 0.25, 0.5], 1, 2, choice=PICK)}
    t = strategy_table(None, runs, {"auto": AUTO_JSON})
    assert t["strategy"].tolist() == ["vertex", "sequential", "snapshot", "auto"]
    assert t["epoch_s"].tolist() == [1.25, 0.5, 0.75, 0.375]        # median of the epochs after the first
    assert t["auto_choice"].tolist() == ["", "", "", PICK]
    # each compared run beside what auto's trial of its strategy on its hardware said; the pick's at auto
    np.testing.assert_array_equal(t["auto_trial_s"].to_numpy(), [0.8, 0.5, np.nan, 0.375])

    trials = auto_trials(t, {"auto": AUTO_JSON})
    want = pd.DataFrame({
        "run": ["auto"] * 4,
        "candidate": ["sequential 1x1x2t", "vertex 2x1x1t", PICK, "group 1x2x1t"],
        "strategy": ["sequential", "vertex", "frames", "group"],
        "processes": [1, 2, 1, 2], "threads": [2, 1, 2, 1],
        "trial_s": [0.5, 0.8, 0.375, 0.25], "predicted_s": [0.6, 0.4, 0.45, 0.3],
        "chosen": [False, False, True, False],
        "at": ["sequential", "vertex", "auto", ""],     # group: timed by auto only, no run of it here
    }, columns=AUTO_COLUMNS)
    pd.testing.assert_frame_equal(trials, want)
    assert strategy_labels(t) == ["vertex", "sequential", "snapshot", "auto → frames 1x1x2t S4"]

    # a run labelled with its slot (sequential@1t2) is still the sequential strategy's
    relabelled = {("sequential@1t2" if k == "sequential" else k): v for k, v in runs.items()}
    t2 = strategy_table(None, relabelled, {"auto": AUTO_JSON})
    assert auto_trials(t2, {"auto": AUTO_JSON})["at"].tolist() == ["sequential@1t2", "vertex", "auto", ""]

    # the figure draws, and the table writes
    paths = strategy_comparison(t, tmp_path / "compare-2.png", "d: m", trials)
    assert all(p.stat().st_size > 0 for p in paths)
    write_table(t, tmp_path / "compare-2.parquet", "")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "compare-2.parquet"), t)


def test_untimed_choice_and_no_auto_run(tmp_path):
    """One candidate that fits is trained untimed: no trial to mark, the pick placed at the auto run;
    a comparison without an auto run has no trials and NaN auto columns (the figure as before)."""
    only = {"chosen": "sequential 1x1x1t", "candidates": [cand("sequential 1x1x1t", "sequential", 1, 1, predicted=2.0,
                                                               chosen=True)]}
    runs = {"sequential": run([1.0, 0.5], 1, 1), "auto": run([1.0, 0.5], 1, 1, choice="sequential 1x1x1t")}
    t = strategy_table(None, runs, {"auto": only})
    trials = auto_trials(t, {"auto": only})
    assert trials[["candidate", "at", "chosen"]].values.tolist() == [["sequential 1x1x1t", "auto", True]]
    assert np.isnan(trials["trial_s"].iloc[0]) and trials["predicted_s"].tolist() == [2.0]
    assert t["auto_trial_s"].isna().all()
    strategy_comparison(t, tmp_path / "one.png", "", trials)

    plain = strategy_table(None, {"sequential": run([1.0, 0.5], 1, 1)})
    assert plain["auto_choice"].tolist() == [""] and plain["auto_trial_s"].isna().all()
    assert auto_trials(plain, {}).empty and list(auto_trials(plain, {}).columns) == AUTO_COLUMNS
    strategy_comparison(plain, tmp_path / "plain.png")
