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
    keys, neg = task.eval_pairs(3)
    edges = set(zip(row.tolist(), col.tolist()))
    src = (keys // n)[:, None].repeat(4, 1)
    assert all((int(u), int(v)) not in edges and u != v for u, v in zip(src.ravel(), neg.ravel()))
    assert task.eval_pairs(3)[1] is neg  # fixed for the run
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
    pos, neg = task.eval_pairs(2)
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
    from tests.train.conftest import small_store

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
