"""Evaluation metrics: ranking (AUC, AP, MRR), classification (accuracy, macro-F1), regression (MSE, MAE).

Every function takes numpy arrays or torch tensors (any device, detached here) and returns a Python
float. Ties are handled deterministically: AUC and MRR give tied items their average rank; AP puts
tied scores at one threshold (as scikit-learn does), so the order of tied items never matters.
"""

from __future__ import annotations

import numpy as np


def _np(a) -> np.ndarray:
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    return np.asarray(a)


def _binary(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    s = _np(scores).astype(np.float64).ravel()
    y = _np(labels).ravel()
    if s.shape != y.shape:
        raise ValueError(f"scores and labels differ in length ({s.shape[0]} and {y.shape[0]})")
    return s, y.astype(bool)


def _average_ranks(s: np.ndarray) -> np.ndarray:
    """1-based ranks of ``s`` ascending, ties sharing the mean of their positions (scipy's 'average')."""
    order = np.argsort(s, kind="stable")
    sorted_s = s[order]
    first = np.ones(s.shape[0], bool)
    first[1:] = sorted_s[1:] != sorted_s[:-1]
    group = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], s.shape[0])          # exclusive
    mean_rank = (starts + 1 + ends) / 2.0             # mean of positions starts+1 .. ends
    ranks = np.empty(s.shape[0])
    ranks[order] = mean_rank[group]
    return ranks


def auc(scores, labels) -> float:
    """ROC AUC = P(score of a random positive > score of a random negative), a tie counting 1/2.

    Computed with the Mann-Whitney statistic on average ranks: ``(Σ ranks of positives − P(P+1)/2)/(P·Q)``.
    NaN when one class is absent or a score is not finite.
    """
    s, y = _binary(scores, labels)
    p, q = int(y.sum()), int((~y).sum())
    if p == 0 or q == 0 or not np.isfinite(s).all():
        return float("nan")
    r = _average_ranks(s)
    return float((r[y].sum() - p * (p + 1) / 2.0) / (p * q))


def average_precision(scores, labels) -> float:
    """Average precision ``Σ_k (R_k − R_{k−1}) P_k`` over the distinct score thresholds, highest first.

    At threshold k every item with score >= the k-th distinct score is predicted positive; P_k, R_k are
    the precision and recall there (scikit-learn's definition; no interpolation). NaN without positives or with a non-finite score.
    """
    s, y = _binary(scores, labels)
    p = int(y.sum())
    if p == 0 or not np.isfinite(s).all():
        return float("nan")
    order = np.argsort(-s, kind="stable")
    s, y = s[order], y[order]
    last = np.ones(s.shape[0], bool)                  # last item of each tie group
    last[:-1] = s[1:] != s[:-1]
    tp = np.cumsum(y)[last].astype(np.float64)
    predicted = (np.flatnonzero(last) + 1).astype(np.float64)
    precision = tp / predicted
    recall_gain = np.diff(np.concatenate([[0.0], tp])) / p
    return float((recall_gain * precision).sum())


def mrr(pos_scores, neg_scores) -> float:
    """Mean reciprocal rank of each positive among its negatives.

    ``pos_scores`` [P]; ``neg_scores`` [P, K] (K negatives drawn for each positive, e.g. the same source
    with corrupted targets) or [K] (one negative set shared by all positives). The rank of positive i
    is ``1 + #{k: neg_ik > pos_i} + ½·#{k: neg_ik == pos_i}`` (ties take the average position), and the
    result is ``mean_i 1/rank_i``. Other positives do not push a positive down; for EvolveGCN's
    per-source variant, where they do, use :func:`mrr_by_source`.
    """
    pos = _np(pos_scores).astype(np.float64).ravel()
    neg = _np(neg_scores).astype(np.float64)
    if neg.ndim == 1:
        neg = np.broadcast_to(neg, (pos.shape[0], neg.shape[0]))
    if neg.ndim != 2 or neg.shape[0] != pos.shape[0]:
        raise ValueError(f"neg_scores must be [K] or [P, K] with P = {pos.shape[0]}, got shape {neg.shape}")
    if pos.shape[0] == 0 or not (np.isfinite(pos).all() and np.isfinite(neg).all()):
        return float("nan")  # a NaN score must not rank as a perfect one
    rank = 1.0 + (neg > pos[:, None]).sum(1) + 0.5 * (neg == pos[:, None]).sum(1)
    return float((1.0 / rank).mean())


