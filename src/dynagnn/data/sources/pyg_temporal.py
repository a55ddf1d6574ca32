"""PyTorch Geometric Temporal JSON (the England COVID and Tennis layouts)."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np

from dynagnn.data.types import RawGraph, SnapshotList
from dynagnn.errors import InputError

from .parse import dataset_name, open_text, require_file


def _json_key(data: dict, key: str, path: Path, where: str = ""):
    if not isinstance(data, dict) or key not in data:
        raise InputError(f"missing key {where + key!r}", path)
    return data[key]


def _json_array(value, key: str, path: Path, dtype, ndim: int, what: str) -> np.ndarray:
    """``value`` as a numpy array of ``ndim`` dimensions, or an InputError naming ``key``."""
    try:
        array = np.asarray(value, dtype=dtype)
    except (ValueError, TypeError) as exc:
        raise InputError(f"{key}: expected {what}", path) from exc
    if array.ndim != ndim:
        raise InputError(f"{key}: expected {what}, got an array of shape {array.shape}", path)
    return array


def _json_edges(value, key: str, path: Path, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) int64 [nnz] of a ``[[u, v], ...]`` list, ids checked against 0..N-1."""
    what = "a list of [u, v] integer pairs"
    if isinstance(value, list) and not value:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    edges = _json_array(value, key, path, None, 2, what)
    if edges.shape[1] != 2 or edges.dtype.kind not in "iu":
        raise InputError(f"{key}: expected {what}", path)
    bad = edges[(edges < 0) | (edges >= num_nodes)]
    if bad.size:
        raise InputError(f"{key}: node id {int(bad[0])} outside 0..{num_nodes - 1}", path)
    return edges[:, 0].astype(np.int64), edges[:, 1].astype(np.int64)


def _json_weights(value, key: str, path: Path, nnz: int) -> np.ndarray:
    weights = _json_array(value, key, path, np.float32, 1, f"a list of {nnz} numbers")
    if weights.shape[0] != nnz:
        raise InputError(f"{key}: expected {nnz} weights (one per edge), got {weights.shape[0]}",
                         path)
    return weights


def _json_periods(data: dict, path: Path) -> int:
    periods = _json_key(data, "time_periods", path)
    if not isinstance(periods, int) or isinstance(periods, bool) or periods < 1:
        raise InputError(f"time_periods: expected a positive integer, got {periods!r}", path)
    return periods


def _read_england_layout(data: dict, path: Path) -> RawGraph:
    """``edge_mapping.edge_index[day]``, ``edge_mapping.edge_weight[day]``, ``y`` [T][N]."""
    mapping = _json_key(data, "edge_mapping", path)
    index = _json_key(mapping, "edge_index", path, "edge_mapping.")
    weight = _json_key(mapping, "edge_weight", path, "edge_mapping.")
    periods = _json_periods(data, path)
    y = _json_array(_json_key(data, "y", path), "y", path, np.float32, 2,
                    "a [T][N] list of numbers")
    num_nodes = int(y.shape[1])
    try:
        days = sorted(index, key=int)  # numerically: "10" after "9"
    except (TypeError, ValueError) as exc:
        raise InputError("edge_mapping.edge_index: expected integer day keys", path) from exc
    if days != [str(d) for d in range(len(days))] or len(days) != periods or y.shape[0] != periods:
        raise InputError(f"expected time_periods = {periods} days keyed '0'..'{periods - 1}' and "
                         f"as many rows of y, got {len(days)} days and {y.shape[0]} rows", path)
    rows, cols, weights = [], [], []
    for day in days:
        row, col = _json_edges(index[day], f"edge_mapping.edge_index[{day!r}]", path, num_nodes)
        key = f"edge_mapping.edge_weight[{day!r}]"
        weights.append(_json_weights(_json_key(weight, day, path, "edge_mapping.edge_weight."),
                                     key, path, row.shape[0]))
        rows.append(row)
        cols.append(col)
    snapshots = SnapshotList(rows=rows, cols=cols, weights=weights,
                             times=np.arange(len(days), dtype=np.int64))
    return RawGraph(num_nodes=num_nodes, node_ids=np.arange(num_nodes, dtype=np.int64),
                    snapshots=snapshots, node_labels=y, time_unit="day", directed=True,
                    sources=[path], name=dataset_name(path))


