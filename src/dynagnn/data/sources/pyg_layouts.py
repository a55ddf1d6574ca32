"""The JSON layouts of PyTorch Geometric Temporal's datasets, each parsed as its loader reads it.

One parser per layout; each returns a :class:`Series`: the graph (one per time step, or one static
graph), the node series the loader builds its targets (and lag features) from, and any node
features the file gives. Supervision (lags, horizon, transform) is :mod:`.pyg_temporal`'s.
Values are checked as they are read: ids inside 0..N-1, one weight per edge, one value per node
and step, every number finite; each error names the key and index.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dynagnn.errors import InputError

Edges = tuple[np.ndarray, np.ndarray, np.ndarray]   # row, col int64 [nnz], weight float64 [nnz]


@dataclass
class Series:
    """What a layout holds, before supervision.

    graphs: one (row, col, weight) per time step [T], or a single one for a static graph.
    target: float64 [T, N], the series the loader predicts. feature_series: float64 [T, N] the
    loader lags into features when it differs from the target (Montevideo's ``X.y``), else None.
    features: float64 [T, N, F], the file's own node features (Tennis's ``X``), or None.
    node_ids: [N] the file's node names or ids (int64 or str objects).
    """

    graphs: list[Edges]
    target: np.ndarray
    node_ids: np.ndarray
    time_unit: str
    feature_series: np.ndarray | None = None
    features: np.ndarray | None = None
    directed: bool = True

    @property
    def num_nodes(self) -> int:
        return int(self.target.shape[1])

    @property
    def static(self) -> bool:
        return len(self.graphs) == 1


# --------------------------------------------------------------------------------------------
# JSON values


def key(data, name: str, path: Path, where: str = ""):
    if not isinstance(data, dict) or name not in data:
        raise InputError(f"missing key {where + name!r}", path)
    return data[name]


def array(value, name: str, path: Path, dtype, ndim: int, what: str) -> np.ndarray:
    """``value`` as a numpy array of ``ndim`` dimensions with finite numbers, or an InputError
    naming ``name`` (and the index of the first non-finite value)."""
    try:
        out = np.asarray(value, dtype=dtype)
    except (ValueError, TypeError) as exc:
        raise InputError(f"{name}: expected {what}", path) from exc
    if out.ndim != ndim:
        raise InputError(f"{name}: expected {what}, got an array of shape {out.shape}", path)
    if out.dtype.kind == "f" and not np.isfinite(out).all():
        bad = np.argwhere(~np.isfinite(out))[0]
        index = "".join(f"[{int(i)}]" for i in bad)
        raise InputError(f"{name}{index}: {out[tuple(bad)]} is not a finite number", path)
    if out.dtype.kind not in "iuf":
        raise InputError(f"{name}: expected {what}", path)
    return out


def edges(value, name: str, path: Path, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) int64 [nnz] of a ``[[u, v], ...]`` list, ids checked against 0..N-1."""
    what = "a list of [u, v] integer pairs"
    if isinstance(value, list) and not value:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    pairs = array(value, name, path, None, 2, what)
    if pairs.shape[1] != 2 or pairs.dtype.kind not in "iu":
        raise InputError(f"{name}: expected {what}", path)
    bad = pairs[(pairs < 0) | (pairs >= num_nodes)]
    if bad.size:
        raise InputError(f"{name}: node id {int(bad[0])} outside 0..{num_nodes - 1}", path)
    return pairs[:, 0].astype(np.int64), pairs[:, 1].astype(np.int64)


def weights(value, name: str, path: Path, nnz: int) -> np.ndarray:
    w = array(value, name, path, np.float64, 1, f"a list of {nnz} numbers")
    if w.shape[0] != nnz:
        raise InputError(f"{name}: expected {nnz} weights (one per edge), got {w.shape[0]}", path)
    return w


