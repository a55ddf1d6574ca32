"""Historical and inductive negative edges (dynagnn.tasks.negatives) on a hand-built stream whose
history is known, and on random streams against the definitions computed with Python sets: every
negative marked of its kind is of it, the random fill never occurs in the batch's period, and the
mark says exactly how many fell back to random."""

import numpy as np
import pytest

from dynagnn.tasks.negatives import EdgeHistory
from tests.testing.stores import random_events

# (src, dst, t): 0->1 at 1 and 5, 1->2 at 2, 2->3 at 3, 3->4 at 6, 4->0 at 7, 1->3 at 8
SRC, DST, T = np.array([0, 1, 2, 0, 3, 4, 1]), np.array([1, 2, 3, 1, 4, 0, 3]), np.array([1, 2, 3, 5, 6, 7, 8.0])


def edges(neg):
    return list(zip(neg.src.tolist(), neg.dst.tolist()))


def batch(src, dst, t, start, end):
    """The positives of a batch holding every event of [start, end]."""
    inside = (t >= start) & (t <= end)
    return src[inside], dst[inside]


def test_historical_negatives_are_past_edges_absent_from_the_batch_period():
    h = EdgeHistory(SRC, DST, T, 5)
    # batch over [6, 8]: 3->4, 4->0, 1->3 occur; seen by 6 and not occurring: 0->1, 1->2, 2->3
    neg = h.sample("historical", 2, 6, 8, np.random.default_rng(0), None, *batch(SRC, DST, T, 6, 8))
    assert neg.of_kind.all() and len(set(edges(neg))) == 2 and set(edges(neg)) <= {(0, 1), (1, 2), (2, 3)}
    neg = h.sample("historical", 5, 6, 8, np.random.default_rng(0), None, *batch(SRC, DST, T, 6, 8))
    assert neg.of_kind.tolist() == [True] * 3 + [False] * 2
    assert set(edges(neg)[:3]) == {(0, 1), (1, 2), (2, 3)}
    assert not set(edges(neg)[3:]) & {(3, 4), (4, 0), (1, 3)}   # the fill avoids the period's edges
    assert all(s in SRC and d in DST for s, d in edges(neg))     # sources x destinations of the stream


