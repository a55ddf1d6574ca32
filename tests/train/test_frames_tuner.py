"""The frame engine's run-time tuner choosing from measurements (PiPAD's tuner is a run-time one):
the candidates up to the memory bound, S = 1 always among them, each timed on the same work in
interleaved rounds with the warm-up round left out, the median of each piece kept, the simplest
within 3% of the fastest chosen, the pipeline decided against S = 1 in the same rounds, and each
frame's S_per decided under the chosen cap. Timings are injected."""

import pytest

from dynagnn.schedule.tuner import Candidate, FrameTuner, candidates, fastest, trial_seconds


def test_candidates_up_to_the_memory_bound_and_always_one():
    assert candidates(8) == [Candidate(1, 1), Candidate(2, 1), Candidate(2, 2), Candidate(4, 1), Candidate(4, 4),
                             Candidate(8, 1), Candidate(8, 8)]
    assert candidates(6, partitions=False) == [Candidate(s, s) for s in (1, 2, 4, 6)]
    assert candidates(6, options=(4,), partitions=False) == [Candidate(1, 1), Candidate(4, 4), Candidate(6, 6)]
    assert candidates(1, pipeline=True) == [Candidate(1, 1, True)]


def test_the_median_round_of_each_piece_counts():
    # per piece the median over rounds, summed: one disturbed round (slow or lucky) moves nothing
    assert trial_seconds([[1.0, 5.0], [3.0, 2.0], [2.0, 3.0]]) == 2.0 + 3.0
    assert trial_seconds([4.0, 0.1, 2.5]) == 2.5
    a, b, c = Candidate(2, 2), Candidate(4, 1), Candidate(4, 4)
    # b has one lucky round per piece; its medians (2.0 each) lose to a's steady 1.0
    assert fastest({a: [[1.0, 1.0]] * 3, b: [[0.1, 2.0], [2.0, 0.1], [2.0, 2.0]], c: [[3.0, 3.0]] * 3}) == a
    with pytest.raises(ValueError):
        fastest({})


def test_ties_go_to_the_simplest_candidate():
    one, two, two_pipe = Candidate(1, 1), Candidate(2, 2), Candidate(2, 2, True)
    assert fastest({one: [1.0], two: [1.0]}) == one                       # exact tie: the smaller S
    assert fastest({one: [1.02], two: [1.0]}) == one                      # within 3%: still a tie
    assert fastest({one: [1.05], two: [1.0]}) == two                      # clearly faster
    assert fastest({one: [1.05], two: [1.0], two_pipe: [1.0]}) == two     # then the pipeline off
    assert fastest({one: [1.02], two: [1.0]}, tie=0.0) == two


def test_freeze_interleaves_after_a_warm_up_and_keeps_the_fastest():
    seconds = {Candidate(1, 1): 9.0, Candidate(2, 1): 5.0, Candidate(2, 2): 6.0, Candidate(4, 1): 3.0,
               Candidate(4, 4): 4.0}
    calls = []

    def measure(c):
        calls.append(c)
        assert (t.frame_size, t.max_s_per, t.pipeline) == (c.frame_size, c.max_s_per, c.pipeline)   # in use
        warm = len(calls) <= len(seconds)
        return 100.0 if warm and c == Candidate(4, 1) else seconds[c]          # its slow warm-up is left out

    def stats(a, s):      # full overlap: the traffic model wants the largest S_per
        return 1.0, 0

    t = FrameTuner(stats, window=8, snapshot_bytes=10, bytes_available=45)   # memory bound: S <= 4
    assert t.freeze(measure=measure, rounds=3) == 4 and t.frozen
    assert calls == list(seconds) * 4            # interleaved rounds: a warm-up, then three timed
    assert all(len(v) == 3 for v in t.timings.values()) and not t.finals
    assert t.max_s_per == 1 and t.s_per(0, 4) == 1 and t.pipeline is False
    assert t.freeze(measure=lambda c: 0.0) == 4   # frozen: measured once
    free = FrameTuner(stats, window=8, snapshot_bytes=10, bytes_available=45)
    free.freeze(measure=lambda c: 1.0 if c == Candidate(4, 4) else 2.0)
    assert (free.frame_size, free.max_s_per, free.s_per(0, 4)) == (4, 4, 4)


