"""The per-operator linear-regression cost model (BLAD §5.1) and per-snapshot load predictions.

One linear model per (operator, direction, device), fitted to a profile table
(:mod:`dynagnn.cost.profile`). Its inputs are the products that drive an operator's cost, so a linear
model in them is physically motivated rather than a curve fit:

============  =====================================================================================
operator      features (besides the intercept ``1``, the fixed per-call overhead)
============  =====================================================================================
graph_op      ``nnz`` (index reads), ``nnz*F_in`` (multiply-adds of the SpMM), ``N*F_in`` (rows of
              X read and of the output written)
nn_op         ``N*F_in``, ``N*F_out`` (bytes in and out), ``N*F_in*F_out`` (GEMM multiply-adds)
gru, lstm     ``N*F_in``, ``N*F_out`` (inputs, states, gates: memory), ``N*F_out*(F_in+F_out)``
              (the gate GEMMs: G·F_out rows of weights against F_in + F_out inputs)
evolve        ``F_out*F_out`` (the cell's weights), ``F_in*F_out`` (the evolving weight, read and
              written), ``F_in*F_out*F_out`` (the gate GEMMs over F_in rows)
elementwise,  ``N*F_in`` (elements read and written; the intercept is the per-op launch cost)
sigmoid, tanh
============  =====================================================================================

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

Predictions: :meth:`Predictor.predict` turns per-snapshot statistics (vertex and edge counts) and a
:class:`ModelConfig` into the per-snapshot forward time ``l[i]`` and backward time ``b[i]`` of a
whole GCN-RNN step. The cost of a snapshot does not depend on which group it is trained in, so
BLAD's ``l(i, j)`` and ``b(i, j)`` (snapshot i of group j) are ``l[i]`` and ``b[i]``.
"""

from __future__ import annotations

import json
import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..atomic import write_text
from ..errors import ConfigError, CostError
from .profile import DIRECTIONS, KEY_COLUMNS

PREDICTOR_VERSION = 1
MIN_WIDTH_SHAPES = 3  # distinct fit shapes a width pair needs for its own coefficients
PREDICTOR_KIND = "dynagnn.cost.predictor"

# name -> f(N, nnz, F_in, F_out), all float64 arrays
FEATURE_FUNCS = {
    "1": lambda n, e, fi, fo: np.ones_like(n),
    "nnz": lambda n, e, fi, fo: e,
    "nnz*F_in": lambda n, e, fi, fo: e * fi,
    "N*F_in": lambda n, e, fi, fo: n * fi,
    "N*F_out": lambda n, e, fi, fo: n * fo,
    "N*F_in*F_out": lambda n, e, fi, fo: n * fi * fo,
    "N*F_out*(F_in+F_out)": lambda n, e, fi, fo: n * fo * (fi + fo),
    "F_out*F_out": lambda n, e, fi, fo: fo * fo,
    "F_in*F_out": lambda n, e, fi, fo: fi * fo,
    "F_in*F_out*F_out": lambda n, e, fi, fo: fi * fo * fo,
}

FEATURES: dict[str, tuple[str, ...]] = {
    "graph_op": ("1", "nnz", "nnz*F_in", "N*F_in"),
    "nn_op": ("1", "N*F_in", "N*F_out", "N*F_in*F_out"),
    "gru": ("1", "N*F_in", "N*F_out", "N*F_out*(F_in+F_out)"),
    "lstm": ("1", "N*F_in", "N*F_out", "N*F_out*(F_in+F_out)"),
    "evolve": ("1", "F_out*F_out", "F_in*F_out", "F_in*F_out*F_out"),
    "elementwise": ("1", "N*F_in"),
    "sigmoid": ("1", "N*F_in"),
    "tanh": ("1", "N*F_in"),
}