def test_inductive_negatives_are_edges_first_seen_after_the_observed_period():
    h = EdgeHistory(SRC, DST, T, 5)
    # observed up to 3; batch over [7, 8]: first seen in (3, 7] are 3->4 (6) and 4->0 (7), 4->0 occurs
    neg = h.sample("inductive", 1, 7, 8, np.random.default_rng(1), 3, *batch(SRC, DST, T, 7, 8))
    assert edges(neg) == [(3, 4)] and neg.of_kind.tolist() == [True]
    # over [5, 5] no edge was first seen after 3: all fill, marked so
    neg = h.sample("inductive", 3, 5, 5, np.random.default_rng(1), 3, *batch(SRC, DST, T, 5, 5))
    assert not neg.of_kind.any() and (0, 1) not in edges(neg)
    with pytest.raises(ValueError, match="observed_end"):
        h.sample("inductive", 1, 7, 8, np.random.default_rng(1), None, *batch(SRC, DST, T, 7, 8))
    with pytest.raises(ValueError, match="historical or inductive"):
        h.sample("random", 1, 7, 8, np.random.default_rng(1), None, *batch(SRC, DST, T, 7, 8))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_candidates_equal_the_definitions_on_random_streams(seed):
    ev = random_events(n_nodes=9, n_events=200, t_max=100, seed=seed)
    h = EdgeHistory(ev.src, ev.dst, ev.t, 9)
    rng = np.random.default_rng(seed)
    observed_end = 40
    for _ in range(10):
        start = float(rng.integers(0, 100))
        end = start + float(rng.integers(0, 10))
        period = {(s, d) for s, d, t in zip(ev.src, ev.dst, ev.t) if start <= t <= end}
        seen = {(s, d) for s, d, t in zip(ev.src, ev.dst, ev.t) if t <= start}
        observed = {(s, d) for s, d, t in zip(ev.src, ev.dst, ev.t) if t <= observed_end}
        want = {"historical": seen - period, "inductive": seen - observed - period}
        for kind, pool in want.items():
            got = h.candidates(kind, start, end, observed_end)
            assert {(int(k) // 9, int(k) % 9) for k in got} == pool and np.unique(got).size == got.size
            neg = h.sample(kind, 12, start, end, np.random.default_rng(7), observed_end, *batch(ev.src, ev.dst, ev.t, start, end))
            assert int(neg.of_kind.sum()) == min(12, len(pool))
            marked = [e for e, k in zip(edges(neg), neg.of_kind) if k]
            assert set(marked) <= pool and len(set(marked)) == len(marked)
            assert not {e for e, k in zip(edges(neg), neg.of_kind) if not k} & period
            again = h.sample(kind, 12, start, end, np.random.default_rng(7), observed_end, *batch(ev.src, ev.dst, ev.t, start, end))
            assert edges(again) == edges(neg)                    # fixed by the generator's seed


@pytest.mark.parametrize("kind", ["historical", "inductive"])
def test_the_event_task_draws_fixed_negative_edges_of_its_kind(kind):
    from dynagnn.data.types import EventStream
    from dynagnn.tasks.events import EventLinkTask

    ev = random_events(n_nodes=20, n_events=600, t_max=3000, seed=4)
    task = EventLinkTask(EventStream(ev.src, ev.dst, ev.t), 20, 40, 5, seed=1, negative_kind=kind)
    h = EdgeHistory(ev.src, ev.dst, ev.t, 20)
    counted = 0
    for split in ("val", "test"):
        for unit in getattr(task.split, split):
            events = task.unit_events(unit)[1]
            neg = task.eval_negatives_of(split, events)
            assert neg.shape == (events.size, 1, 2)
            assert np.array_equal(neg, task.eval_negatives_of(split, events))      # fixed
            start, end = ev.t[events[0]], ev.t[events[-1]]
            pool = set(h.candidates(kind, start, end, task.observed_end[split]).tolist())
            keys = neg[:, 0, 0] * 20 + neg[:, 0, 1]
            assert sum(k in pool for k in keys.tolist()) >= min(events.size, len(pool))
            counted += min(events.size, len(pool))  # of the kind: as many as the pool has, up to B
            assert not set(keys.tolist()) & set((ev.src[events] * 20 + ev.dst[events]).tolist())  # no own positive
            ind = events[task.inductive[events]]
            if ind.size:  # the inductive pass draws from its own events' edges and nodes
                neg_ind = task.eval_negatives_of(split, ind, inductive=True)
                every = task._units[split][task.inductive[task._units[split]]]
                assert set(neg_ind[:, 0, 0].tolist()) <= set(ev.src[every].tolist())
                assert set(neg_ind[:, 0, 1].tolist()) <= set(ev.dst[every].tolist())
    drawn = task.negatives_drawn
    inductive = int(task.inductive[task.val_events].sum() + task.inductive[task.test_events].sum())
    assert drawn["all"] == 2 * (task.val_events.size + task.test_events.size) + inductive  # each batch twice
    assert drawn["of_kind"] >= 2 * counted and counted > 0
    with pytest.raises(Exception, match="negative kind"):
        EventLinkTask(EventStream(ev.src, ev.dst, ev.t), 20, 40, 5, negative_kind="hard")


def test_negative_edges_of_the_events_own_source_score_as_negative_destinations():
    """A batch given negative edges (source, destination) whose sources are the events' own scores
    them exactly as the same destinations given alone: the edge path against the existing one."""
    import torch

    from dynagnn.graph.sample import TemporalNeighbors
    from dynagnn.models.heads import LinkPredictor
    from dynagnn.models.tgnn import build_tgnn, make_batch

    ev = random_events(n_nodes=12, n_events=120, t_max=300, seed=6)
    torch.manual_seed(0)
    model, head = build_tgnn("tgn", 12, 0, memory_dim=6, time_dim=4, neighbors=3).eval(), LinkPredictor(6).eval()
    sampler = TemporalNeighbors.from_events(ev, 12)
    dst_neg = np.random.default_rng(0).integers(0, 12, (20, 2))
    edge_neg = np.stack([np.repeat(ev.src[60:80, None], 2, 1), dst_neg], axis=2)     # [B, K, 2]
    scores = []
    memory = model.new_memory()
    for neg in (dst_neg, edge_neg):
        b = make_batch(ev.src[60:80], ev.dst[60:80], ev.t[60:80], np.arange(60, 80), neg, sampler, 3)
        src_rows, dst_rows = b.negative_pairs()
        assert np.array_equal(b.roots[src_rows], np.repeat(ev.src[60:80], 2))
        assert np.array_equal(b.roots[dst_rows], dst_neg.ravel())
        with torch.no_grad():
            z = model(b, memory.read(torch.from_numpy(b.nodes))).z
            scores.append(head(z, torch.from_numpy(np.stack([src_rows, dst_rows]))))
    torch.testing.assert_close(scores[1], scores[0], rtol=1e-6, atol=1e-6)
