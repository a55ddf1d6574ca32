"""Tasks: targets, negatives, losses and evaluation against plain computations."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dynagnn.data.store import open_store
from dynagnn.errors import ConfigError
from dynagnn.models.heads import LinkPredictor, NodeClassifier
from dynagnn.tasks import metrics as M
from dynagnn.tasks.snapshot import (LinkPrediction, NodeClassification, NodeRegression, chronological_split,
                                 infer_task, make_task)


def test_split_is_chronological_and_complete():
    s = chronological_split(list(range(3, 23)))
    assert s.train + s.val + s.test == list(range(3, 23))
    assert (len(s.train), len(s.val), len(s.test)) == (14, 3, 3)
    assert chronological_split([5, 6, 7]) .train == [5]
    with pytest.raises(ConfigError, match="at least 3"):
        chronological_split([1, 2])


def test_infer_task(link_store, class_store, regress_store):
    assert [infer_task(open_store(p)) for p in (link_store, class_store, regress_store)] == ["link", "classify", "regress"]


class _LabelledStore:
    """The little of a store that the task choice and the label check read: labels of one dtype."""

    def __init__(self, labels):
        self.path, self.labels_y = "fake.zarr", np.asarray(labels)
        self.num_snapshots, self.num_nodes = 1, self.labels_y.shape[-1]
        self.root = {"labels/y": self.labels_y}

    def has(self, name):
        return name == "labels/y"

    def labels(self, t=None):
        return self.labels_y


@pytest.mark.parametrize("labels, task", [
    (np.array([0, 2, 1], dtype=np.int64), "classify"),
    (np.array([0, 2, 1], dtype=np.int32), "classify"),
    (np.array([True, False, True]), "classify"),
    (np.array([0.25, 1.5, 3.0], dtype=np.float32), "regress"),
    (np.array([0.0, 2.0, 1.0], dtype=np.float64), "regress"),  # whole-valued floats are targets, not classes
])
def test_auto_classifies_integer_labels_only(labels, task):
    assert infer_task(_LabelledStore(labels)) == task


@pytest.mark.parametrize("labels", [np.array([0.25, 1.9, 3.0], dtype=np.float32),
                                    np.array([0.0, 2.0, 1.0], dtype=np.float64)])
def test_classify_refuses_real_valued_labels(labels):
    """Truncating 1.9 to class 1 would report an accuracy of a task nobody asked for."""
    with pytest.raises(ConfigError, match=rf"needs integer class labels, labels/y holds {labels.dtype} values; "
                                          r"for real-valued targets use task regress"):
        NodeClassification(_LabelledStore(labels))


def test_classify_refuses_a_regression_store(regress_store):
    with pytest.raises(ConfigError, match="needs integer class labels.*task regress"):
        make_task("classify", open_store(regress_store))


def test_window_longer_than_dataset(link_store):
    task = make_task("link", open_store(link_store))
    assert task.steps(3) == list(range(2, 7))  # t+1 must exist
    with pytest.raises(ConfigError, match="longer than"):
        task.steps(9)


def test_classification_needs_labels(link_store):
    with pytest.raises(ConfigError, match="needs labels"):
        make_task("classify", open_store(link_store))


def test_link_positives_and_negatives(link_store):
    store = open_store(link_store)
    task = LinkPrediction(store, seed=3, eval_negatives=4)
    n = store.num_nodes
    row, col, _ = store.edges(4)
    expected = sorted({(int(r), int(c)) for r, c in zip(row, col) if r < c})
    pos = task.positives(3)
    assert [(int(k // n), int(k % n)) for k in pos] == expected
    keys, src, neg, kind = task.eval_pairs(3)
    edges = set(zip(row.tolist(), col.tolist()))
    np.testing.assert_array_equal(src, (keys // n)[:, None].repeat(4, 1))
    assert all((int(u), int(v)) not in edges and u != v for u, v in zip(src.ravel(), neg.ravel()))
    assert kind.all() and task.eval_pairs(3)[2] is neg  # fixed for the run
    # what the group strategy sizes its hand-over ring by, without sampling: the prepared inputs' size
    for ratio in (1, 3):
        t_ = LinkPrediction(store, seed=3, neg_ratio=ratio)
        for t in (1, 3):
            assert t_.loss_inputs_numel(t) == t_.loss_inputs(t, 5).numel() == 3 * len(t_.positives(t)) * (1 + ratio)


def test_link_loss_and_metrics_match_plain(link_store):
    store = open_store(link_store)
    task = LinkPrediction(store, seed=0, eval_negatives=3)
    torch.manual_seed(0)
    h = torch.randn(store.num_nodes, 5)
    head = LinkPredictor(5)
    n = store.num_nodes
    pos, _, neg, _ = task.eval_pairs(2)
    u = torch.from_numpy(pos // n)
    sp = head(h, torch.stack([u, torch.from_numpy(pos % n)])).detach().numpy()
    sn = head(h, torch.stack([u.repeat_interleave(3), torch.from_numpy(neg.ravel())])).detach().numpy().reshape(-1, 3)
    got = task.evaluate(head, {2: h})
    labels = np.r_[np.ones(len(sp)), np.zeros(len(sp))]
    assert got["auc"] == pytest.approx(M.auc(np.r_[sp, sn[:, 0]], labels))
    assert got["mrr"] == pytest.approx(M.mrr(sp, sn))
    loss = task.loss(head, h, 2, epoch=0)
    assert 0 < loss.item() < 5


def test_classification_targets_are_active_labelled(class_store):
    store = open_store(class_store)
    task = NodeClassification(store)
    idx, y = task.targets(2)
    row, _, _ = store.edges(2)
    assert idx.tolist() == sorted(set(row.tolist()))
    assert torch.equal(y, torch.from_numpy(store.labels()[idx.numpy()]))
    head = NodeClassifier(4, task.num_classes)
    h = torch.randn(store.num_nodes, 4)
    assert task.loss(head, h, 2, 0).item() == pytest.approx(F.cross_entropy(head(h)[idx], y).item(), rel=1e-6)


def test_classification_counts_vertices_with_only_incoming_edges_in_directed_stores(tmp_path):
    from tests.testing.stores import small_store

    store = open_store(small_store(tmp_path / "directed.zarr", labels="class", directed=True))
    assert store.directed
    idx, _ = NodeClassification(store).targets(2)
    row, col, _ = store.edges(2)
    assert idx.tolist() == sorted(set(row.tolist()) | set(col.tolist()))
    assert set(col.tolist()) - set(row.tolist())  # the case exists in this graph


def test_regression(regress_store):
    store = open_store(regress_store)
    task = NodeRegression(store)
    from dynagnn.models.heads import NodeRegressor
    head = NodeRegressor(3)
    h = torch.randn(store.num_nodes, 3)
    pred = head(h).detach()
    got = task.evaluate(head, {1: h})
    y = torch.from_numpy(store.labels()[1])
    assert got["mse"] == pytest.approx(float(((pred - y) ** 2).mean()), rel=1e-5)
    assert got["mae"] == pytest.approx(float((pred - y).abs().mean()), rel=1e-5)


@pytest.mark.parametrize("kind", ["historical", "inductive"])
def test_snapshot_link_negatives_are_of_their_kind(tmp_path, kind):
    """The snapshot link task's historical and inductive negatives on a hand-built directed store:
    historical ones are edges of an earlier snapshot absent from the target snapshot; inductive ones
    are also first seen after the unit's observed period (training for validation, validation for
    test). Every negative is of its kind where the pool is large enough, which the metrics report as
    ``negatives_of_kind``; AP and AUC are taken on one negative per positive, and MRR is not (NaN)."""
    from dynagnn.data.store import write_store
    from dynagnn.data import discretize as D
    from dynagnn.data.types import RawGraph, SnapshotList
    from dynagnn.tasks.snapshot import Split

    N, T = 12, 8
    rng = np.random.default_rng(0)
    rows, cols = [], []
    for s in range(T):   # 12 random edges per snapshot over 12 vertices: many recur, many are new
        r, c = rng.integers(0, N, 12), rng.integers(0, N, 12)
        keep = r != c
        rows.append(r[keep])
        cols.append(c[keep])
    raw = RawGraph(num_nodes=N, node_ids=np.arange(N), snapshots=SnapshotList(rows, cols, None, np.arange(T)),
                   directed=True, name="hand")
    store = open_store(write_store(tmp_path / "hand.zarr", raw, D.build_snapshots(raw, by="source", directed=True),
                                   np.eye(N, dtype=np.float32), spec={"test": "hand"}))
    task = LinkPrediction(store, seed=1, negative_kind=kind)
    split = Split([0, 1, 2, 3], [4, 5], [6])
    task.observe_split(split)
    keys = [{(int(a), int(b)) for a, b in zip(*store.edges(s)[:2])} for s in range(T)]
    for t in split.val + split.test:
        pos, src, dst, of_kind = task.eval_pairs(t)
        assert src.shape == dst.shape == (pos.shape[0], 1)
        target = keys[t + 1]
        earlier = set().union(*keys[:t + 1])
        if kind == "inductive":
            observed = max(split.train) + 1 if t in split.val else max(split.val) + 1
            earlier -= set().union(*keys[:observed + 1])
        pool = earlier - target
        for (u, v), ok in zip(zip(src.ravel().tolist(), dst.ravel().tolist()), of_kind.ravel()):
            assert ((u, v) in pool) == bool(ok)
            assert ok or ((u, v) not in target and u != v)       # a fill is no edge of t+1, no loop
        assert of_kind.sum() == min(len(pool), pos.shape[0])    # never random while the pool lasts
    h = torch.randn(N, 4)
    got = task.evaluate(LinkPredictor(4), {t: h for t in split.val})
    drawn = [task.eval_pairs(t)[3] for t in split.val]
    assert got["negatives_of_kind"] == pytest.approx(np.concatenate(drawn).mean())
    assert np.isnan(got["mrr"]) and 0 <= got["ap"] <= 1


@pytest.mark.parametrize("strategy,model", [("frames", "tgcn"), ("snapshot", "wdgcn")])
def test_a_run_evaluates_on_historical_negatives(link_store, strategy, model):
    """eval_negative_kind reaches the snapshot link task through other snapshot strategies: the metrics
    carry negatives_of_kind and no MRR, and the validation AUC is sequential's on the same negatives."""
    from dynagnn.train.engine import TrainConfig, Trainer

    cfg = TrainConfig.of(model=model, strategy=strategy, hidden=4, window=2, epochs=1, eval_negative_kind="historical")
    tr = Trainer(link_store, cfg, progress=False)
    assert tr.run.task.negative_kind == "historical"
    tr.train_epoch(0)
    val = tr.evaluate(tr.split.val)
    assert np.isnan(val["mrr"]) and 0 < val["negatives_of_kind"] <= 1
    ref = Trainer(link_store, TrainConfig.of(model=model, hidden=4, window=2, epochs=1,
                                             eval_negative_kind="historical"), progress=False)
    ref.train_epoch(0)
    assert ref.evaluate(ref.split.val)["auc"] == pytest.approx(val["auc"], rel=1e-5)
    metrics, _ = tr.fit()
    assert (metrics["eval_negative_kind"] == "historical").all() and metrics["val_negatives_of_kind"].notna().all()


