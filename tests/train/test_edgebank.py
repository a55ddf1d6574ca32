"""EdgeBank against a direct computation: a Python set of the edges seen, grown batch by batch (events)
or snapshot by snapshot, scored on the task's own fixed negatives, the metrics taken by the plain
metric functions."""

import numpy as np
import pytest

from dynagnn.data.store import open_store
from dynagnn.data.types import EventStream
from dynagnn.errors import ConfigError
from dynagnn.tasks import metrics as M
from dynagnn.tasks.edgebank import edgebank_events, edgebank_snapshots
from dynagnn.tasks.events import EventLinkTask, link_metrics
from dynagnn.tasks.snapshot import LinkPrediction, chronological_split

from tests.testing.stores import random_events


def direct_event_scores(task, split, events, inductive, window, split_events):
    """Each batch of ``events``' positive and negative scores from a set of the (src, dst) pairs of every
    event before it: training, validation (for test) and the split's events (``split_events``) before it."""
    before = list(task.train_events) + (list(task.val_events) if split == "test" else [])
    order = list(split_events)
    span = task.t[task.test_events].max() - task.t[task.test_events].min()
    pos, neg = [], []
    for i in range(0, len(events), task.batch_size):
        batch = events[i:i + task.batch_size]
        seen_ids = before + order[:order.index(batch[0])]
        if window:
            seen_ids = [e for e in seen_ids if task.t[e] >= task.t[batch[0]] - span]
        seen = {(int(task.src[e]), int(task.dst[e])) for e in seen_ids}
        negs = task.eval_negatives_of(split, batch, inductive)
        for j, e in enumerate(batch):
            pos.append(float((int(task.src[e]), int(task.dst[e])) in seen))
            if negs.ndim == 3:
                neg.append([float((int(negs[j, 0, 0]), int(negs[j, 0, 1])) in seen)])
            else:
                neg.append([float((int(task.src[e]), int(v)) in seen) for v in negs[j]])
    return np.array(pos), np.array(neg).reshape(len(pos), -1)


@pytest.mark.parametrize("kind", ["random", "historical", "inductive"])
@pytest.mark.parametrize("memory", ["unlimited", "window"])
@pytest.mark.parametrize("split", ["val", "test"])
def test_edgebank_on_events_equals_a_direct_computation(kind, memory, split):
    ev = random_events(n_nodes=15, n_events=700, t_max=3000, seed=5)
    task = EventLinkTask(EventStream(ev.src, ev.dst, ev.t), 15, 40, 5, seed=2, negative_kind=kind)
    got = edgebank_events(task, split, memory)
    units = getattr(task.split, split)
    events = np.concatenate([task.unit_events(u)[1] for u in units])
    pos, neg = direct_event_scores(task, split, events, False, memory == "window", events)
    assert 0 < np.r_[pos, neg.ravel()].mean() < 1    # some edges in the bank, some not: the metrics tell
    ref = link_metrics(pos, neg, task.batch_size)
    ind = events[task.inductive[events]]
    iref = link_metrics(*direct_event_scores(task, split, ind, True, memory == "window", events), task.batch_size)
    for k in ("ap", "auc", "ap_batch", "auc_batch"):
        assert got[k] == pytest.approx(ref[k], nan_ok=True), k
        assert got[f"ind_{k}"] == pytest.approx(iref[k], nan_ok=True), k
    if kind == "random":
        assert got["mrr"] == pytest.approx(ref["mrr"])
    else:
        assert np.isnan(got["mrr"]) and 0 < got["negatives_of_kind"] <= 1