def _read_tennis_layout(data: dict, path: Path) -> RawGraph:
    """``node_ids`` {name: id} and one ``"<t>"`` entry per snapshot with edges, weights, y, X."""
    names = _json_key(data, "node_ids", path)
    periods = _json_periods(data, path)
    ids = [i for i in names.values() if isinstance(i, int)] if isinstance(names, dict) else []
    if not ids or sorted(ids) != list(range(len(names))):
        raise InputError("node_ids: expected a {name: id} mapping onto the ids 0..N-1", path)
    num_nodes = len(ids)
    node_ids = np.empty(num_nodes, dtype=object)
    for name, i in names.items():
        node_ids[i] = name
    rows, cols, weights, labels, features = [], [], [], [], []
    for t in range(periods):
        snap = _json_key(data, str(t), path)
        row, col = _json_edges(_json_key(snap, "edges", path, f"{t}."), f"{t}.edges", path,
                               num_nodes)
        weights.append(_json_weights(_json_key(snap, "weights", path, f"{t}."), f"{t}.weights",
                                     path, row.shape[0]))
        rows.append(row)
        cols.append(col)
        labels.append(_json_array(_json_key(snap, "y", path, f"{t}."), f"{t}.y", path,
                                  np.float32, 1, f"a list of {num_nodes} numbers"))
        features.append(_json_array(_json_key(snap, "X", path, f"{t}."), f"{t}.X", path,
                                    np.float32, 2, f"a [{num_nodes}][F] list of numbers"))
        if labels[-1].shape[0] != num_nodes or features[-1].shape[0] != num_nodes \
                or features[-1].shape[1] != features[0].shape[1]:
            raise InputError(f"{t}: expected y of {num_nodes} values and X of shape "
                             f"[{num_nodes}, {features[0].shape[1]}], got {labels[-1].shape[0]} "
                             f"and {list(features[-1].shape)}", path)
    snapshots = SnapshotList(rows=rows, cols=cols, weights=weights,
                             times=np.arange(periods, dtype=np.int64))
    return RawGraph(num_nodes=num_nodes, node_ids=node_ids, snapshots=snapshots,
                    node_labels=np.stack(labels), node_features=np.stack(features),
                    time_unit="index", directed=True, sources=[path], name=dataset_name(path))


def read_pyg_temporal_json(path: str | Path) -> RawGraph:
    """Read a PyTorch Geometric Temporal JSON dataset; the layout is told by its keys.

    england_covid layout (``edge_mapping`` key): ``edge_mapping.edge_index["<day>"]`` = [[u, v],
    ...], ``edge_mapping.edge_weight["<day>"]``, ``time_periods`` T, ``y`` [T][N] (daily cases).
    Returns snapshots with times 0..T-1 (days, ordered numerically), weights float32,
    node_labels float32 [T, N] (regression targets), node_ids int64 0..N-1 and time_unit "day".

    twitter_tennis layout (``node_ids`` key): ``node_ids`` {name: id}, ``time_periods`` T and
    per snapshot ``"<t>"``: ``edges``, ``weights``, ``y`` [N], ``X`` [N][F]. Returns snapshots with
    times 0..T-1, weights float32, node_labels float32 [T, N], node_features float32 [T, N, F],
    node_ids str [N] (the names, by id) and time_unit "index" (the file does not say hours).

    Both directed. Plain or gzip.
    """
    path = require_file(path)
    try:
        with open_text(path) as f:
            data = json.load(f)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path, exc.lineno) from exc
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read the file: {exc}", path) from exc
    if isinstance(data, dict) and "edge_mapping" in data:
        return _read_england_layout(data, path)
    if isinstance(data, dict) and "node_ids" in data:
        return _read_tennis_layout(data, path)
    raise InputError("not a PyTorch Geometric Temporal dataset: expected the key 'edge_mapping' "
                     "(england_covid layout) or 'node_ids' (twitter_tennis layout)", path)