def test_historical_negatives_refused_for_another_task(regress_store):
    from dynagnn.train.engine import TrainConfig, Trainer

    with pytest.raises(ConfigError, match="eval_negative_kind historical: the link task's evaluation negatives; "
                                          "this run's task is regress") as err:
        Trainer(regress_store, TrainConfig.of(model="tgcn", hidden=4, eval_negative_kind="historical"), progress=False)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("strategy", ["sequential", "frames"])
def test_reported_negative_kinds_equal_runs_of_those_kinds(link_store, strategy):
    """report_negative_kinds on the snapshot link task: each reported kind's prefixed metrics equal a
    run whose own kind it is, and the run's own metrics are a single-kind run's, exactly."""
    from dynagnn.train.engine import TrainConfig, Trainer

    def fit(**kw):
        cfg = TrainConfig.of(model="tgcn", strategy=strategy, hidden=4, window=2, epochs=2, **kw)
        return Trainer(link_store, cfg, progress=False).fit()[0]

    both = fit(report_negative_kinds=["historical", "inductive"])
    for kind in ("random", "historical", "inductive"):
        alone = fit(eval_negative_kind=kind)
        for col in (c for c in alone.columns if c.startswith(("val_", "test_"))):
            split, metric = col.split("_", 1)
            ours = both[col if kind == "random" else f"{split}_{kind}_{metric}"].to_numpy()
            assert np.array_equal(ours, alone[col].to_numpy(), equal_nan=True), (kind, col)
    assert not np.array_equal(both["val_historical_auc"].to_numpy(), both["val_auc"].to_numpy())


def test_reported_negative_kinds_refused_for_another_task(regress_store):
    from dynagnn.train.engine import TrainConfig, Trainer

    with pytest.raises(ConfigError, match=r"report_negative_kinds \['historical'\]: the link task's evaluation "
                                          "negatives; this run's task is regress"):
        Trainer(regress_store, TrainConfig.of(model="tgcn", hidden=4, report_negative_kinds=["historical"]),
                progress=False)


def test_the_link_task_reads_its_targets_in_one_slice_as_one_by_one(tmp_path):
    """edge_keys(t) are snapshot t+1's edges, whether read alone, in a slice of scattered ends, or
    partly cached first."""
    from tests.testing.stores import small_store

    store = open_store(small_store(tmp_path / "s.zarr", num_snapshots=10))
    task = LinkPrediction(store)
    first = task.edge_keys(3)
    task.read_targets([7, 1, 3, 5])
    for t in (1, 3, 5, 7):
        row, col, _ = store.edges(t + 1)
        assert np.array_equal(task.edge_keys(t), row * store.num_nodes + col)
    assert task.edge_keys(3) is first   # a target read before is not read again
    assert not np.array_equal(task.edge_keys(1), task.edge_keys(3))