def design_matrix(features: Sequence[str], N, nnz, in_width, out_width) -> np.ndarray:
    """The [rows, len(features)] matrix of the named features of the given shapes (float64)."""
    n, e, fi, fo = (np.asarray(v, dtype=np.float64) for v in (N, nnz, in_width, out_width))
    n, e, fi, fo = np.broadcast_arrays(n, e, fi, fo)
    try:
        cols = [FEATURE_FUNCS[f](n, e, fi, fo) for f in features]
    except KeyError as exc:
        raise CostError(f"unknown cost-model feature {exc.args[0]!r}; known: {', '.join(FEATURE_FUNCS)}") from None
    return np.stack(cols, axis=-1) if cols else np.zeros(n.shape + (0,))


# ----------------------------------------------------------------------------------------- NNLS


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


# ----------------------------------------------------------------------------------------- model


def mape(pred: np.ndarray, actual: np.ndarray) -> float:
    """Mean absolute percentage error, as a fraction: mean(|pred - actual| / actual)."""
    pred, actual = np.asarray(pred, float), np.asarray(actual, float)
    return float(np.mean(np.abs(pred - actual) / actual)) if actual.size else float("nan")


def r2(pred: np.ndarray, actual: np.ndarray) -> float:
    """Coefficient of determination 1 - SS_res / SS_tot (nan for fewer than two points)."""
    pred, actual = np.asarray(pred, float), np.asarray(actual, float)
    if actual.size < 2:
        return float("nan")
    ss_tot = float(np.sum((actual - actual.mean()) ** 2))
    ss_res = float(np.sum((actual - pred) ** 2))
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")


@dataclass
class OperatorModel:
    """The fitted linear model of one (operator, direction): seconds = features(shape) · coef.

    ``test_shapes``: the held-out (N, nnz, in_width, out_width) shapes that ``mape`` and ``r2``
    were measured on (not used in the fit).
    """

    operator: str
    direction: str
    features: tuple[str, ...]
    coef: np.ndarray
    mape: float = float("nan")
    r2: float = float("nan")
    n_train: int = 0
    n_test: int = 0
    test_shapes: list[tuple[int, int, int, int]] = field(default_factory=list)
    width_coef: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)

    def predict(self, N, nnz, in_width, out_width) -> np.ndarray:
        """Predicted seconds per call for the given shapes (arrays broadcast): a width pair's own
        coefficients where it has them (module docstring), else the global ones."""
        X = design_matrix(self.features, N, nnz, in_width, out_width)
        if np.ndim(in_width) == 0 and np.ndim(out_width) == 0:  # the common call: one operator's widths
            key = (np.asarray(in_width).item(), np.asarray(out_width).item())  # 32.0 finds (32, 32); 4.5 nothing
            return X @ self.width_coef.get(key, self.coef)
        out = X @ self.coef
        if self.width_coef:
            fi, fo = np.broadcast_arrays(*(np.asarray(v) for v in (in_width, out_width)), out)[:2]
            for (a, b), c in self.width_coef.items():
                mask = (fi == a) & (fo == b)
                if mask.any():
                    out = np.where(mask, X @ c, out)
        return out

    def to_dict(self) -> dict:
        return {"features": list(self.features), "coef": [float(c) for c in self.coef],
                "mape": _num(self.mape), "r2": _num(self.r2), "n_train": int(self.n_train),
                "n_test": int(self.n_test), "test_shapes": [list(map(int, s)) for s in self.test_shapes],
                "width_coef": [{"in_width": int(a), "out_width": int(b), "coef": [float(x) for x in c]}
                               for (a, b), c in sorted(self.width_coef.items())]}

    @classmethod
    def from_dict(cls, operator: str, direction: str, d: Mapping, where: str = "predictor") -> "OperatorModel":
        try:
            feats = tuple(d["features"])
            coef = np.asarray(d["coef"], dtype=np.float64)
        except (KeyError, TypeError, ValueError) as exc:
            raise CostError(f"{where}: operator {operator}/{direction} needs 'features' and 'coef' ({exc})") from None
        unknown = [f for f in feats if f not in FEATURE_FUNCS]
        if unknown or coef.shape != (len(feats),):
            raise CostError(f"{where}: operator {operator}/{direction} has unknown features {unknown} or "
                            f"{coef.size} coefficients for {len(feats)} features")
        width_coef = {}
        try:
            for item in d.get("width_coef", []):
                c = np.asarray(item["coef"], dtype=np.float64)
                if c.shape != coef.shape:
                    raise ValueError(f"{c.size} coefficients for {len(feats)} features")
                width_coef[(int(item["in_width"]), int(item["out_width"]))] = c
        except (KeyError, TypeError, ValueError) as exc:
            raise CostError(f"{where}: operator {operator}/{direction} has a bad width_coef entry ({exc})") from None
        return cls(operator, direction, feats, coef, _nan(d.get("mape")), _nan(d.get("r2")),
                   int(d.get("n_train", 0)), int(d.get("n_test", 0)),
                   [tuple(int(v) for v in s) for s in d.get("test_shapes", [])], width_coef)


