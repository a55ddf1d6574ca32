"""Metrics against brute-force definitions, ties included."""

import itertools

import numpy as np
import pytest
import torch

from dynagnn.tasks import metrics as M


def brute_auc(s, y):
    pos, neg = s[y == 1], s[y == 0]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


def brute_ap(s, y):
    """Σ (R_k − R_{k−1}) P_k over distinct thresholds, each computed from scratch."""
    ap, prev_recall = 0.0, 0.0
    for thr in sorted(set(s.tolist()), reverse=True):
        pred = s >= thr
        tp = np.sum(pred & (y == 1))
        precision, recall = tp / pred.sum(), tp / np.sum(y == 1)
        ap += (recall - prev_recall) * precision
        prev_recall = recall
    return ap


def cases():
    rng = np.random.default_rng(0)
    out = []
    for i in range(6):
        n = 40
        s = rng.integers(0, 6, n).astype(float) if i % 2 else rng.random(n)  # odd: heavy ties
        y = (rng.random(n) < 0.4).astype(int)
        out.append((s, y))
    return out


@pytest.mark.parametrize("s,y", cases())
def test_auc_and_ap_brute_force(s, y):
    assert M.auc(s, y) == pytest.approx(brute_auc(s, y), abs=1e-12)
    assert M.average_precision(s, y) == pytest.approx(brute_ap(s, y), abs=1e-12)
    # torch in, same answer; order of tied items irrelevant
    perm = np.random.default_rng(1).permutation(len(s))
    assert M.auc(torch.tensor(s[perm]), torch.tensor(y[perm])) == pytest.approx(M.auc(s, y), abs=1e-12)
    assert M.average_precision(s[perm], y[perm]) == pytest.approx(M.average_precision(s, y), abs=1e-12)


def test_known_values():
    y, s = np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8])  # scikit-learn's doc example
    assert M.auc(s, y) == pytest.approx(0.75)
    assert M.average_precision(s, y) == pytest.approx(0.8333333333)
    assert M.auc([1, 1, 1], [0, 1, 0]) == 0.5  # all tied
    assert M.average_precision([1, 1, 1, 1], [0, 1, 0, 0]) == pytest.approx(0.25)
    assert np.isnan(M.auc([0.1, 0.2], [1, 1])) and np.isnan(M.average_precision([0.1], [0]))


def test_mrr():
    rng = np.random.default_rng(2)
    pos = rng.integers(0, 5, 20).astype(float)
    neg = rng.integers(0, 5, (20, 7)).astype(float)
    expect = np.mean([1.0 / (1 + sum(n > p for n in row) + 0.5 * sum(n == p for n in row))
                      for p, row in zip(pos, neg)])
    assert M.mrr(pos, neg) == pytest.approx(expect)
    assert M.mrr(torch.tensor([3.0, 1.0]), torch.tensor([2.0, 0.0])) == pytest.approx((1 + 0.5) / 2)
    with pytest.raises(ValueError):
        M.mrr(pos, neg[:5])


def test_mrr_by_source():
    # source 0: candidates scored 0.9 (true), 0.8, 0.7 (true) -> ranks 1, 3 -> (1 + 1/3)/2
    # source 1: 0.2, 0.5 (true) -> rank 1; source 2 has no true edge and is skipped
    src = [0, 0, 0, 1, 1, 2]
    s = [0.9, 0.8, 0.7, 0.2, 0.5, 0.4]
    y = [1, 0, 1, 0, 1, 0]
    assert M.mrr_by_source(s, y, src) == pytest.approx(((1 + 1 / 3) / 2 + 1) / 2)


def test_classification():
    logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 3.0, 0.0], [0.0, 3.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    y = torch.tensor([0, 1, 2, 2, 1])
    pred = logits.argmax(1).numpy()
    assert M.accuracy(logits, y) == pytest.approx(3 / 5)
    f1 = []
    for c in range(3):
        tp = np.sum((pred == c) & (y.numpy() == c))
        prec = tp / max(np.sum(pred == c), 1)
        rec = tp / max(np.sum(y.numpy() == c), 1)
        f1.append(0 if tp == 0 else 2 * prec * rec / (prec + rec))
    assert M.macro_f1(logits, y) == pytest.approx(np.mean(f1))
    assert M.accuracy(np.array([-1.0, 2.0, 0.5]), [0, 1, 0]) == pytest.approx(2 / 3)  # binary logits


def test_regression():
    p, t = np.array([1.0, 2.0, 4.0]), torch.tensor([1.0, 3.0, 2.0])
    assert M.mse(p, t) == pytest.approx(5 / 3)
    assert M.mae(p, t) == pytest.approx(1.0)


def test_mrr_by_source_brute_force():
    rng = np.random.default_rng(3)
    src = rng.integers(0, 8, 200)
    s = rng.integers(0, 10, 200).astype(float)  # many ties
    y = rng.random(200) < 0.3
    per_source = []
    for u in np.unique(src[y]):
        m = src == u
        ranks = [1 + np.sum(s[m] > v) + 0.5 * (np.sum(s[m] == v) - 1) for v in s[m & y]]
        per_source.append(np.mean(1.0 / np.array(ranks)))
    assert M.mrr_by_source(s, y, src) == pytest.approx(np.mean(per_source))
    assert np.isnan(M.mrr_by_source([0.5], [0], [0]))


def test_non_finite_scores_score_nan_not_perfect():
    y = np.array([1, 0, 1, 0])
    for bad in (np.full(4, np.nan), np.array([0.9, np.nan, 0.8, 0.1]), np.array([np.inf, 0.1, 0.2, 0.3])):
        assert np.isnan(M.auc(bad, y)) and np.isnan(M.average_precision(bad, y))
    assert np.isnan(M.mrr(np.array([np.nan, 1.0]), np.zeros((2, 3))))
    assert np.isnan(M.mrr(np.array([0.5, 1.0]), np.array([[0.1, np.nan], [0.2, 0.3]])))
    assert M.mrr(np.array([0.5, 1.0]), np.array([[0.1, 0.9], [0.2, 0.3]])) == pytest.approx((0.5 + 1.0) / 2)
