"""An event batch's sampled neighbours against a brute-force search in time order, and the memory
after a run of batches against a replay event by event."""

import numpy as np
import pytest
import torch

from dynagnn.graph.sample import TemporalNeighbors
from dynagnn.models.tgnn import apply_writes, build_tgnn, make_batch
from dynagnn.models.tgnn.time_encoding import time_delta
from tests.testing.stores import random_events


def brute_recent(src, dst, t, ids, v, tq, k):
    """The k latest interactions of v strictly before tq, latest first (later event first on ties);
    a self-loop is an interaction of both of its ends, so it counts twice."""
    hits = []
    for i in range(src.size):
        if t[i] < tq:
            hits += [(float(t[i]), i, int(dst[i]))] * int(src[i] == v) + [(float(t[i]), i, int(src[i]))] * int(dst[i] == v)
    hits.sort(key=lambda h: (h[0], h[1]), reverse=True)
    return [(nb, ti, int(ids[i])) for ti, i, nb in hits[:k]]


@pytest.mark.parametrize("subset", [False, True])
def test_sampler_events_against_brute_force(subset):
    ev = random_events(n_nodes=12, n_events=150, t_max=60, seed=3)
    src, dst, t = ev.src, ev.dst, ev.t
    ids = np.arange(src.size)
    if subset:  # a sampler over some events reports their stream ids
        keep = np.flatnonzero(np.arange(src.size) % 3 != 0)
        src, dst, t, ids = src[keep], dst[keep], t[keep], keep
    s = TemporalNeighbors(src, dst, t, 12, event_ids=ids)
    rng = np.random.default_rng(0)
    nodes, times = rng.integers(0, 12, 40), rng.integers(0, 70, 40)
    nbr, nbr_t, eid = s.most_recent_events(nodes, times, 4)
    for q in range(40):
        want = brute_recent(src, dst, t, ids, nodes[q], times[q], 4)
        got = [(int(a), float(b), int(c)) for a, b, c in zip(nbr[q], nbr_t[q], eid[q]) if a >= 0]
        assert got == want


def test_make_batch_indexes_the_unique_rows():
    ev = random_events(n_nodes=15, n_events=100, seed=1)
    s = TemporalNeighbors.from_events(ev, 15)
    neg = np.arange(40).reshape(20, 2) % 15
    b = make_batch(ev.src[50:70], ev.dst[50:70], ev.t[50:70], np.arange(50, 70), neg, s, 3, "all")
    assert np.array_equal(b.nodes[b.root_idx], b.roots)
    assert np.array_equal(b.nodes[b.nbr_idx][b.nbr_valid], b.nbr[b.nbr_valid])
    assert np.array_equal(b.nodes, np.unique(np.concatenate([b.roots, b.nbr[b.nbr_valid]])))
    assert (b.nbr_t[b.nbr_valid] < np.broadcast_to(b.root_t[:, None], b.nbr.shape)[b.nbr_valid]).all()
    none = make_batch(ev.src[:5], ev.dst[:5], ev.t[:5], np.arange(5), np.zeros((5, 1)), s, 0, "none")
    assert none.nbr.shape == (0, 0) and np.array_equal(none.nodes, np.unique(none.roots))


def test_make_batch_lists_distinct_roots_neighbour_rows_and_gaps():
    """What the embedding computes once (issue 32): one row per distinct (node, time) root with every
    root's position among them, the distinct neighbour rows and the distinct float32 gaps, each
    against a set built here; with dedup off every root is its own row."""
    ev = random_events(n_nodes=6, n_events=120, t_max=30, seed=2)   # few nodes and times: repeats
    s = TemporalNeighbors.from_events(ev, 6)
    neg = np.random.default_rng(0).integers(0, 6, (40, 2))
    b = make_batch(ev.src[60:100], ev.dst[60:100], ev.t[60:100], np.arange(60, 100), neg, s, 3, "all")
    pairs = list(zip(b.roots.tolist(), b.root_t.tolist()))
    assert len(set(pairs)) == b.emb_rows.size < len(pairs)
    assert [pairs[i] for i in b.emb_rows[b.emb_inv]] == pairs
    valid = b.nbr_valid
    assert np.array_equal(b.nbr_nodes, np.unique(b.nbr_idx[valid]))
    assert np.array_equal(b.nodes[b.nbr_nodes[b.nbr_pos]][valid], b.nbr[valid])
    dt = (b.root_t[:, None] - b.nbr_t).astype(np.float32)
    assert np.array_equal(b.gaps[b.gap_idx][valid], dt[valid]) and np.unique(b.gaps).size == b.gaps.size
    assert set(b.gaps.tolist()) == set(dt[valid].tolist()) | ({0.0} if (~valid).any() else set())
    plain = make_batch(ev.src[60:100], ev.dst[60:100], ev.t[60:100], np.arange(60, 100), neg, s, 3, "all", dedup=False)
    assert np.array_equal(plain.emb_rows, np.arange(b.roots.size)) and np.array_equal(plain.emb_inv, plain.emb_rows)
    assert np.array_equal(plain.nbr, b.nbr) and np.array_equal(plain.nbr_eid, b.nbr_eid)