def weighted_edges(data: dict, path: Path, num_nodes: int, weight_key: str | None) -> Edges:
    """The static graph of ``edges`` (and ``weight_key``; None: every weight 1, as the
    Chickenpox loader sets them)."""
    row, col = edges(key(data, "edges", path), "edges", path, num_nodes)
    w = np.ones(row.shape[0]) if weight_key is None else \
        weights(key(data, weight_key, path), weight_key, path, row.shape[0])
    return row, col, w


def periods(data: dict, path: Path) -> int:
    t = key(data, "time_periods", path)
    if not isinstance(t, int) or isinstance(t, bool) or t < 1:
        raise InputError(f"time_periods: expected a positive integer, got {t!r}", path)
    return t


def matrix(data: dict, name: str, path: Path) -> np.ndarray:
    """A ``[T][N]`` series under ``name``, float64."""
    return array(key(data, name, path), name, path, np.float64, 2, "a [T][N] list of numbers")


def named_ids(names, num_nodes: int, path: Path, name: str = "node_ids") -> np.ndarray:
    """The names of a ``{name: id}`` mapping onto 0..N-1, by id (str objects [N])."""
    ids = [i for i in names.values() if isinstance(i, int)] if isinstance(names, dict) else []
    if len(ids) != len(names) or sorted(ids) != list(range(num_nodes)):
        raise InputError(f"{name}: expected a {{name: id}} mapping onto the ids 0..{num_nodes - 1}",
                         path)
    out = np.empty(num_nodes, dtype=object)
    for label, i in names.items():
        out[i] = label
    return out


def dense(num_nodes: int) -> np.ndarray:
    return np.arange(num_nodes, dtype=np.int64)


def step_keys(data: dict, count: int, path: Path, where: str = "") -> list[str]:
    """``"0"``..``"<count-1>"``, each checked present (in numeric order: "10" after "9")."""
    for t in range(count):
        key(data, str(t), path, where)
    return [str(t) for t in range(count)]


# --------------------------------------------------------------------------------------------
# The layouts


def read_england(data: dict, path: Path) -> Series:
    """EnglandCovidDatasetLoader: ``edge_mapping.edge_index["<day>"]`` [[u, v], ...],
    ``edge_mapping.edge_weight["<day>"]``, ``time_periods`` T, ``y`` [T][N] daily cases."""
    mapping = key(data, "edge_mapping", path)
    index = key(mapping, "edge_index", path, "edge_mapping.")
    weight = key(mapping, "edge_weight", path, "edge_mapping.")
    t = periods(data, path)
    y = matrix(data, "y", path)
    if not isinstance(index, dict) or len(index) != t or y.shape[0] != t:
        got = len(index) if isinstance(index, dict) else 0
        raise InputError(f"expected time_periods = {t} days keyed '0'..'{t - 1}' and as many rows "
                         f"of y, got {got} days and {y.shape[0]} rows", path)
    graphs = []
    for day in step_keys(index, t, path, "edge_mapping.edge_index."):
        row, col = edges(index[day], f"edge_mapping.edge_index[{day!r}]", path, y.shape[1])
        w = weights(key(weight, day, path, "edge_mapping.edge_weight."),
                    f"edge_mapping.edge_weight[{day!r}]", path, row.shape[0])
        graphs.append((row, col, w))
    return Series(graphs, y, dense(y.shape[1]), "day")