def _num(v: float):
    return None if v is None or not math.isfinite(v) else float(v)


def _nan(v) -> float:
    return float("nan") if v is None else float(v)


# ----------------------------------------------------------------------------------------- model config


@dataclass(frozen=True)
class ModelConfig:
    """The shape of a GCN-RNN model, as far as its cost goes.

    in_dim: node-feature width F. hidden_dims: output width of each GCN layer (its length is the
    number of GCN layers). rnn: ``"gru"`` or ``"lstm"`` (a cell over the vertices' last GCN output,
    WD-GCN / T-GCN / MPNN-LSTM style), ``"evolve"`` (EvolveGCN-O: each GCN layer's weight
    ``[F_in, F_out]`` evolved by a GRU cell per snapshot) or ``"none"``. rnn_hidden: the vertex
    RNN's hidden width (default: the last GCN width). order: ``"update_first"`` (``Â(XW)``, PyG's
    GCNConv) or ``"aggregate_first"`` (``(ÂX)W``) for every layer, or a tuple of these per layer
    (BLAD's operator-order manager chooses per layer).
    """

    in_dim: int
    hidden_dims: tuple[int, ...] = (32, 32)
    rnn: str = "gru"
    rnn_hidden: int | None = None
    order: str | tuple[str, ...] = "update_first"

    def __post_init__(self):
        object.__setattr__(self, "hidden_dims", tuple(int(h) for h in self.hidden_dims))
        if int(self.in_dim) <= 0 or not self.hidden_dims or min(self.hidden_dims) <= 0:
            raise ConfigError(f"model config needs in_dim > 0 and at least one positive GCN width, got "
                              f"in_dim={self.in_dim}, hidden_dims={self.hidden_dims}")
        if self.rnn not in ("gru", "lstm", "evolve", "none"):
            raise ConfigError(f"model config: rnn must be one of gru, lstm, evolve, none, got {self.rnn!r}")
        orders = self.layer_orders()
        if len(orders) != len(self.hidden_dims) or any(o not in ("update_first", "aggregate_first") for o in orders):
            raise ConfigError(f"model config: order must be 'update_first' or 'aggregate_first' (or one per "
                              f"layer, {len(self.hidden_dims)} layers), got {self.order!r}")

    def layer_orders(self) -> tuple[str, ...]:
        return (self.order,) * len(self.hidden_dims) if isinstance(self.order, str) else tuple(self.order)

    def calls(self) -> list[tuple[str, str, int, int, bool]]:
        """The operator calls of one snapshot step: (operator, role, F_in, F_out, has_backward).

        A GCN layer is an update ``nn_op(F_in -> F_out)`` and an aggregation ``graph_op`` at the width
        it runs on (F_out after the update, F_in before it). The first layer's aggregation in
        aggregate-first order has no backward (Â·X of input features needs no gradient); the first
        update's backward is counted whole (dX and dW), an over-estimate of one small GEMM.
        """
        dims = (int(self.in_dim),) + self.hidden_dims
        out: list[tuple[str, str, int, int, bool]] = []
        for k, order in enumerate(self.layer_orders()):
            fi, fo = dims[k], dims[k + 1]
            if self.rnn == "evolve":
                out.append(("evolve", f"layer{k}.evolve", fi, fo, True))
            if order == "update_first":
                out.append(("nn_op", f"layer{k}.update", fi, fo, True))
                out.append(("graph_op", f"layer{k}.aggregate", fo, fo, True))
            else:
                out.append(("graph_op", f"layer{k}.aggregate", fi, fi, k > 0))
                out.append(("nn_op", f"layer{k}.update", fi, fo, True))
        if self.rnn in ("gru", "lstm"):
            h = int(self.rnn_hidden or dims[-1])
            out.append((self.rnn, "rnn", dims[-1], h, True))
        return out

    def required_operators(self) -> set[str]:
        return {c[0] for c in self.calls()}


