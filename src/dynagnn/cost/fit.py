"""Fitting the cost model (:mod:`.predictor`) to a profile table.

Fitting: non-negative least squares (NNLS, Lawson-Hanson active set, implemented here because scipy
is not a dependency of dynagnn) on rows scaled by 1/measured time. Why non-negative: every feature
counts work (calls, bytes, multiply-adds), so a negative coefficient would claim that more work costs
less; unconstrained least squares produces such coefficients from collinear features and noise, and
they turn into negative predicted times outside the profiled grid. Clipping a plain lstsq solution
to zero is not the constrained optimum (the other coefficients no longer compensate); NNLS is. Why
relative weighting: profiled times span four orders of magnitude, so absolute least squares would fit
the largest shapes and leave small ones wrong by multiples; dividing each row by its time minimises
the sum of squared *relative* errors, the quantity MAPE measures (noise-free timings are still
recovered exactly, as the tests check).

Width-specific coefficients: on a CPU the efficiency of a kernel depends on its widths, not only on
its work (measured: a ``[N, F] @ [F, 8]`` GEMM costs about 4x more per multiply-add than one with 16
or more output columns; the products above cannot express that, and one global fit missed such
shapes by 2x). Where the fit shapes hold at least :data:`MIN_WIDTH_SHAPES` distinct shapes of one
(F_in, F_out) pair, that pair gets its own NNLS coefficients over the same features (with the widths
fixed this is a line in N and nnz); other pairs use the global coefficients. The profile grid spans
exactly the widths the run's models use, so predictions for the run come from their own widths.

Held-out accuracy: the shapes of each operator are split (seeded) into fit and held-out shapes, by
shape, so that repeated measurements of one shape never sit on both sides, and stratified by width
pair (other sizes at the same widths, see :func:`split_shapes`); the saved coefficients
are those fitted on the fit shapes, so the recorded ``mape`` (mean absolute percentage error, as a
fraction) and ``r2`` are exactly the held-out errors of the saved model.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd

from ..errors import ConfigError, CostError
from .predictor import FEATURES, MIN_WIDTH_SHAPES, OperatorModel, Predictor, design_matrix, mape, r2
from .profile import DIRECTIONS, KEY_COLUMNS

if TYPE_CHECKING:
    from .models import ModelConfig


def nnls(A: np.ndarray, b: np.ndarray, max_iter: int | None = None) -> np.ndarray:
    """argmin_x ||A x - b||_2 subject to x >= 0 (Lawson and Hanson's active-set algorithm).

    A: [m, n], b: [m]. Columns are scaled to unit norm first (features differ by ten orders of
    magnitude) and the solution scaled back. The passive set P grows by the coordinate of largest
    positive gradient; each unconstrained least-squares solve on P that leaves a coordinate <= 0
    is pulled back along the segment until that coordinate hits 0, which leaves P. Terminates in
    finitely many steps; exact (up to rounding) when the unconstrained optimum is non-negative.
    """
    A = np.asarray(A, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    m, n = A.shape
    scale = np.linalg.norm(A, axis=0)
    scale[scale == 0] = 1.0
    As = A / scale
    x = np.zeros(n)
    P = np.zeros(n, dtype=bool)
    tol = 10 * np.finfo(float).eps * max(m, n) * max(np.abs(As).sum(axis=0).max(initial=0.0), 1.0) * max(np.abs(b).max(initial=0.0), 1.0)
    w = As.T @ (b - As @ x)
    iters = 0
    limit = max_iter if max_iter is not None else 3 * n + 30
    while (~P).any() and w[~P].max() > tol and iters < limit:
        iters += 1
        j = int(np.argmax(np.where(P, -np.inf, w)))
        P[j] = True
        while True:
            z = np.zeros(n)
            z[P] = np.linalg.lstsq(As[:, P], b, rcond=None)[0]
            if (z[P] > 0).all():
                break
            neg = P & (z <= 0)
            alpha = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + alpha * (z - x)
            P &= x > tol
            x[~P] = 0.0
            if not P.any():
                z = np.zeros(n)
                break
        x = z
        w = As.T @ (b - As @ x)
    return x / scale


SHAPE_COLUMNS = ["N", "nnz", "in_width", "out_width"]


def split_shapes(shapes: pd.DataFrame, operator: str, test_fraction: float, seed: int) -> np.ndarray:
    """Boolean mask [len(shapes)] of held-out shapes (rows of distinct shapes), seeded per operator
    so that an operator's forward and backward models hold out the same shapes.

    Stratified by width pair, because the question the predictor answers is the time of a snapshot
    of an unseen size at the widths the model runs at: a pair with more than
    :data:`MIN_WIDTH_SHAPES` shapes holds out ``round(test_fraction * k)`` of them (at least one)
    and keeps at least MIN_WIDTH_SHAPES to fit its own coefficients. The shapes of smaller pairs
    (EvolveGCN's weight step has one shape per pair) are pooled and split at random, keeping at
    least 3 in the fit (none held out from fewer than 4); they are predicted by the global
    coefficients."""
    rng = np.random.default_rng([int(seed), zlib.crc32(operator.encode())])
    mask = np.zeros(len(shapes), dtype=bool)
    pooled = []
    if test_fraction <= 0:
        return mask
    for _, idx in shapes.groupby(["in_width", "out_width"], sort=True).indices.items():
        k = idx.size
        if k <= MIN_WIDTH_SHAPES:
            pooled.append(idx)
            continue
        n_test = min(max(1, int(round(test_fraction * k))), k - MIN_WIDTH_SHAPES)
        mask[rng.permutation(idx)[:n_test]] = True
    pool = np.concatenate(pooled) if pooled else np.zeros(0, dtype=np.int64)
    k = pool.size
    if k >= 4:
        n_test = min(max(1, int(round(test_fraction * k))), k - 3)
        mask[rng.permutation(pool)[:n_test]] = True
    return mask


def fit_operator(rows: pd.DataFrame, operator: str, direction: str, *, test_fraction: float = 0.25, seed: int = 0,
                 weighting: str = "relative", target: str = "median_s") -> OperatorModel:
    """Fit one (operator, direction) to its profile rows (several rows per shape allowed).

    Shapes are held out together (all rows of a shape on one side); ``weighting`` ``"relative"``
    scales each row by 1/time (least squares on relative errors), ``"absolute"`` fits seconds.
    ``target``: the timing column fitted and scored, ``median_s`` (default) or ``min_s`` (the
    fastest sample: less sensitive to a busy shared machine, a lower bound of the typical time).
    """
    if operator not in FEATURES:
        raise CostError(f"no cost-model features for operator {operator!r}; known: {', '.join(FEATURES)}")
    if weighting not in ("relative", "absolute"):
        raise ConfigError(f"weighting must be 'relative' or 'absolute', got {weighting!r}")
    if target not in rows.columns:
        raise CostError(f"profile rows of {operator}/{direction} have no {target!r} column to fit")
    y_all = rows[target].to_numpy(dtype=np.float64)
    if not (np.isfinite(y_all).all() and (y_all > 0).all()):
        raise CostError(f"profile rows of {operator}/{direction} need positive finite {target}")
    shapes = rows[SHAPE_COLUMNS].drop_duplicates().reset_index(drop=True)
    held = split_shapes(shapes, operator, test_fraction, seed)
    test_keys = set(map(tuple, shapes[held].to_numpy().tolist()))
    key = list(map(tuple, rows[SHAPE_COLUMNS].to_numpy().tolist()))
    is_test = np.array([k in test_keys for k in key], dtype=bool)
    feats = FEATURES[operator]
    X = design_matrix(feats, *(rows[c].to_numpy() for c in SHAPE_COLUMNS))
    Xtr, ytr = X[~is_test], y_all[~is_test]
    w = 1.0 / ytr if weighting == "relative" else np.ones_like(ytr)
    coef = nnls(Xtr * w[:, None], ytr * w)
    width_coef = {}
    train = rows[~is_test]
    for (a, b), grp in train.groupby(["in_width", "out_width"], sort=True):
        if len(grp[SHAPE_COLUMNS].drop_duplicates()) >= MIN_WIDTH_SHAPES:
            sel = ((train["in_width"] == a) & (train["out_width"] == b)).to_numpy()
            width_coef[(int(a), int(b))] = nnls(Xtr[sel] * w[sel, None], ytr[sel] * w[sel])
    m = OperatorModel(operator, direction, feats, coef, n_train=int((~held).sum()), n_test=int(held.sum()),
                      test_shapes=sorted(test_keys), width_coef=width_coef)
    if is_test.any():
        test = rows[is_test]
        pred = m.predict(*(test[c].to_numpy() for c in SHAPE_COLUMNS))
        m.mape, m.r2 = mape(pred, y_all[is_test]), r2(pred, y_all[is_test])
    return m


def fit(profile: pd.DataFrame, *, device: str | None = None, require: Sequence[str] | ModelConfig | None = None,
        test_fraction: float = 0.25, seed: int = 0, weighting: str = "relative", target: str = "median_s",
        source: str = "profile table") -> Predictor:
    """Fit a :class:`Predictor` to a profile table (:data:`dynagnn.cost.profile.COLUMNS`).

    device: which device's rows to fit (needed when the table holds several). require: operators
    (or a ModelConfig whose operators) that must be present in both directions, else CostError
    naming what is missing. Every (operator, direction) present is fitted; ``weighting`` and
    ``target`` as in :func:`fit_operator`.
    """
    missing_cols = [c for c in KEY_COLUMNS + ["median_s"] if c not in profile.columns]
    if missing_cols:
        raise CostError(f"{source}: not a profile table, columns {missing_cols} are missing")
    devices = sorted(profile["device"].unique())
    if device is None:
        if len(devices) != 1:
            raise CostError(f"{source}: holds devices {devices}; say which one to fit")
        device = devices[0]
    rows = profile[profile["device"] == device]
    if rows.empty:
        raise CostError(f"{source}: no rows for device {device!r} (devices: {devices})")
    # a ModelConfig, or anything with its required_operators() (dynagnn.cost.models.ModelCalls)
    need = require.required_operators() if hasattr(require, "required_operators") else set(require or ())
    present = set(map(tuple, rows[["operator", "direction"]].drop_duplicates().to_numpy().tolist()))
    lacking = sorted(f"{op}/{d}" for op in need for d in DIRECTIONS if (op, d) not in present)
    if lacking:
        raise CostError(f"{source}: no {device} timings for {', '.join(lacking)}, which the model needs "
                        f"(profiled: {', '.join(sorted(f'{o}/{d}' for o, d in present)) or 'nothing'})")
    models = {}
    for (op, d), grp in rows.groupby(["operator", "direction"], sort=True):
        if op not in FEATURES:
            continue
        models[(op, d)] = fit_operator(grp, op, d, test_fraction=test_fraction, seed=seed, weighting=weighting,
                                       target=target)
    meta = {"weighting": weighting, "target": target, "test_fraction": float(test_fraction), "seed": int(seed),
            "rows": int(len(rows))}
    if "threads" in rows.columns:
        meta["threads"] = sorted(int(t) for t in rows["threads"].unique())
    return Predictor(str(device), models, meta)


def held_out_table(predictor: Predictor, profile: pd.DataFrame, target: str | None = None) -> pd.DataFrame:
    """Predicted against measured seconds on every model's held-out shapes (the points its ``mape``
    was measured on): one row per held-out profile row, columns operator, direction, N, nnz,
    in_width, out_width, measured_s, predicted_s. ``target``: the timing column (default: the one
    the predictor was fitted to)."""
    target = target or predictor.meta.get("target", "median_s")
    rows = profile[profile["device"] == predictor.device] if "device" in profile.columns else profile
    out = []
    for (op, d), m in sorted(predictor.models.items()):
        if not m.test_shapes:
            continue
        sub = rows[(rows["operator"] == op) & (rows["direction"] == d)]
        test = pd.DataFrame(m.test_shapes, columns=SHAPE_COLUMNS)
        sub = sub.merge(test, on=SHAPE_COLUMNS)
        if sub.empty:
            continue
        pred = m.predict(*(sub[c].to_numpy() for c in SHAPE_COLUMNS))
        out.append(pd.DataFrame({"operator": op, "direction": d, **{c: sub[c].to_numpy() for c in SHAPE_COLUMNS},
                                 "measured_s": sub[target].to_numpy(dtype=np.float64), "predicted_s": pred}))
    cols = ["operator", "direction", *SHAPE_COLUMNS, "measured_s", "predicted_s"]
    return pd.concat(out, ignore_index=True)[cols] if out else pd.DataFrame(columns=cols)


def accuracy_table(predictor: Predictor) -> pd.DataFrame:
    """One row per (operator, direction): held-out mape, r2 and the fit/held-out shape counts."""
    return pd.DataFrame([{"operator": op, "direction": d, "mape": m.mape, "r2": m.r2, "n_train": m.n_train,
                          "n_test": m.n_test} for (op, d), m in sorted(predictor.models.items())])
