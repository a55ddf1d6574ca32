"""Phase timing: exclusive nesting, epoch totals, summaries."""

import time

import pandas as pd

from dynagnn import timing as T


def test_nested_phases_are_exclusive_and_sum_to_wall():
    timer = T.PhaseTimer()
    start = time.perf_counter()
    with timer.epoch(0):
        with timer.phase("rnn"):
            time.sleep(0.02)
            with T.section("graph_op"):
                time.sleep(0.03)
        time.sleep(0.01)
    wall = time.perf_counter() - start
    f = timer.frame().set_index("phase")["seconds"]
    # a sleep is never shorter than asked, only longer on a busy machine: lower bounds per phase, and
    # the phases' sum within the wall (the inner 30 ms counted in rnn too would put it 30 ms over)
    assert f["graph_op"] >= 0.029 and f["rnn"] >= 0.019 and f["other"] >= 0.009
    assert f.sum() <= wall + 0.005
    assert f["rnn"] < wall - f["graph_op"]   # rnn holds its own 20 ms, not graph_op's


def test_section_without_timer_is_free():
    with T.section("graph_op"):
        pass
    assert T.active() is None


def test_summary_takes_median_and_drops_warmup():
    rows = [{"epoch": e, "worker": 0, "phase": "rnn", "seconds": s, "warmup": e == 0, "peak_memory_bytes": 0}
            for e, s in enumerate([10.0, 1.0, 3.0, 2.0])]
    med = T.summary(pd.DataFrame(rows))
    assert med["rnn"] == 2.0


def test_peak_memory_positive():
    assert T.peak_memory_bytes("cpu") > 10 * 2**20


def test_trace_segments_follow_the_innermost_phase(monkeypatch):
    from dynagnn.timing import trace_segments

    clock = iter(range(100))
    timer = T.PhaseTimer()
    monkeypatch.setattr(timer, "_now", lambda: float(next(clock)))
    timer.trace = []
    with timer.phase("rnn"):              # 0
        with timer.phase("graph_op"):     # 1 .. 2
            pass
        with timer.phase("nn_op"):        # 3 .. 4
            pass
    with timer.phase("backward"):         # 6 .. 7 (rnn closed at 5)
        pass
    s, e, k = trace_segments(timer.trace, {"graph_op": 0, "nn_op": 1, "rnn": 1})
    assert s.tolist() == [0, 1, 2, 3, 4] and e.tolist() == [1, 2, 3, 4, 5] and k.tolist() == [1, 0, 1, 1, 1]