def mrr_by_source(scores, labels, src) -> float:
    """EvolveGCN's MRR (``Logger.get_MRR``): rank all candidate edges of one source together.

    For each source u with at least one true edge: sort u's candidates (true and false) by score,
    highest first; MRR_u = mean over u's true edges of 1/rank (other true edges above count, ties take
    the average rank). The result is the mean of MRR_u over those sources.
    """
    s, y = _binary(scores, labels)
    u = _np(src).ravel()
    if u.shape != s.shape:
        raise ValueError(f"src and scores differ in length ({u.shape[0]} and {s.shape[0]})")
    if not y.any():
        return float("nan")
    # one sort by (source, score descending), then ranks within each source, ties averaged
    order = np.lexsort((-s, u))
    u, s, y = u[order], s[order], y[order]
    n = s.shape[0]
    new_src = np.ones(n, bool)
    new_src[1:] = u[1:] != u[:-1]
    new_tie = new_src.copy()
    new_tie[1:] |= s[1:] != s[:-1]
    src_start = np.maximum.accumulate(np.where(new_src, np.arange(n), 0))
    tie_start = np.flatnonzero(new_tie)
    tie_size = np.diff(np.append(tie_start, n))
    tie_rank = tie_start - src_start[tie_start] + (tie_size + 1) / 2.0  # mean of 1-based positions
    rank = np.repeat(tie_rank, tie_size)
    src_id = np.cumsum(new_src) - 1
    count = np.bincount(src_id[y], minlength=src_id[-1] + 1)
    total = np.bincount(src_id[y], weights=1.0 / rank[y], minlength=src_id[-1] + 1)
    has = count > 0
    return float(np.mean(total[has] / count[has]))


def _labels(logits) -> np.ndarray:
    """Predicted labels: argmax of [N, C] logits, or ``logit > 0`` for [N] binary logits, or ints as given."""
    a = _np(logits)
    if a.ndim == 2:
        return a.argmax(1)
    if np.issubdtype(a.dtype, np.floating):
        return (a > 0).astype(np.int64)
    return a.astype(np.int64)


def accuracy(logits, y) -> float:
    """Fraction of nodes whose predicted label (see ``_labels``) equals ``y`` [N]."""
    pred, y = _labels(logits), _np(y).ravel().astype(np.int64)
    return float((pred == y).mean()) if y.shape[0] else float("nan")


def macro_f1(logits, y) -> float:
    """Unweighted mean over classes of ``F1_c = 2TP/(2TP + FP + FN)``.

    Classes are those present in ``y`` or in the predictions (scikit-learn's default); a class with
    TP = FP = FN = 0 cannot occur, so no division by zero.
    """
    pred, y = _labels(logits), _np(y).ravel().astype(np.int64)
    if y.shape[0] == 0:
        return float("nan")
    f1 = []
    for c in np.union1d(y, pred):
        tp = np.sum((pred == c) & (y == c))
        fp = np.sum((pred == c) & (y != c))
        fn = np.sum((pred != c) & (y == c))
        f1.append(2.0 * tp / (2.0 * tp + fp + fn))
    return float(np.mean(f1))


def mse(pred, target) -> float:
    """Mean squared error."""
    d = _np(pred).astype(np.float64).ravel() - _np(target).astype(np.float64).ravel()
    return float(np.mean(d * d))


def mae(pred, target) -> float:
    """Mean absolute error."""
    d = _np(pred).astype(np.float64).ravel() - _np(target).astype(np.float64).ravel()
    return float(np.mean(np.abs(d)))
