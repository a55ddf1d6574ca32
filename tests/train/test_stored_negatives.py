"""TGB's protocol (issue 28): a store that carries pre-generated evaluation negatives
(``events/negatives``) is scored on them, every listed event against its K stored destinations, and
the metrics say so; MRR with ties against a brute-force rank."""

import numpy as np
import pytest

from dynagnn.data import discretize as D
from dynagnn.data.store import open_store, write_store
from dynagnn.data.types import EventStream, RawGraph
from dynagnn.errors import StoreError
from dynagnn.tasks.edgebank import edgebank_events
from dynagnn.tasks.events import EventLinkTask
from dynagnn.train.engine import TrainConfig, Trainer

from tests.conftest import random_events

N, K = 20, 4


def stored_store(path, cover=True):
    ev = random_events(n_nodes=N, n_events=800, t_max=4000, seed=3)
    probe = EventLinkTask(EventStream(ev.src, ev.dst, ev.t), N, 40, 5)
    listed = np.sort(np.concatenate([probe.val_events, probe.test_events]))
    if not cover:
        listed = listed[1:]
    neg = np.random.default_rng(9).integers(0, N, size=(listed.size, K))
    stream = EventStream(ev.src, ev.dst, ev.t, negatives=(listed, neg))
    raw = RawGraph(num_nodes=N, node_ids=np.arange(N), events=stream, directed=True, name="tgb-like")
    snaps = D.build_snapshots(raw, by="time", width=1000, directed=True)
    write_store(path, raw, snaps, D.make_features("degree", raw, snaps, dim=4), spec={"seed": 3})
    return path, listed, neg


def test_the_store_keeps_the_negatives_and_the_task_scores_on_them(tmp_path):
    path, listed, neg = stored_store(tmp_path / "s.zarr")
    events = open_store(path).events()
    np.testing.assert_array_equal(events.negatives[0], listed)
    np.testing.assert_array_equal(events.negatives[1], neg)
    task = EventLinkTask(events, N, 40, 5)
    assert task.negative_kind == "stored" and task.eval_negatives == K
    for split, ev in (("val", task.val_events), ("test", task.test_events)):
        for inductive in (False, True):
            batch = ev[task.inductive[ev]][:40] if inductive else ev[:40]
            got = task.eval_negatives_of(split, batch, inductive)
            np.testing.assert_array_equal(got, neg[np.searchsorted(listed, batch)])


def test_edgebank_mrr_on_stored_negatives_is_a_brute_force_rank_with_ties(tmp_path):
    """EdgeBank's scores are 0 or 1, so every rank has ties: the rank is 1 + the negatives above + half
    those tied (TGB's rule), counted here one by one."""
    path, listed, neg = stored_store(tmp_path / "s.zarr")
    task = EventLinkTask(open_store(path).events(), N, 40, 5)
    got = edgebank_events(task, "test", "unlimited")
    seen = {(int(task.src[e]), int(task.dst[e])) for e in np.concatenate([task.train_events, task.val_events])}
    recip = []
    test = task.test_events
    for i in range(0, test.size, 40):
        batch = test[i:i + 40]
        for e in batch:
            pos = float((int(task.src[e]), int(task.dst[e])) in seen)
            negs = [float((int(task.src[e]), int(v)) in seen) for v in neg[np.searchsorted(listed, e)]]
            rank = 1 + sum(v > pos for v in negs) + 0.5 * sum(v == pos for v in negs)
            recip.append(1 / rank)
        seen |= {(int(task.src[e]), int(task.dst[e])) for e in batch}
    assert got["mrr"] == pytest.approx(np.mean(recip))
    assert 0.3 < got["mrr"] < 1   # ties happen: neither every rank 1 nor a constant


def test_a_run_on_stored_negatives_says_so(tmp_path):
    path, _, _ = stored_store(tmp_path / "s.zarr")
    cfg = TrainConfig.of(model="jodie", strategy="events", event_batch=40, memory_dim=8, time_dim=4, neighbors=3,
                         epochs=1, threads=1)
    metrics, _ = Trainer(path, cfg, progress=False).fit()
    assert (metrics["eval_negative_kind"] == "stored").all()
    assert np.isfinite(metrics["test_mrr"]).all() and np.isfinite(metrics["val_ind_mrr"]).all()


def test_an_evaluation_event_without_stored_negatives_is_refused(tmp_path):
    path, listed, _ = stored_store(tmp_path / "s.zarr", cover=False)
    task = EventLinkTask(open_store(path).events(), N, 40, 5)
    first = np.sort(np.concatenate([task.val_events, task.test_events]))[0]
    with pytest.raises(StoreError, match=f"event {first} has no stored evaluation negatives") as err:
        edgebank_events(task, "val")
    assert "\n" not in str(err.value)
