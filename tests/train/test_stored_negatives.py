"""TGB's protocol (issue 28): a store that carries pre-generated evaluation negatives
(``negatives/event``, ``negatives/dst``) is scored on them, every listed event against its K stored destinations, and
the metrics say so; MRR with ties against a brute-force rank."""

import numpy as np
import pytest

from dynagnn.data import discretize as D
from dynagnn.data.store import open_store, write_store
from dynagnn.data.types import EventStream, RawGraph
from dynagnn.errors import InputError, StoreError
from dynagnn.tasks.edgebank import edgebank_events
from dynagnn.tasks.events import EventLinkTask
from dynagnn.train.engine import TrainConfig, Trainer

from tests.testing.stores import random_events

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


@pytest.mark.parametrize("listing", ["one short", "none"])
def test_evaluation_events_without_stored_negatives_are_refused_before_training(tmp_path, listing):
    path, listed, neg = stored_store(tmp_path / "s.zarr", cover=False)
    events = open_store(path).events()
    if listing == "none":
        events.negatives = (listed[:0], neg[:0])
    missing = 1 if listing == "one short" else listed.size + 1
    with pytest.raises(StoreError, match=rf"{missing} of the {listed.size + 1} validation and test events have no "
                                         "stored evaluation negatives") as err:
        EventLinkTask(events, N, 40, 5)
    assert "\n" not in str(err.value)


def test_a_reported_random_kind_is_the_stored_negatives_too(tmp_path):
    """On a store with TGB's negatives "random" means them wherever it is asked: as the run's kind or
    reported beside historical negatives (``stored_`` columns, the same numbers)."""
    path, listed, neg = stored_store(tmp_path / "s.zarr")
    events = open_store(path).events()
    own = EventLinkTask(events, N, 40, 5)
    beside = EventLinkTask(events, N, 40, 5, negative_kind="historical", report_kinds=["random"])
    assert beside.report_kinds == ("stored",)
    with beside.kind("random"):
        np.testing.assert_array_equal(beside.eval_negatives_of("test", beside.test_events[:40]),
                                      neg[np.searchsorted(listed, beside.test_events[:40])])
    got = edgebank_events(beside, "test")
    ref = edgebank_events(own, "test")
    assert all(got[f"stored_{k}"] == pytest.approx(v, nan_ok=True) for k, v in ref.items())
    assert got["ap"] != pytest.approx(ref["ap"])     # the run's own kind: historical


def test_dropped_events_take_their_stored_negatives_with_them():
    from dynagnn.data.discretize import _take_events

    ev = EventStream(np.arange(6), np.arange(6) + 1, np.arange(6.0),
                     negatives=(np.array([1, 3, 4]), np.array([[7, 8], [9, 10], [11, 12]])))
    kept = _take_events(ev, np.array([True, True, False, True, False, True]))
    np.testing.assert_array_equal(kept.negatives[0], [1, 2])             # events 1 and 3, renumbered
    np.testing.assert_array_equal(kept.negatives[1], [[7, 8], [9, 10]])


def test_bad_negatives_from_a_reader_write_no_store(tmp_path):
    ev = random_events(n_nodes=N, n_events=50, t_max=400, seed=1)
    stream = EventStream(ev.src, ev.dst, ev.t, negatives=(np.array([3, 2]), np.zeros((2, K), dtype=np.int64)))
    raw = RawGraph(num_nodes=N, node_ids=np.arange(N), events=stream, directed=True, name="bad")
    snaps = D.build_snapshots(raw, by="time", width=100, directed=True)
    with pytest.raises(InputError, match="evaluation negatives: event indices must increase strictly") as err:
        write_store(tmp_path / "s.zarr", raw, snaps, None, spec={})
    assert "\n" not in str(err.value) and not (tmp_path / "s.zarr").exists()
