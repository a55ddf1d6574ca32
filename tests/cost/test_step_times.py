"""The chooser's one-snapshot timing (:func:`dynagnn.cost.step_times.step_seconds`): one model, a
warm-up per thread count, the fastest pass kept, the caller's thread count restored."""

import pytest
import torch

from dynagnn.cost import step_times
from dynagnn.data.store import open_store

from tests.testing.stores import small_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return open_store(small_store(tmp_path_factory.mktemp("steps") / "s.zarr", features="degree", dim=4))


def test_each_count_warmed_once_then_timed_per_pass_the_fastest_kept(store, monkeypatch):
    calls = []
    times = iter([(3.0, 1.0), (2.0, 2.0), (1.0, 0.5), (5.0, 5.0), (0.5, 2.5), (9.0, 9.0)])

    def spy(net, adj, x, n, repeats, sync, warm=True):
        calls.append((torch.get_num_threads(), warm, tuple(x.shape), n))
        return next(times)
    monkeypatch.setattr(step_times, "_time_step", spy)
    before = torch.get_num_threads()
    got = step_times.step_seconds(store, "tgcn", 8, 3, [2, 1, 2], passes=3)
    assert [c[:2] for c in calls] == [(1, True), (2, True), (1, False), (2, False), (1, False), (2, False)]
    assert {c[2:] for c in calls} == {((store.num_nodes, 4), store.num_nodes)}   # snapshot 3's [N, F] features
    assert got == {1: (1.0, 0.5), 2: (2.0, 2.0)}   # by forward plus backward: 1.5 < 3 < 4, and 4 < 10 < 18
    assert torch.get_num_threads() == before


def test_a_real_step_timed_forward_and_backward(store):
    got = step_times.step_seconds(store, "tgcn", 8, store.num_snapshots - 1, [1])
    assert list(got) == [1] and all(s > 0 for s in got[1])
