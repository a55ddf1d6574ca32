"""The pipeline's producer (CPU path): items are prepared in order in another thread, ahead of the
consumer but never more than the queue allows; an unexpected key is prepared in the consumer; a
producer error reaches the consumer; the consumer's wait is timed as transfer."""

import threading

import pytest

from dynagnn.timing import PhaseTimer
from dynagnn.train.pipeline import Prefetcher


def test_next_item_is_prepared_while_the_consumer_holds_this_one():
    made = {k: threading.Event() for k in range(5)}
    threads = {}

    def prepare(k):
        threads[k] = threading.get_ident()
        made[k].set()
        return k * 10

    p = Prefetcher(prepare, depth=1)
    p.schedule(range(5))
    for k in range(5):
        assert p.get(k) == k * 10
        if k + 1 < 5:   # prepared with item k still in the consumer's hands: overlap, not timing
            assert made[k + 1].wait(timeout=10)
    assert set(threads.values()) != {threading.get_ident()}
    s = p.take_stats()
    assert s["prefetched"] == 5 and s["inline"] == 0
    p.close()


def test_the_queue_bounds_how_far_the_producer_runs_ahead():
    started = []
    gate = threading.Event()

    def prepare(k):
        started.append(k)
        return k

    p = Prefetcher(prepare, depth=2)
    p.schedule(range(10))
    # depth 2 queued + 1 prepared and waiting to be queued
    for _ in range(1000):
        if len(started) >= 3:
            break
        gate.wait(0.01)
    gate.wait(0.2)
    assert len(started) == 3
    assert [p.get(k) for k in range(10)] == list(range(10))
    p.close()


def test_an_unexpected_key_is_prepared_here_and_the_schedule_dropped():
    p = Prefetcher(lambda k: ("item", k), depth=2)
    p.schedule([1, 2, 3])
    assert p.get(1) == ("item", 1)
    assert p.get(7) == ("item", 7)          # evaluation, a re-run: not what was scheduled
    assert p.get(2) == ("item", 2)          # inline from now on, still correct
    s = p.take_stats()
    assert s["prefetched"] == 1 and s["inline"] == 2


def test_a_producer_error_reaches_the_consumer():
    def prepare(k):
        if k == 2:
            raise ValueError("bad frame 2")
        return k

    p = Prefetcher(prepare)
    p.schedule(range(4))
    assert p.get(0) == 0 and p.get(1) == 1
    with pytest.raises(ValueError, match="bad frame 2"):
        p.get(2)
    assert p._thread is None


def test_disabled_prepares_in_the_consumer_and_times_the_wait_as_transfer():
    timer = PhaseTimer()
    p = Prefetcher(lambda k: k + 1, enabled=False, timer=timer)
    p.schedule(range(3))
    assert p._thread is None
    with timer.epoch(0):
        assert [p.get(k) for k in range(3)] == [1, 2, 3]
    assert "transfer" in set(timer.frame()["phase"])
    assert p.take_stats()["inline"] == 3


def test_a_producer_thread_has_a_core_only_where_the_job_leaves_one(monkeypatch):
    """A pipeline's auto starts its producer only where the torch threads of this machine's processes
    leave a core over, or on a GPU (the thread only feeds it)."""
    import torch

    from dynagnn.distributed import launch
    from dynagnn.train.pipeline import producer_has_core

    monkeypatch.setattr(launch, "available_cores", lambda: 4)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert producer_has_core("cpu") and not producer_has_core("cpu", processes=2)
        torch.set_num_threads(4)
        assert not producer_has_core("cpu") and producer_has_core("cuda", processes=8)
        torch.set_num_threads(1)   # each process's producer needs a core: 2 processes fit 4, not 3
        assert producer_has_core("cpu", processes=2)
        monkeypatch.setattr(launch, "available_cores", lambda: 3)
        assert not producer_has_core("cpu", processes=2)
    finally:
        torch.set_num_threads(before)
