from collections import OrderedDict

import numpy as np
import pytest

from dynagnn.graph.cache import FIFOCache, LRUCache, StaticCache


class RefFIFO:
    def __init__(self, cap):
        self.cap, self.d = cap, OrderedDict()

    def lookup(self, ids):
        hit = [i in self.d for i in ids]
        if self.cap:
            # the batch's distinct misses, in order of first occurrence
            misses = list(OrderedDict.fromkeys(i for i, h in zip(ids, hit) if not h))
            for i in misses:
                self.d[i] = None
                if len(self.d) > self.cap:
                    self.d.popitem(last=False)
        return hit


class RefLRU:
    def __init__(self, cap):
        self.cap, self.d = cap, OrderedDict()

    def lookup(self, ids):
        hit = [i in self.d for i in ids]
        if self.cap:
            for i in ids:
                if i in self.d:
                    self.d.move_to_end(i)
                else:
                    self.d[i] = None
                    if len(self.d) > self.cap:
                        self.d.popitem(last=False)
        return hit


def streams(n_nodes, seed, n_batches=40, unique=True):
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, n_nodes + 1) ** 0.8  # skewed popularity
    p /= p.sum()
    for _ in range(n_batches):
        m = int(rng.integers(0, 60))
        ids = rng.choice(n_nodes, size=m, p=p)  # with repeats
        if unique:
            ids = np.unique(ids)
            rng.shuffle(ids)
        yield ids.astype(np.int64)


@pytest.mark.parametrize("cls,ref", [(FIFOCache, RefFIFO), (LRUCache, RefLRU)])
@pytest.mark.parametrize("cap", [0, 1, 7, 30, 100, 300])
@pytest.mark.parametrize("unique", [True, False])
def test_dynamic_policies_equal_reference(cls, ref, cap, unique):
    n = 200
    for seed in range(3):
        grow = seed % 2 == 0   # also test arrays grown on demand
        c = cls(cap) if grow else cls(cap, num_nodes=n)
        r = ref(cap)
        hits = 0
        for ids in streams(n, seed, unique=unique):
            got = c.lookup(ids)
            exp = r.lookup(ids.tolist())
            assert got.dtype == bool and got.tolist() == exp
            hits += sum(exp)
            assert sorted(c.contents().tolist()) == sorted(r.d)
        assert c.hits == hits
        assert c.hits + c.misses == c.lookups
        assert c.size <= cap


def test_fifo_hits_do_not_refresh_but_lru_does():
    f, l = FIFOCache(2), LRUCache(2)
    for ids in ([1], [2], [1], [3]):
        f.lookup(ids), l.lookup(ids)
    assert f.contents().tolist() == [2, 3]  # 1 was oldest inserted
    assert l.contents().tolist() == [1, 3]  # 2 was least recently used


def test_batch_semantics_misses_inserted_after_lookup():
    c = FIFOCache(10)
    assert c.lookup([4, 4, 5]).tolist() == [False, False, False]
    assert c.misses == 3 and c.size == 2
    assert c.lookup([4, 6]).tolist() == [True, False]
    assert c.hit_ratio == pytest.approx(1 / 5)


def test_static_cache_top_by_score_never_changes():
    scores = np.array([3, 9, 1, 9, 0, 5])
    c = StaticCache(3, scores)
    assert c.contents().tolist() == [1, 3, 5]
    assert c.lookup([0, 1, 5, 2]).tolist() == [False, True, True, False]
    assert c.contents().tolist() == [1, 3, 5]
    assert (c.hits, c.misses, c.lookups) == (2, 2, 4)


@pytest.mark.parametrize("cap", [0, 5, 50, 200, 500])
def test_static_equals_reference(cap):
    rng = np.random.default_rng(cap)
    n = 200
    scores = rng.integers(0, 10, n)  # many ties
    top = set(sorted(range(n), key=lambda v: (-scores[v], v))[:cap])
    c = StaticCache(cap, scores)
    hits = 0
    for ids in streams(n, cap, unique=False):
        exp = [int(i) in top for i in ids]
        assert c.lookup(ids).tolist() == exp
        hits += sum(exp)
    assert c.hits == hits


def test_rejects_negative():
    with pytest.raises(ValueError):
        FIFOCache(-1)
    with pytest.raises(ValueError):
        LRUCache(3).lookup([-1])