def read_tennis(data: dict, path: Path) -> Series:
    """TwitterTennisDatasetLoader: ``node_ids`` {name: id}, ``time_periods`` T and per snapshot
    ``"<t>"``: ``edges``, ``weights``, ``y`` [N] (mentions), ``X`` [N][2] (degree, transitivity)."""
    names = key(data, "node_ids", path)
    n = len(names) if isinstance(names, dict) else 0
    node_ids = named_ids(names, n, path)
    graphs, labels, features = [], [], []
    for t in step_keys(data, periods(data, path), path):
        snap = data[t]
        row, col = edges(key(snap, "edges", path, f"{t}."), f"{t}.edges", path, n)
        w = weights(key(snap, "weights", path, f"{t}."), f"{t}.weights", path, row.shape[0])
        graphs.append((row, col, w))
        y = array(key(snap, "y", path, f"{t}."), f"{t}.y", path, np.float64, 1,
                  f"a list of {n} numbers")
        x = array(key(snap, "X", path, f"{t}."), f"{t}.X", path, np.float64, 2,
                  f"a [{n}][2] list of numbers")
        if y.shape[0] != n or x.shape != (n, 2):
            raise InputError(f"{t}: expected y of {n} values and X of shape [{n}, 2], got "
                             f"{y.shape[0]} and {list(x.shape)}", path)
        labels.append(y)
        features.append(x)
    return Series(graphs, np.stack(labels), node_ids, "index", features=np.stack(features))


def _static(data: dict, path: Path, target: np.ndarray, weight_key: str | None,
            time_unit: str) -> Series:
    """A static graph with a [T][N] series; ``node_ids`` names the nodes where the file has it."""
    n = target.shape[1]
    ids = named_ids(data["node_ids"], n, path) if "node_ids" in data else dense(n)
    return Series([weighted_edges(data, path, n, weight_key)], target, ids, time_unit)


def read_chickenpox(data: dict, path: Path) -> Series:
    """ChickenpoxDatasetLoader: ``edges`` [[u, v], ...] (every weight 1), ``node_ids`` {county:
    id}, ``FX`` [T][N] weekly cases (already standardised in the file)."""
    return _static(data, path, matrix(data, "FX", path), None, "week")


def read_pedalme(data: dict, path: Path) -> Series:
    """PedalMeDatasetLoader: ``edges``, ``weights`` [E], ``X`` [T][N] weekly deliveries."""
    return _static(data, path, matrix(data, "X", path), "weights", "week")


def read_windmill(data: dict, path: Path) -> Series:
    """WindmillOutput{Large,Medium,Small}DatasetLoader: ``edges``, ``weights`` [E], ``block``
    [T][N] hourly energy output."""
    return _static(data, path, matrix(data, "block", path), "weights", "hour")


def read_wikimath(data: dict, path: Path) -> Series:
    """WikiMathsDatasetLoader: ``edges``, ``weights`` [E], ``time_periods`` T and ``"<t>".y``
    [N] daily visits."""
    rows = [array(key(data[t], "y", path, f"{t}."), f"{t}.y", path, np.float64, 1,
                  "a list of numbers") for t in step_keys(data, periods(data, path), path)]
    if len({r.shape[0] for r in rows}) != 1:
        raise InputError(f"'<t>'.y: expected as many values at every step, got lengths "
                         f"{sorted({r.shape[0] for r in rows})}", path)
    return _static(data, path, np.stack(rows), "weights", "day")