def replay(model, src, dst, t, efeat, bs, n):
    """The memory after every batch, computed event by event with the model's own cell."""
    d, de = model.memory_dim, 0 if efeat is None else efeat.shape[1]
    mem, mem_ts = torch.zeros(n, d), torch.zeros(n, dtype=torch.float64)
    mail, mail_ts, has = torch.zeros(n, 2 * d + de), torch.zeros(n, dtype=torch.float64), [False] * n
    cell, enc = model.updater.cell, model.time_enc
    for a in range(0, src.size, bs):
        batch = range(a, min(a + bs, src.size))
        touched = sorted({int(src[i]) for i in batch} | {int(dst[i]) for i in batch})
        new = {}
        for v in touched:
            if has[v]:
                x = torch.cat([mail[v], enc(time_delta(mail_ts[v], mem_ts[v]))])
                new[v] = (cell(x[None], mem[v][None])[0], mail_ts[v].item())
            else:
                new[v] = (mem[v], mem_ts[v].item())
        for i in batch:  # each event's mail to both ends, the later event overwriting
            e = [] if efeat is None else [efeat[i]]
            for me, other in ((int(src[i]), int(dst[i])), (int(dst[i]), int(src[i]))):
                mail[me] = torch.cat([new[me][0], new[other][0]] + e)
                mail_ts[me] = float(t[i])
                has[me] = True
        for v, (s, ts) in new.items():
            mem[v], mem_ts[v] = s, ts
    return mem, mem_ts, mail, mail_ts


@pytest.mark.parametrize("name", ["tgn", "jodie"])
def test_memory_after_batches_equals_event_by_event_replay(name):
    torch.manual_seed(0)
    ev = random_events(n_nodes=10, n_events=90, t_max=500, seed=4)
    efeat = torch.randn(90, 2)
    model = build_tgnn(name, 10, 2, memory_dim=6, time_dim=4, neighbors=3, dropout=0.0).eval()
    sampler = TemporalNeighbors.from_events(ev, 10)
    memory = model.new_memory()
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for a in range(0, 90, 20):
            sl = slice(a, a + 20)
            n_ev = ev.src[sl].size
            b = make_batch(ev.src[sl], ev.dst[sl], ev.t[sl], np.arange(a, a + n_ev), rng.integers(0, 10, (n_ev, 1)),
                           sampler, model.neighbors, model.sample)
            apply_writes(memory, model(b, memory.read(torch.from_numpy(b.nodes)), efeat))
        mem, mem_ts, mail, mail_ts = replay(model, ev.src, ev.dst, ev.t, efeat, 20, 10)
    assert torch.allclose(memory.memory, mem, atol=1e-5)
    assert torch.equal(memory.memory_ts, mem_ts)
    assert torch.allclose(memory.mail[:, 0], mail, atol=1e-5)
    assert torch.equal(memory.mail_ts[:, 0], mail_ts)


def test_apan_delivers_mail_to_endpoints_and_their_recent_neighbours():
    torch.manual_seed(0)
    ev = random_events(n_nodes=12, n_events=60, t_max=300, seed=5)
    model = build_tgnn("apan", 12, 0, memory_dim=4, time_dim=2, neighbors=2, dropout=0.0).eval()
    sampler = TemporalNeighbors.from_events(ev, 12)
    b = make_batch(ev.src[40:50], ev.dst[40:50], ev.t[40:50], np.arange(40, 50), np.zeros((10, 1)), sampler, 2,
                   model.sample)
    with torch.no_grad():
        out = model(b, model.new_memory().read(torch.from_numpy(b.nodes)))
    want = {}  # target -> (event, direct) of the mail it keeps: the latest event, own mail first
    for i in range(10):
        for end, row in ((b.src[i], i), (b.dst[i], 10 + i)):
            cands = [(int(end), 1)] + [(int(u), 0) for u in b.nbr[row] if u >= 0]
            for v, direct in cands:
                want[v] = max(want.get(v, (-1, -1)), (i, direct))
    assert out.mail.ids.tolist() == sorted(want)
    assert out.mail.ts.tolist() == [float(b.t[want[v][0]]) for v in sorted(want)]
