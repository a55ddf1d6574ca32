"""The frame engine's run-time tuner choosing from measurements (PiPAD's tuner is a run-time one):
the candidates up to the memory bound, each timed on the same work with the warm-up round left
out, the fastest kept, and each frame's S_per decided under the chosen cap. Timings are injected."""

import pytest

from dynagnn.schedule.tuner import Candidate, FrameTuner, candidates, fastest, trial_seconds


def test_candidates_up_to_the_memory_bound():
    assert candidates(8) == [Candidate(1, 1), Candidate(2, 1), Candidate(2, 2), Candidate(4, 1), Candidate(4, 4),
                             Candidate(8, 1), Candidate(8, 8)]
    assert candidates(6, partitions=False) == [Candidate(s, s) for s in (1, 2, 4, 6)]
    assert candidates(1) == [Candidate(1, 1)]


def test_the_least_disturbed_round_of_each_piece_counts():
    # per piece the minimum over rounds (1 and 2), summed: a noisy round never wins or loses alone
    assert trial_seconds([[1.0, 5.0], [3.0, 2.0]]) == 3.0
    assert trial_seconds([4.0, 2.5]) == 2.5
    a, b, c = Candidate(2, 2), Candidate(4, 1), Candidate(4, 4)
    assert fastest({a: [[1.0, 1.0]], b: [[0.5, 2.0], [2.0, 0.5]], c: [[3.0, 3.0]]}) == b
    assert fastest({a: [1.0], b: [1.0], c: [1.0]}) == c     # exact ties: the larger S, then S_per cap
    with pytest.raises(ValueError):
        fastest({})


def test_freeze_times_every_candidate_and_keeps_the_fastest():
    seconds = {Candidate(1, 1): 9.0, Candidate(2, 1): 5.0, Candidate(2, 2): 6.0, Candidate(4, 1): 3.0,
               Candidate(4, 4): 4.0}
    calls = []

    def measure(c):
        calls.append(c)
        assert (t.frame_size, t.max_s_per) == (c.frame_size, c.max_s_per)   # run under the candidate
        warm = len(calls) <= len(seconds)
        return 100.0 if warm and c == Candidate(4, 1) else seconds[c]          # its slow warm-up is left out

    def stats(a, s):      # full overlap: the traffic model wants the largest S_per
        return 1.0, 0

    t = FrameTuner(stats, window=8, snapshot_bytes=10, bytes_available=45)   # memory bound: S <= 4
    assert t.freeze(measure=measure, rounds=2) == 4 and t.frozen
    assert calls == list(seconds) * 3            # interleaved rounds: a warm-up, then two timed
    assert t.max_s_per == 1 and t.s_per(0, 4) == 1
    assert t.freeze(measure=lambda c: 0.0) == 4   # frozen: measured once
    free = FrameTuner(stats, window=8, snapshot_bytes=10, bytes_available=45)
    free.freeze(measure=lambda c: 1.0 if c == Candidate(4, 4) else 2.0)
    assert (free.frame_size, free.max_s_per, free.s_per(0, 4)) == (4, 4, 4)


def test_without_measurements_the_memory_bound_decides():
    t = FrameTuner(lambda a, s: (1.0, 0), window=8, snapshot_bytes=10, bytes_available=1e6)
    assert t.freeze() == 8 and t.max_s_per == 8 and t.timings == {}
    one = FrameTuner(lambda a, s: (1.0, 0), window=8, snapshot_bytes=10, bytes_available=15)
    calls = []
    assert one.freeze(measure=calls.append) == 1 and not calls     # a single candidate: nothing to time
