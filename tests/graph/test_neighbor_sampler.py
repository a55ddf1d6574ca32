import numpy as np
import pytest

from dynagnn.graph.sample import NeighborSampler

from tests.testing.stores import random_csr


@pytest.mark.parametrize("fanouts", [(15, 10, 5), (3, 2), (0, 4), (1,)])
def test_samples_are_real_neighbours_within_fanout(fanouts):
    indptr, indices = random_csr()
    s = NeighborSampler(indptr, indices, fanouts, seed=3)
    adj = [set(indices[indptr[v]:indptr[v + 1]].tolist()) for v in range(indptr.size - 1)]
    seeds = np.array([0, 5, 5, 17, 42])
    hops = s.sample(seeds)
    assert len(hops) == len(fanouts)
    assert hops[0].nodes.tolist() == [0, 5, 17, 42]
    expect_nodes = set(seeds.tolist())
    for h, (hop, k) in enumerate(zip(hops, fanouts)):
        assert set(hop.nodes.tolist()) == expect_nodes
        assert np.all(np.diff(hop.nodes) > 0)
        assert hop.nbr_ptr.size == hop.nodes.size + 1
        for i, v in enumerate(hop.nodes.tolist()):
            got = hop.nbrs[hop.nbr_ptr[i]:hop.nbr_ptr[i + 1]].tolist()
            assert len(got) == min(k, len(adj[v]))
            assert len(set(got)) == len(got)  # without replacement
            assert set(got) <= adj[v]
        expect_nodes = expect_nodes | set(hop.nbrs.tolist())
    # input nodes: the unique union of seeds and every sampled neighbour, from the same sample
    union = set(seeds.tolist())
    for hop in hops:
        union |= set(hop.nodes.tolist()) | set(hop.nbrs.tolist())
    assert NeighborSampler.hops_input_nodes(hops).tolist() == sorted(union)


def test_input_nodes_deterministic_and_matches_sample():
    indptr, indices = random_csr(seed=1)
    seeds = np.array([1, 2, 3, 30])
    a = NeighborSampler(indptr, indices, (4, 3), seed=7)
    b = NeighborSampler(indptr, indices, (4, 3), seed=7)
    hops = a.sample(seeds)
    assert np.array_equal(NeighborSampler.hops_input_nodes(hops), b.input_nodes(seeds))
    # repeated calls draw fresh samples but the stream is reproducible
    c = NeighborSampler(indptr, indices, (4, 3), seed=7)
    d = NeighborSampler(indptr, indices, (4, 3), seed=7)
    for _ in range(3):
        assert np.array_equal(c.input_nodes(seeds), d.input_nodes(seeds))
    ids = c.input_nodes(seeds)
    assert ids.dtype == np.int64 and np.all(np.diff(ids) > 0)


def test_sampling_is_roughly_uniform():
    # a star: node 0 with 20 neighbours, fanout 5 -> each neighbour drawn with prob 1/4
    n = 21
    indptr = np.r_[0, 20, 21 + np.arange(20)].astype(np.int64)
    indices = np.r_[np.arange(1, 21), np.zeros(20, np.int64)].astype(np.int64)
    s = NeighborSampler(indptr, indices, (5,), seed=0)
    counts = np.zeros(n)
    for _ in range(2000):
        hop = s.sample([0])[0]
        counts[hop.nbrs] += 1
    freq = counts[1:] / 2000
    assert np.all(np.abs(freq - 0.25) < 0.05)


def test_isolated_and_bad_seeds():
    indptr = np.array([0, 0, 1, 2], np.int64)
    indices = np.array([2, 1], np.int64)
    s = NeighborSampler(indptr, indices, (2, 2))
    assert s.input_nodes([0]).tolist() == [0]
    assert s.input_nodes([1]).tolist() == [1, 2]
    with pytest.raises(ValueError):
        s.sample([3])
