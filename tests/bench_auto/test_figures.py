"""``python -m benchmarks auto``'s figures from an auto.json and the exhaustive epochs: the regret, the
cost model's Spearman correlation, the trials' share, the summary over cases and the table's labels."""

import math

import pytest

from benchmarks import bench_auto

from tests.testing.auto_reports import ROWS

REPORT = {"chosen": "sequential 1x1x2t", "candidates": ROWS, "trial_seconds_total": 1.0, "resolve_seconds_total": 2.0}


def test_the_exhaustive_search_runs_what_auto_predicted_and_rebuilds_its_candidates():
    assert [r["label"] for r in bench_auto.runnable_rows(REPORT)] == [r["label"] for r in ROWS[:3]]
    assert [bench_auto.candidate_of(r).label() for r in ROWS] == [r["label"] for r in ROWS]


def test_regret_is_the_picks_measured_epoch_over_the_best():
    assert bench_auto.regret({"a": 0.5, "b": 0.4, "c": 0.6}, "a") == 0.5 / 0.4
    assert bench_auto.regret({"a": 0.4, "b": 0.5}, "a") == 1.0
    assert math.isnan(bench_auto.regret({"b": 0.4}, "a"))   # the pick's trial failed


def test_case_figures():
    seconds = {"sequential 1x1x2t": 0.5, "frames 1x1x2t (frame_size=4)": 0.4, "group 1x2x1t": 0.6}
    got = bench_auto.case_figures(REPORT, seconds)
    assert got["candidates_run"] == 3 and got["chosen"] == "sequential 1x1x2t"
    assert got["best"] == "frames 1x1x2t (frame_size=4)"
    assert got["regret"] == 1.25
    # predicted ranks 1 2 3 against measured 2 1 3: 1 - 6 (1 + 1) / (3 (9 - 1)) = 0.5
    assert got["spearman"] == pytest.approx(0.5, abs=1e-12)
    assert got["trial_share"] == 0.1 and got["resolve_share"] == 0.2   # 1 s and 2 s of 20 x 0.5 s
    assert got["chosen_epoch_s"] == 0.5 and got["best_epoch_s"] == 0.4
    # the ranking reversed: -1; a candidate the search could not time is left out of it
    rev = bench_auto.case_figures(REPORT, {"sequential 1x1x2t": 0.9, "frames 1x1x2t (frame_size=4)": 0.5,
                                           "group 1x2x1t": 0.1})
    assert rev["spearman"] == pytest.approx(-1.0, abs=1e-12) and rev["regret"] == 9.0
    two = bench_auto.case_figures(REPORT, {"sequential 1x1x2t": 0.3, "group 1x2x1t": 0.6})
    assert two["candidates_run"] == 2 and two["spearman"] == pytest.approx(1.0, abs=1e-12) and two["regret"] == 1.0


def test_summary_leaves_out_the_cases_without_a_figure():
    rows = [{"regret": 1.0, "trial_share": 0.05, "spearman": 0.5}, {"regret": 1.25, "trial_share": 0.2, "spearman": 1.0},
            {"regret": math.nan, "trial_share": math.nan, "spearman": math.nan},
            {"regret": 1.1, "trial_share": 0.08, "spearman": -0.5}]
    s = bench_auto.summary(rows)
    assert s["cases"] == 4 and s["measured"] == 3
    assert s["median_regret"] == 1.1 and s["worst_regret"] == 1.25 and s["regret_within_1.05"] == 1
    assert s["median_trial_share"] == 0.08 and s["trial_share_within_10%"] == 2
    assert s["median_spearman"] == 0.5


def test_short_labels():
    assert bench_auto.short_label("frames 1x1x2t (frame_size=4)") == "frames 1x1x2t S4"
    assert bench_auto.short_label("sequential 1x1x2t (checkpoint_blocks=2)") == "sequential 1x1x2t cb2"
    assert bench_auto.short_label("group_frames 1x2x1t (frame_size=2, transfer=diff)") == "group_frames 1x2x1t S2 diff"
    assert bench_auto.short_label("group 1x2x1t") == "group 1x2x1t"
    assert bench_auto.short_label(None) == "-"


def test_an_epoch_of_few_steps_is_timed_in_more_rounds():
    """Each candidate's exhaustive epoch is a median over at least MIN_TIMED_STEPS timed steps: an epoch
    of one step (a carried sequence) takes that many rounds, one of K or more steps the rounds asked."""
    k = bench_auto.MIN_TIMED_STEPS
    assert bench_auto.exhaustive_rounds(2, 4, 1) == k
    assert bench_auto.exhaustive_rounds(2, 4, 3) == math.ceil(k / 3)
    assert bench_auto.exhaustive_rounds(2, 4, 134) == max(2, math.ceil(k / 4))
    assert bench_auto.exhaustive_rounds(12, 4, 1) == 12
