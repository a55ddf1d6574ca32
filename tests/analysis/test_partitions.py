"""The partition table against brute-force counts on the store's union graph and snapshots."""

import numpy as np
import pytest

from dynagnn.analysis import partitions as AP
from dynagnn.analysis.parallel import dask_client
from dynagnn.data.store import open_store
from dynagnn.errors import InputError
from dynagnn.graph import partition as gp


def test_union_graph(store_path):
    st = open_store(store_path)
    want = set()
    for t in range(st.num_snapshots):
        r, c, _ = st.edges(t)
        want |= {(int(a), int(b)) for a, b in zip(r, c) if a != b}
        want |= {(int(b), int(a)) for a, b in zip(r, c) if a != b}
    row, col = AP.union_graph(st)
    assert list(zip(row.tolist(), col.tolist())) == sorted(want)


@pytest.mark.parametrize("use_dask", [False, True])
def test_table_rows(store_path, use_dask):
    st = open_store(store_path)
    if use_dask:
        with dask_client(2, processes=False) as client:
            df = AP.partition_table(store_path, client, (2, 3))
    else:
        df = AP.partition_table(store_path, None, (2, 3))
    assert len(df) == 2 * (len(AP.VERTEX_METHODS) + len(AP.TEMPORAL_METHODS))
    row, col = AP.union_graph(st)
    nnz = np.diff(st.offsets)
    for P in (2, 3):
        parts = gp.range_partition(st.num_nodes, P)
        r = df[(df["method"] == "range") & (df["workers"] == P)].iloc[0]
        cut = sum(1 for a, b in zip(row, col) if a < b and parts[a] != parts[b])
        assert r["edge_cut"] == cut
        vol = 0
        for t in range(st.num_snapshots):
            er, ec, _ = st.edges(t)
            for v in range(st.num_nodes):
                vol += len({int(parts[u]) for u in ec[er == v]} - {int(parts[v])})
        assert r["snapshot_volume"] == vol
        e = df[(df["method"] == "esdg_even") & (df["workers"] == P)].iloc[0]
        chunks = np.array_split(nnz, P)
        assert e["max_worker_edges"] == max(c.sum() for c in chunks)
        b = df[(df["method"] == "blad_groups") & (df["workers"] == P)].iloc[0]
        assert b["max_worker_edges"] <= e["max_worker_edges"]  # the optimum is never worse than the even split


def test_too_many_workers(store_path):
    st = open_store(store_path)
    with pytest.raises(InputError, match="snapshots: the temporal partitioners"):
        AP.partition_table(store_path, None, (st.num_snapshots + 1,))
    with pytest.raises(InputError, match="vertices: a worker count must be 1..N"):
        AP.partition_table(store_path, None, (st.num_nodes + 1,), methods=("hash",))