@pytest.mark.parametrize("pipe_gain, one_gain, want", [
    (0.5, 1.0, Candidate(4, 4, True)),     # the pipeline pays for the stage-1 winner (not for S = 1)
    (1.0, 2.0, Candidate(4, 4, False)),    # it does not: off
    (1.0, 0.5, Candidate(1, 1, False)),    # re-timed beside it, S = 1 wins (the -R case)
    (1.0, 0.99, Candidate(1, 1, False)),   # S = 1 within 3%: a tie, the simpler kept
])
def test_the_pipeline_is_chosen_against_s_one_in_the_same_rounds(pipe_gain, one_gain, want):
    stage = []

    def measure(c):
        stage.append(c)
        if len(stage) <= 4 * 3:                  # stage 1 (3 candidates, 4 rounds): S = 4 wins clearly
            return {1: 3.0, 2: 2.0, 4: 1.0}[c.frame_size]
        base = one_gain if c.frame_size == 1 else 1.0
        return base * (pipe_gain if c.pipeline and c.frame_size == 4 else 1.0)

    t = FrameTuner(lambda a, s: (1.0, 0), window=4, snapshot_bytes=1, bytes_available=1e9)
    t.freeze(measure=measure, partitions=False, pipelines=(False, True))
    assert all(not c.pipeline for c in stage[:12])
    finals = [Candidate(1, 1, False), Candidate(1, 1, True), Candidate(4, 4, False), Candidate(4, 4, True)]
    assert stage[12:] == finals * 4               # stage 2 interleaved, warm-up round first
    assert sorted(t.finals) == finals
    assert (t.frame_size, t.max_s_per, t.pipeline) == (want.frame_size, want.max_s_per, want.pipeline)


def test_fixed_frame_size_chooses_only_the_pipeline():
    t = FrameTuner(lambda a, s: (1.0, 0), window=8, snapshot_bytes=10, bytes_available=1e6, frame_size=4)
    seen = []
    t.freeze(measure=lambda c: seen.append(c) or (0.5 if c.pipeline else 1.0), pipelines=(False, True))
    assert set(seen) == {Candidate(4, 4, False), Candidate(4, 4, True)} and len(seen) == 8
    assert (t.frame_size, t.pipeline) == (4, True)
    fixed = FrameTuner(lambda a, s: (1.0, 0), window=8, snapshot_bytes=10, bytes_available=1e6, frame_size=4)
    assert fixed.freeze(measure=seen.append, pipelines=(True,)) == 4 and fixed.pipeline is True and len(seen) == 8


def test_fixed_frame_size_keeps_what_it_ran_with():
    """Choosing the pipeline for a hand-fixed S leaves the stall check off (no compute time or feed
    rate taken from the profiling epoch) and the S_per cap as it was."""
    t = FrameTuner(lambda a, s: (1.0, 0), window=8, snapshot_bytes=10, bytes_available=1e6, frame_size=4)
    cap = t.max_s_per
    t.freeze(0.25, 1e6, measure=lambda c: 0.5 if c.pipeline else 1.0, pipelines=(False, True))
    assert t.pipeline is True and t.compute_time is None and t.bytes_per_second is None and t.max_s_per == cap
    free = FrameTuner(lambda a, s: (1.0, 0), window=8, snapshot_bytes=10, bytes_available=1e6)
    free.freeze(0.25, 1e6, measure=lambda c: 1.0, pipelines=(False, True))
    assert (free.compute_time, free.bytes_per_second) == (0.25, 1e6)


def test_without_measurements_the_memory_bound_decides():
    t = FrameTuner(lambda a, s: (1.0, 0), window=8, snapshot_bytes=10, bytes_available=1e6)
    assert t.freeze() == 8 and t.max_s_per == 8 and t.timings == {}
    one = FrameTuner(lambda a, s: (1.0, 0), window=8, snapshot_bytes=10, bytes_available=15)
    calls = []
    assert one.freeze(measure=calls.append) == 1 and not calls     # a single candidate: nothing to time
