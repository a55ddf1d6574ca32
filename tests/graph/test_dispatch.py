"""Sven's redundancy-free organisation (Algorithm 2) and the requests a worker sends the owners."""

import numpy as np
import pytest

from dynagnn.graph.dispatch import plan_requests, redundancy_free


def test_redundancy_free_restoration_and_latest():
    rng = np.random.default_rng(0)
    for size in (0, 1, 7, 200):
        v = rng.integers(0, 15, size)
        u, psi, phi = redundancy_free(v)
        np.testing.assert_array_equal(u[psi], v)  # X_o = X_u[Ψ]
        assert u.tolist() == sorted(set(v.tolist()))
        last = {}
        for i, x in enumerate(v.tolist()):
            last[x] = i
        assert phi.tolist() == [last[x] for x in u.tolist()]
        # Φ over interactions ξ_j (src/dst interleaved: occurrence i belongs to ξ_{i // 2})
        _, _, phi_j = redundancy_free(v, np.arange(size) // 2)
        assert phi_j.tolist() == [last[x] // 2 for x in u.tolist()]


@pytest.mark.parametrize("dedupe", [True, False])
def test_requests_group_by_owner_and_restore_every_occurrence(dedupe):
    rng = np.random.default_rng(1)
    owner = rng.integers(0, 3, 40)
    for size in (0, 1, 9, 300):
        ids = rng.integers(0, 40, size)
        req = plan_requests(ids, owner, 3, dedupe)
        np.testing.assert_array_equal(req.ids[req.inverse], ids)  # the answers restore every occurrence
        assert req.counts.sum() == req.ids.size and req.counts.shape == (3,)
        bounds = np.concatenate([[0], np.cumsum(req.counts)])
        for r in range(3):  # each owner's group: its ids only
            mine = req.ids[bounds[r]:bounds[r + 1]]
            assert (owner[mine] == r).all()
            if dedupe:  # each distinct id once, ascending
                assert mine.tolist() == sorted(set(ids[owner[ids] == r].tolist()))
            else:  # every occurrence, in its order
                assert mine.tolist() == ids[owner[ids] == r].tolist()
