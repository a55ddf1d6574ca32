"""The halo of a vertex partition on a directed graph follows the operator's direction (issue 34,
item 12): the rows a worker owns read the remote *sources* of their in-edges (PyG's
source-to-target flow), and the analyze stage's volume, counted on the store's (source, target)
edges, is exactly what the vertex strategy's halo plans receive."""

import numpy as np

from dynagnn.analysis.commvolume import count_vertex_volume
from dynagnn.graph.partition import snapshot_volume
from dynagnn.train.strategies.vertex import local_index, local_snapshot
from dynagnn.train.transfer import host_snapshot

# 0 -> 1, 0 -> 3, 1 -> 2, 2 -> 1, 2 -> 3, 4 -> 3, 4 -> 4 (a loop); 5 isolated
SRC = np.array([0, 0, 1, 2, 2, 4, 4])
DST = np.array([1, 3, 2, 1, 3, 3, 4])
N, P = 6, 2
PARTS = np.array([0, 0, 0, 1, 1, 1])


def halos():
    """{rank: (halo global ids, recv_counts)} of the vertex strategy's plans for this snapshot."""
    snap = host_snapshot(SRC, DST, None, N)
    out = {}
    for rank in range(P):
        local = local_index(PARTS, rank)
        (crow, col, _, ncols), plan = local_snapshot(snap, N, PARTS, rank, P, local)
        out[rank] = (ncols - int(np.count_nonzero(local >= 0)), plan.recv_counts, plan.send_counts)
    return out


def test_halo_is_the_remote_sources_of_owned_rows():
    # by hand: part 1 = {3, 4, 5} has in-edges 0 -> 3, 2 -> 3 from part 0: it reads 0 and 2;
    # part 0 = {0, 1, 2} has in-edges only from itself (0 -> 1, 1 -> 2, 2 -> 1): no halo.
    # (The reversed direction would give part 0 the halo {3} and part 1 none.)
    h = halos()
    assert h[0] == (0, [0, 0], [0, 2])
    assert h[1] == (2, [2, 0], [0, 0])


def test_counted_volume_on_source_target_edges_equals_the_halo():
    received = sum(sum(h[1]) for h in halos().values())
    assert count_vertex_volume([(SRC, DST)], N, PARTS, P) == received == 2
    assert snapshot_volume([(SRC, DST)], N, PARTS, P) == received
