"""A row table partitioned across 2 gloo processes (Sven's memory and mailbox): fetched rows equal
a direct gather, each distinct row crosses once with dedupe (every occurrence without), updates
reach their owners with the highest priority winning; a replicated table (DepCache) gets every
update everywhere."""

import numpy as np
import pytest
import torch

from dynagnn.dist.rows import RowTable
from dynagnn.dist.testing import run_on
from dynagnn.graph.dispatch import plan_requests

N, D, WORLD = 30, 3, 2


def _table():
    rng = np.random.default_rng(0)
    owner = rng.integers(0, WORLD, N)
    full = torch.from_numpy(rng.standard_normal((N, D)).astype(np.float32))
    return owner, full


def _asks(rank):
    rng = np.random.default_rng(10 + rank)
    ids = rng.integers(0, N, 25)
    updates = rng.integers(0, N, 12)
    rows = torch.from_numpy(rng.standard_normal((12, D)).astype(np.float32))
    # rising within a rank, as event indices are (a row's last update is its latest); distinct across ranks
    priority = np.sort(rng.permutation(1000)[:12]) * WORLD + rank
    return ids, updates, rows, priority


CASES = [(True, False), (False, False), (True, True)]  # Sven, DepComm, DepCache


def _body(ctx, comm):
    return {case: _case(ctx, comm, *case) for case in CASES}


def _case(ctx, comm, dedupe, replicated):
    owner, full = _table()
    rows = full.clone() if replicated else full[owner == ctx.rank].clone()
    table = RowTable(comm, owner, rows, "memory", replicated=replicated)
    ids, updates, new, priority = _asks(ctx.rank)
    req = plan_requests(ids, owner, WORLD, dedupe)
    comm.take_counts()
    got = table.fetch(req.ids, req.counts)[torch.from_numpy(req.inverse)]
    fetch_bytes = comm.take_counts().get("memory", (0, 0))[0]
    up = plan_requests(updates, owner, WORLD, True)
    table.push(up.ids, up.counts, new[torch.from_numpy(up.latest)], priority[up.latest])
    return got, fetch_bytes, table.rows


@pytest.fixture(scope="module")
def results():
    return run_on(WORLD, _body)


@pytest.mark.parametrize("dedupe,replicated", CASES)
def test_fetch_and_push_across_two_workers(results, dedupe, replicated):
    owner, full = _table()
    expected = full.clone()
    best = {}
    for rank in range(WORLD):
        _, updates, new, priority = _asks(rank)
        for i, (v, p) in enumerate(zip(updates.tolist(), priority.tolist())):
            if p > best.get(v, (-1,))[0]:
                best[v] = (p, new[i])
    for v, (_, row) in best.items():
        expected[v] = row
    for rank, (got, fetch_bytes, rows) in enumerate(r[(dedupe, replicated)] for r in results):
        ids = _asks(rank)[0]
        torch.testing.assert_close(got, full[torch.from_numpy(ids)], rtol=0, atol=0)
        # a rank sends the rows its peer asked of it: each distinct one once with dedupe
        peer_ids = _asks(1 - rank)[0]
        peer_remote = peer_ids[owner[peer_ids] != 1 - rank]
        peer_rows = 0 if replicated else (np.unique(peer_remote).size if dedupe else peer_remote.size)
        assert fetch_bytes == peer_rows * D * 4
        want = expected if replicated else expected[owner == rank]
        torch.testing.assert_close(rows, want, rtol=0, atol=0)
