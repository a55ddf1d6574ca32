"""The frame engine's tuner: S from the memory bound after a profiling epoch (or fixed), S_per per
frame by tune_frames from the frame's overlap rates, decided once."""

from dynagnn.schedule.tuner import FrameTuner, frame_size_for, partition_options


def test_frame_size_fits_memory_window_and_cap():
    assert frame_size_for(8, 100, 1000) == 8
    assert frame_size_for(8, 100, 350) == 3
    assert frame_size_for(32, 1, 1e9) == 16
    assert frame_size_for(8, 100, 10) == 1


def test_partition_options_include_the_frame():
    assert partition_options(6) == (1, 2, 4, 6)
    assert partition_options(8) == (1, 2, 4, 8)
    assert partition_options(1) == (1,)


def test_profiling_epoch_then_frozen_choices():
    calls = []

    def stats(a, s):
        calls.append((a, s))
        return (0.9 if s <= 2 else 0.0), 1000 * s   # overlap collapses beyond 2 snapshots

    t = FrameTuner(stats, window=8, snapshot_bytes=10, bytes_available=45)
    assert not t.frozen and t.frame_size == 1
    assert t.freeze() == 4 and t.frozen
    # traffic speedup s / (OR + (1 - OR) s): 1.82 at s=2 (OR .9) beats 1.0 at s=4 (OR 0)
    assert t.s_per(0, 4) == 2
    n = len(calls)
    assert t.s_per(0, 4) == 2 and len(calls) == n       # decided once
    assert t.s_per(4, 1) == 1
    fixed = FrameTuner(lambda a, s: (1.0, 0), window=8, snapshot_bytes=10, bytes_available=1e6, frame_size=8)
    assert fixed.frozen and fixed.frame_size == 8 and fixed.s_per(0, 8) == 8


def test_stalling_options_are_rejected_once_profiled():
    t = FrameTuner(lambda a, s: (1.0, 1e6 * s), window=4, snapshot_bytes=1, bytes_available=1e9)
    t.freeze(compute_time=1e-3, bytes_per_second=1e9)   # moving s partitions takes s ms: s=4 stalls
    assert t.s_per(0, 4) < 4
