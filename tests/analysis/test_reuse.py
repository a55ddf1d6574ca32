"""Overlap and format tables against plain set arithmetic on the store's snapshots."""

import numpy as np
import pytest

from dynagnn.analysis import reuse as R
from dynagnn.analysis.parallel import dask_client
from dynagnn.data.store import open_store


def edge_sets(store, life=1):
    raw = [dict(((int(r), int(c)), float(w)) for r, c, w in zip(*store.edges(t))) for t in range(store.num_snapshots)]
    out = []
    for t in range(len(raw)):
        acc = {}
        for j in range(max(0, t - life + 1), t + 1):
            for e, w in raw[j].items():
                acc[e] = acc.get(e, 0.0) + w
        out.append(acc)
    return out


@pytest.mark.parametrize("use_dask", [False, True])
def test_overlap_table(store_path, use_dask):
    st = open_store(store_path)
    sets = [set(s) for s in edge_sets(st)]
    if use_dask:
        with dask_client(2, processes=False) as client:
            df = R.overlap_table(store_path, client, (2, 3), progress=False)
    else:
        df = R.overlap_table(store_path, None, (2, 3), progress=False)
    for size in (2, 3):
        sub = df[df["frame_size"] == size].reset_index(drop=True)
        starts = list(range(0, st.num_snapshots, size))
        assert sub["t0"].tolist() == starts
        for row, a in zip(sub.itertuples(), starts):
            frame = sets[a:a + size]
            inter, union = set.intersection(*frame), set.union(*frame)
            mean = np.mean([len(s) for s in frame])
            assert row.t1 == a + len(frame)
            assert row.overlap_edges == len(inter) and row.union_edges == len(union)
            assert row.exclusive_edges == sum(len(s - inter) for s in frame)
            assert row.overlap_rate == pytest.approx(len(inter) / mean if mean else 0.0)
            assert row.index_transfer_saving == pytest.approx(
                sum(len(s) for s in frame) / (len(inter) + sum(len(s - inter) for s in frame)))


def test_formats_table(store_path):
    st = open_store(store_path)
    df = R.formats_table(store_path, None, (1, 3), progress=False)
    n = st.num_nodes
    for life in (1, 3):
        sets = edge_sets(st, life)
        sub = df[df["edge_life"] == life].reset_index(drop=True)
        assert sub["snapshot"].tolist() == list(range(st.num_snapshots))
        for t, row in enumerate(sub.itertuples()):
            cur = sets[t]
            rows = sorted({r for r, _ in cur})
            slices = sum(-(-sum(1 for r, _ in cur if r == x) // 32) for x in rows)
            assert row.nnz == len(cur) and row.slices == slices
            assert row.csr_words == 2 * len(cur) + n + 1 and row.coo_words == 3 * len(cur)
            assert row.sliced_words == 2 * len(cur) + 2 * slices + 1
            # transfer columns: on Â's pattern (the edges and every self-loop), training's byte model
            adj = set(cur) | {(v, v) for v in range(n)}
            prev = (set(sets[t - 1]) | {(v, v) for v in range(n)}) if t else set()
            added, removed = len(adj - prev), len(prev - adj)
            assert row.adj_nnz == len(adj)
            assert (row.added, row.removed) == ((len(adj), 0) if t == 0 else (added, removed))
            assert row.full_bytes == 8 * (n + 1) + 12 * len(adj)
            assert row.diff_bytes == (row.full_bytes if t == 0 else 8 * (added + removed) + 4 * len(adj))
            assert row.diff_saving == pytest.approx(row.full_bytes / row.diff_bytes)