@pytest.mark.parametrize("kind", ["random", "historical", "inductive"])
def test_edgebank_on_snapshots_equals_a_direct_computation(link_store, kind):
    store = open_store(link_store)
    task = LinkPrediction(store, seed=4, eval_negatives=6, negative_kind=kind)
    split = chronological_split(task.steps(1))
    task.observe_split(split)
    n = store.num_nodes
    keys = [{(min(a, b), max(a, b)) for a, b in zip(*(x.tolist() for x in store.edges(s)[:2]))}
            for s in range(store.num_snapshots)]
    for memory, window in (("unlimited", None), ("window", 3)):
        got = edgebank_snapshots(task, split.test, memory, window)
        sp, sn, of_kind = [], [], []
        for t in split.test:
            first = 0 if window is None else max(0, t + 1 - window)
            bank = set().union(*keys[first:t + 1])
            pos, src, dst, kinds = task.eval_pairs(t)
            of_kind += kinds.ravel().tolist()
            sp += [float((int(k // n), int(k % n)) in bank) for k in pos]
            sn += [[float((min(u, v), max(u, v)) in bank) for u, v in zip(r, c)] for r, c in zip(src.tolist(), dst.tolist())]
        sp, sn = np.array(sp), np.array(sn)
        labels = np.r_[np.ones(sp.size), np.zeros(sp.size)]
        assert got["auc"] == pytest.approx(M.auc(np.r_[sp, sn[:, 0]], labels))
        assert got["ap"] == pytest.approx(M.average_precision(np.r_[sp, sn[:, 0]], labels))
        if kind == "random":
            assert got["mrr"] == pytest.approx(M.mrr(sp, sn))
        else:   # one negative edge per positive; those of the historical kind all in the unlimited bank
            assert np.isnan(got["mrr"]) and (kind == "inductive" or any(of_kind))   # (the test weeks hold no inductive one)
            assert kind == "inductive" or window or sn.ravel()[np.array(of_kind)].all()
        assert sp.any()   # the store's edges recur: some positives are in the bank


def test_edgebank_refuses_what_it_cannot_be(link_store):
    task = LinkPrediction(open_store(link_store))
    for args, msg in [(("lru",), "EdgeBank memory 'lru'"), (("window",), "window memory needs window")]:
        with pytest.raises(ConfigError, match=msg):
            edgebank_snapshots(task, [3], *args)


def _event_store(path):
    from dynagnn.data import discretize as D
    from dynagnn.data.store import write_store
    from dynagnn.data.types import RawGraph

    ev = random_events(n_nodes=15, n_events=700, t_max=3000, seed=5)
    raw = RawGraph(num_nodes=15, node_ids=np.arange(15), events=ev, directed=True, name="eb")
    snaps = D.build_snapshots(raw, by="time", width=500, directed=True)
    return write_store(path, raw, snaps, D.make_features("degree", raw, snaps, dim=4), spec={"seed": 5})


@pytest.mark.parametrize("model,memory", [("edgebank", "unlimited"), ("edgebank_window", "window")])
def test_a_run_of_edgebank_on_events_writes_its_metrics(tmp_path, model, memory):
    """--model edgebank with the events strategy: one kept epoch whose metrics are EdgeBank's on the
    task the strategy builds (its seed, batches and negatives), each reported kind's those of a task
    of that kind; a checkpoint without weights; nothing trained (loss NaN)."""
    from dynagnn.train.engine import TrainConfig, load_checkpoint_file, train

    path = _event_store(tmp_path / "s.zarr")
    cfg = TrainConfig.of(model=model, strategy="events", seed=2, event_batch=40, event_negatives=5,
                         report_negative_kinds=["historical", "inductive"])
    metrics, timings = train(path, tmp_path / "run", cfg, progress=False)
    assert len(metrics) == 1 and bool(metrics["best"].iloc[0]) and np.isnan(metrics["loss"].iloc[0])
    assert (metrics["eval_negative_kind"] == "random").all()
    ev = open_store(path).events()
    for kind in ("random", "historical", "inductive"):
        task = EventLinkTask(ev, 15, 40, 5, seed=2, negative_kind=kind)
        for split in ("val", "test"):
            ref = edgebank_events(task, split, memory)
            pre = f"{split}_" if kind == "random" else f"{split}_{kind}_"
            for k, v in ref.items():
                assert metrics[pre + k].iloc[0] == pytest.approx(v, nan_ok=True), (kind, split, k)
    ck = load_checkpoint_file(tmp_path / "run" / "model.pt")
    assert ck["model"] == model and ck["memory"] == memory and ck["state_dict"] == {}
    assert set(timings["phase"]) == {"load", "evaluate"}


def test_a_run_of_edgebank_on_snapshots_writes_its_metrics(link_store, tmp_path):
    """--model edgebank_window with the sequential strategy: EdgeBank's metrics on the snapshot link task
    of the run's window split, its window the test targets' count."""
    from dynagnn.train.engine import TrainConfig, train

    cfg = TrainConfig.of(model="edgebank_window", strategy="sequential", window=2, seed=1,
                         report_negative_kinds=["historical"])
    metrics, _ = train(link_store, tmp_path / "run", cfg, progress=False)
    store = open_store(link_store)
    for kind in ("random", "historical"):
        task = LinkPrediction(store, seed=1, negative_kind=kind)
        split = chronological_split(task.steps(2))
        task.observe_split(split)
        ref = edgebank_snapshots(task, split.test, "window", len(split.test))
        pre = "test_" if kind == "random" else f"test_{kind}_"
        for k, v in ref.items():
            assert metrics[pre + k].iloc[0] == pytest.approx(v, nan_ok=True), (kind, k)


@pytest.mark.parametrize("change,msg", [({"strategy": "frames"}, "not by the frames strategy"),
                                        ({"workers": 2}, "on one process"),
                                        ({"task": "regress"}, "predicts links")])
def test_a_run_of_edgebank_refuses_what_it_cannot_be(link_store, tmp_path, change, msg):
    from dynagnn.train.engine import TrainConfig, train

    with pytest.raises(ConfigError, match=msg) as err:
        train(link_store, tmp_path / "run", TrainConfig.of(**{"model": "edgebank", "strategy": "sequential", **change}),
              progress=False)
    assert "\n" not in str(err.value) and not (tmp_path / "run").exists()


def test_a_run_of_edgebank_refuses_resume(link_store, tmp_path):
    from dynagnn.train.engine import TrainConfig, train

    with pytest.raises(ConfigError, match="--resume with model edgebank: EdgeBank trains nothing") as err:
        train(link_store, tmp_path / "run", TrainConfig.of(model="edgebank", strategy="sequential"),
              resume=tmp_path / "model.pt", progress=False)
    assert "\n" not in str(err.value) and not (tmp_path / "run").exists()
