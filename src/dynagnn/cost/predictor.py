"""The per-operator linear-regression cost model (BLAD §5.1): its features, the saved model, and
per-snapshot load predictions. Fitting it is :mod:`.fit`; the operator calls of a model are :mod:`.models`.

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

Predictions: :meth:`Predictor.predict` turns per-snapshot statistics (vertex and edge counts) and a
:class:`~dynagnn.cost.models.ModelConfig` (or a
:class:`~dynagnn.cost.models.ModelCalls`) into the per-snapshot forward time ``l[i]`` and backward time ``b[i]`` of a
whole GCN-RNN step. The cost of a snapshot does not depend on which group it is trained in, so
BLAD's ``l(i, j)`` and ``b(i, j)`` (snapshot i of group j) are ``l[i]`` and ``b[i]``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
import pandas as pd

from ..atomic import write_text
from ..errors import CostError
from ..versioned import read_versioned
from .profile import DIRECTIONS

if TYPE_CHECKING:
    from .models import ModelConfig

PREDICTOR_VERSION = 1
MIN_WIDTH_SHAPES = 3  # distinct fit shapes a width pair needs for its own coefficients
PREDICTOR_KIND = "dynagnn.cost.predictor"
# physical bounds of a fitted model (seconds): a call's fixed overhead (the intercept) is a kernel
# launch, microseconds; one unit of any other feature (an element, an index read, a multiply-add) is
# nanoseconds. Far beyond these, a coefficient or a prediction is a damaged file, never a fit.
MAX_INTERCEPT_S = 60.0
MAX_UNIT_S = 1.0
MAX_CALL_S = 86400.0  # one operator call on one snapshot predicted to take over a day

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
        for c in (coef, *width_coef.values()):
            _check_coef(c, feats, f"{where}: operator {operator}/{direction}")
        return cls(operator, direction, feats, coef, _nan(d.get("mape")), _nan(d.get("r2")),
                   int(d.get("n_train", 0)), int(d.get("n_test", 0)),
                   [tuple(int(v) for v in s) for s in d.get("test_shapes", [])], width_coef)


def _check_coef(coef: np.ndarray, features: Sequence[str], what: str) -> None:
    """CostError naming ``what`` unless every coefficient is finite and within physical bounds
    (:data:`MAX_INTERCEPT_S` for the intercept, :data:`MAX_UNIT_S` per unit of another feature)."""
    for f, c in zip(features, coef):
        bound = MAX_INTERCEPT_S if f == "1" else MAX_UNIT_S
        if not math.isfinite(c) or abs(c) > bound:
            unit = "s per call" if f == "1" else f"s per unit of {f}"
            raise CostError(f"{what}: coefficient of {f!r} is {c:.3g} {unit}, outside physical bounds (|c| <= "
                            f"{bound:g}); the file is damaged or the fit failed: re-run the profile stage")


def _num(v: float):
    return None if v is None or not math.isfinite(v) else float(v)


def _nan(v) -> float:
    return float("nan") if v is None else float(v)


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
    source: str = "predictor"  # the file it was read from, for messages

    def _bounded(self, op: str, direction: str, seconds, n) -> np.ndarray:
        """``seconds`` (a call's predicted time per snapshot), CostError naming the file and the operator
        unless finite and at most :data:`MAX_CALL_S`."""
        t = np.broadcast_to(np.asarray(seconds, dtype=np.float64), np.shape(n))
        bad = ~np.isfinite(t) | (t > MAX_CALL_S)
        if bad.any():
            i = int(np.flatnonzero(bad.reshape(-1))[0])
            raise CostError(f"{self.source}: operator {op}/{direction} predicts {float(t.reshape(-1)[i]):.3g} s for one "
                            f"call on snapshot {i}, outside physical bounds (at most {MAX_CALL_S:g} s); the "
                            "cost model is damaged or extrapolates far beyond its profile: re-run the profile stage")
        return t

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
            cols[f"{role}.forward"] = self._bounded(op, "forward", self.model(op, "forward").predict(nn_, ee, fi, fo), n)
            cols[f"{role}.backward"] = (self._bounded(op, "backward", self.model(op, "backward").predict(nn_, ee, fi, fo), n)
                                        if has_bwd else np.zeros_like(n))
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
            nn_, ee = (0.0, 0.0) if op == "evolve" else (n, e)
            fwd += self._bounded(op, "forward", self.model(op, "forward").predict(nn_, ee, fi, fo), n)
            if has_bwd:
                bwd += self._bounded(op, "backward", self.model(op, "backward").predict(nn_, ee, fi, fo), n)
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
        """A predictor of :meth:`to_dict`'s object (its kind and version are checked where a file is
        read, by :meth:`load`); CostError naming ``where`` if a part is missing or malformed."""
        if not isinstance(d, Mapping):
            raise CostError(f"{where}: expected a JSON object, got {type(d).__name__}")
        if "device" not in d or not isinstance(d.get("operators"), Mapping):
            raise CostError(f"{where}: a predictor needs 'device' and an 'operators' object")
        models = {}
        for op, entry in d["operators"].items():
            for direction in DIRECTIONS:
                if isinstance(entry, Mapping) and direction in entry:
                    models[(op, direction)] = OperatorModel.from_dict(op, direction, entry[direction], where)
        return cls(str(d["device"]), models, dict(d.get("meta", {})), source=str(where))

    def save(self, path: str | Path) -> Path:
        """Write as JSON atomically."""
        return write_text(path, json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> "Predictor":
        """Read a predictor file; CostError naming ``path`` if it is missing, unreadable, not a
        predictor of this version, or malformed."""
        d = read_versioned(path, kind=PREDICTOR_KIND, version=PREDICTOR_VERSION, what="predictor",
                           producer="the profile stage", error=CostError)
        return cls.from_dict(d, where=str(path))