def read_montevideo(data: dict, path: Path) -> Series:
    """MontevideoBusDatasetLoader (a networkx node-link graph): ``nodes`` [{bus_stop, y [T],
    X: {y: [T]}}], ``links`` [{source, target, weight}]. Links name nodes by ``bus_stop`` (the
    loader's key; networkx's ``id`` where a node has no ``bus_stop``). Target ``y``; the loader's
    lag features come from ``X.y``."""
    nodes, links = key(data, "nodes", path), key(data, "links", path)
    if not isinstance(nodes, list) or not nodes or not isinstance(links, list):
        raise InputError("nodes, links: expected a non-empty list of nodes and a list of links",
                         path)
    ids, target, feature = [], [], []
    for i, node in enumerate(nodes):
        if not isinstance(node, dict) or not ("bus_stop" in node or "id" in node):
            raise InputError(f"nodes[{i}]: expected an object with a 'bus_stop' (or 'id')", path)
        ids.append(node["bus_stop"] if "bus_stop" in node else node["id"])
        target.append(array(key(node, "y", path, f"nodes[{i}]."), f"nodes[{i}].y", path,
                            np.float64, 1, "a list of numbers"))
        x = key(key(node, "X", path, f"nodes[{i}]."), "y", path, f"nodes[{i}].X.")
        feature.append(array(x, f"nodes[{i}].X.y", path, np.float64, 1, "a list of numbers"))
    lengths = {a.shape[0] for a in target + feature}
    if len(lengths) != 1:
        raise InputError(f"nodes[*].y, nodes[*].X.y: expected series of one length, got lengths "
                         f"{sorted(lengths)}", path)
    where = {}
    for i, node_id in enumerate(ids):
        if not isinstance(node_id, (int, str)) or isinstance(node_id, bool) or node_id in where:
            raise InputError(f"nodes[{i}]: node id {node_id!r} is not a new integer or string",
                             path)
        where[node_id] = i
    row, col, w = [], [], []
    for i, link in enumerate(links):
        for end, out in (("source", row), ("target", col)):
            node_id = key(link, end, path, f"links[{i}].")
            if isinstance(node_id, bool) or not isinstance(node_id, (int, str)) \
                    or node_id not in where:
                raise InputError(f"links[{i}].{end}: no node {node_id!r}", path)
            out.append(where[node_id])
        w.append(key(link, "weight", path, f"links[{i}]."))
    w = array(w, "links[*].weight", path, np.float64, 1, "a number per link") if w \
        else np.empty(0)
    directed = data.get("directed", True)
    graph = (np.asarray(row, np.int64), np.asarray(col, np.int64), w)
    node_ids = np.asarray(ids, dtype=np.int64 if all(isinstance(i, int) for i in ids) else object)
    return Series([graph], np.stack(target, axis=1), node_ids, "hour",
                  feature_series=np.stack(feature, axis=1), directed=directed is not False)


def read_mtm(data: dict, path: Path) -> tuple[Series, np.ndarray]:
    """MTMDatasetLoader: ``edges`` (the hand's bones, every weight 1), ``"0"``..``"20"`` one per
    joint {frame: "(x, y, z)"}, ``LABEL`` {frame: class}; frames in the file's order, as the
    loader takes them. Returns the series (features [T, 21, 3], a zero target) and the classes
    int64 [T]."""
    label = key(data, "LABEL", path)
    classes = array(list(label.values()) if isinstance(label, dict) else None, "LABEL", path,
                    None, 1, "a {frame: class} mapping of integers")
    if classes.dtype.kind not in "iu" or (classes < 0).any():
        raise InputError("LABEL: expected a {frame: class} mapping of integers >= 0", path)
    joints = sorted(int(k) for k in data if k.isdigit())
    if joints != list(range(len(joints))) or not joints:
        raise InputError(f"expected joints keyed '0'..'<J-1>', got {[str(j) for j in joints]}",
                         path)
    xyz = np.empty((classes.shape[0], len(joints), 3))
    for j in joints:
        frames = data[str(j)]
        if not isinstance(frames, dict) or len(frames) != classes.shape[0]:
            raise InputError(f"{j}: expected a {{frame: '(x, y, z)'}} mapping of "
                             f"{classes.shape[0]} frames (as LABEL)", path)
        for t, (frame, value) in enumerate(frames.items()):
            xyz[t, j] = _triple(value, f"{j}[{frame!r}]", path)
    graph = weighted_edges(data, path, len(joints), None)
    series = Series([graph], np.zeros(xyz.shape[:2]), dense(len(joints)), "index", features=xyz)
    return series, classes.astype(np.int64)


def _triple(value, name: str, path: Path) -> np.ndarray:
    """The (x, y, z) of an ``"(x, y, z)"`` string."""
    try:
        out = np.array([float(v) for v in str(value).strip("()").split(",")])
    except ValueError:
        out = np.empty(0)
    if not isinstance(value, str) or out.shape != (3,) or not np.isfinite(out).all():
        raise InputError(f"{name}: expected '(x, y, z)' of three finite numbers, got {value!r}",
                         path)
    return out