# ----------------------------------------------------------------------------------------- predictor


def _snapshot_shapes(stats, num_nodes: int | None) -> tuple[np.ndarray, np.ndarray]:
    """(N [T], nnz of Â [T]) from per-snapshot statistics; see :meth:`Predictor.predict`."""
    def col(name):
        if isinstance(stats, pd.DataFrame):
            return stats[name].to_numpy() if name in stats.columns else None
        return np.asarray(stats[name]) if name in stats else None

    edges = col("edges")
    if edges is None:
        raise CostError("snapshot statistics need an 'edges' column (edges per snapshot, the stats stage's table)")
    edges = np.asarray(edges, dtype=np.float64)
    if num_nodes is not None:
        n = np.full(edges.shape, float(num_nodes))
    else:
        nn = col("num_nodes")
        nn = col("active_nodes") if nn is None else nn
        if nn is None:
            raise CostError("snapshot statistics need 'active_nodes' or 'num_nodes' (or pass num_nodes=)")
        n = np.asarray(nn, dtype=np.float64)
    return n, edges + n


@dataclass
class Predictor:
    """Fitted operator models of one device, keyed by (operator, direction)."""

    device: str
    models: dict[tuple[str, str], OperatorModel]
    meta: dict = field(default_factory=dict)

    def model(self, operator: str, direction: str) -> OperatorModel:
        try:
            return self.models[(operator, direction)]
        except KeyError:
            have = sorted({op for op, _ in self.models})
            raise CostError(f"the {self.device} cost model has no {operator}/{direction} model (fitted: "
                            f"{', '.join(have) or 'none'}); profile that operator and refit") from None

    def check(self, config: ModelConfig) -> None:
        """Raise CostError unless every operator ``config`` needs is fitted in both directions."""
        for op in sorted(config.required_operators()):
            for d in DIRECTIONS:
                self.model(op, d)

    def breakdown(self, snapshot_stats, config: ModelConfig, num_nodes: int | None = None) -> pd.DataFrame:
        """Predicted seconds of every operator call of every snapshot: one column per
        ``<role>.<direction>`` (e.g. ``layer0.aggregate.forward``), one row per snapshot."""
        self.check(config)
        n, e = _snapshot_shapes(snapshot_stats, num_nodes)
        cols = {}
        for op, role, fi, fo, has_bwd in config.calls():
            nn_, ee = (np.zeros_like(n), np.zeros_like(e)) if op == "evolve" else (n, e)
            cols[f"{role}.forward"] = self.model(op, "forward").predict(nn_, ee, fi, fo)
            cols[f"{role}.backward"] = self.model(op, "backward").predict(nn_, ee, fi, fo) if has_bwd else np.zeros_like(n)
        return pd.DataFrame(cols)

    def predict(self, snapshot_stats, config: ModelConfig, num_nodes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per-snapshot forward time ``l[i]`` and backward time ``b[i]`` (seconds, float64 [T]).

        snapshot_stats: the stats stage's table (a DataFrame) or a mapping of arrays, with ``edges``
        (stored edges per snapshot, both directions of an undirected edge counted) and
        ``active_nodes`` (or ``num_nodes``). Which N: the dense operators act on every row of the
        feature and state matrices, so pass ``num_nodes`` = the store's N for dynagnn's engine, whose
        tensors are ``[N, F]`` for every snapshot; leave it out to use each snapshot's active vertices,
        for engines that compact a snapshot to its active subgraph (BLAD's subgraph batches). The graph
        operator's nnz is ``edges + N`` (the self-loops :func:`~dynagnn.graph.csr.normalize` adds).
        Only the listed calls are counted (:mod:`dynagnn.cost.models` lists dynagnn's models' element-wise
        ops too; a ModelConfig does not): the loss and the optimiser step are not.
        """
        self.check(config)
        n, e = _snapshot_shapes(snapshot_stats, num_nodes)
        fwd = np.zeros_like(n)
        bwd = np.zeros_like(n)
        for op, _role, fi, fo, has_bwd in config.calls():
            if op == "evolve":
                fwd += self.model(op, "forward").predict(0.0, 0.0, fi, fo)
                if has_bwd:
                    bwd += self.model(op, "backward").predict(0.0, 0.0, fi, fo)
                continue
            fwd += self.model(op, "forward").predict(n, e, fi, fo)
            if has_bwd:
                bwd += self.model(op, "backward").predict(n, e, fi, fo)
        return fwd, bwd

    # -------------------------------------------------------------------- JSON

    def to_dict(self) -> dict:
        ops: dict[str, dict] = {}
        for (op, d), m in sorted(self.models.items()):
            ops.setdefault(op, {})[d] = m.to_dict()
        for op, entry in ops.items():  # operator-level summary: the worse of its directions
            ms = [entry[d]["mape"] for d in DIRECTIONS if d in entry and entry[d]["mape"] is not None]
            rs = [entry[d]["r2"] for d in DIRECTIONS if d in entry and entry[d]["r2"] is not None]
            entry["mape"] = max(ms) if ms else None
            entry["r2"] = min(rs) if rs else None
        return {"version": PREDICTOR_VERSION, "kind": PREDICTOR_KIND, "device": self.device,
                "features": {op: list(f) for op, f in FEATURES.items()}, "meta": self.meta, "operators": ops}

    @classmethod
    def from_dict(cls, d: Mapping, where: str = "predictor") -> "Predictor":
        if not isinstance(d, Mapping):
            raise CostError(f"{where}: expected a JSON object, got {type(d).__name__}")
        if d.get("version") != PREDICTOR_VERSION:
            raise CostError(f"{where}: predictor version {d.get('version')!r}, this dynagnn reads version "
                            f"{PREDICTOR_VERSION}; refit the cost model (profile stage)")
        if "device" not in d or not isinstance(d.get("operators"), Mapping):
            raise CostError(f"{where}: a predictor needs 'device' and an 'operators' object")
        models = {}
        for op, entry in d["operators"].items():
            for direction in DIRECTIONS:
                if isinstance(entry, Mapping) and direction in entry:
                    models[(op, direction)] = OperatorModel.from_dict(op, direction, entry[direction], where)
        return cls(str(d["device"]), models, dict(d.get("meta", {})))

    def save(self, path: str | Path) -> Path:
        """Write as JSON atomically."""
        return write_text(path, json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "Predictor":
        path = Path(path)
        if not path.exists():
            raise CostError(f"{path}: predictor not found (run the profile stage first)")
        try:
            d = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise CostError(f"{path}: not a readable predictor JSON ({exc})") from None
        return cls.from_dict(d, where=str(path))


# ----------------------------------------------------------------------------------------- fitting


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
