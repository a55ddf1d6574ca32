"""PyTorch Geometric Temporal JSON: every layout its dataset loaders read, supervised as they do.

The layout is told by the file's keys (the first row whose keys the file has); defaults are
lags / horizon / transform:

  layout                 keys                                                 defaults
  england_covid          edge_mapping {edge_index, edge_weight} per day,      8 / 1 / standardize
                         time_periods, y [T][N]
  montevideo_bus         nodes [{bus_stop, y [T], X: {y: [T]}}],              4 / 1 / standardize
                         links [{source, target, weight}] (networkx node-link)
  mtm                    edges, LABEL {frame: class}, "0".."20" {frame: xyz}  (no options)
  chickenpox             edges, FX [T][N], node_ids {name: id}                4 / 1 / none
  windmill_output        edges, weights, block [T][N]                         8 / 1 / standardize
  pedalme                edges, weights, X [T][N]                             4 / 1 / none
  wikivital_mathematics  edges, weights, time_periods, "<t>": {y [N]}         8 / 1 / standardize
  twitter_tennis         node_ids, time_periods,                              0 / 1 / log1p
                         "<t>": {edges, weights, y [N], X [N][2]}             (feature_mode encoded)

The defaults are those of PyG-Temporal's loaders (``get_dataset(lags=...)``; Tennis's
``target_offset=1``, ``np.log(1 + y)`` and ``feature_mode="encoded"``); the reader options
``lags``, ``horizon``, ``transform`` (none, log1p, standardize) and, for Tennis,
``feature_mode`` (encoded, raw) override them.

Supervision, as the loaders build it. S [T, N] is the target series after the transform
(Montevideo lags ``X.y`` and predicts ``y``; elsewhere both are the one series). With lags L >= 1
and horizon h >= 1 the store has T - L - h + 1 snapshots; snapshot i holds:

- the source's graph of step i (a static graph repeats), as England's loader pairs day i's
  mobility graph with the cases of days i..i+L-1;
- features ``features/x[i, n, k] = S[i + k, n]``, k = 0..L-1, the oldest first;
- label ``labels/y[i, n] = S[i + L - 1 + h, n]``, the value h steps after the last lag.

With h = 1 that is the loaders' ``x = S[i:i+L].T, y = S[i+L]`` for i < T - L. With L = 0
(Tennis) the features are the file's own ``X`` of step i (one-hot encoded as the loader's
``encode_features``: 5 columns of min(ceil(ln(degree + 1)), 4) and 11 of floor(10 *
transitivity)), and ``labels/y[i] = S[i + h]``; Tennis's loader keeps a last snapshot whose target
is its own step (``min(t + 1, T - 1)``), here the last h steps, which have no target, are dropped.
A snapshot's time is its source step i.

Transforms: ``log1p`` is ln(1 + S); ``standardize`` is (S - mean) / (std + 1e-10) per node over
all T steps (population std), as the loaders compute it (over the whole series, so the statistics
see the test steps, as theirs do; the 1e-10 keeps a constant series at 0 where the WikiMaths and
Montevideo loaders would divide by zero). ``lags: 0, horizon: 0, transform: none`` keeps the raw
series as the labels and no lag features.

MTM-1 is frame classification: features ``(x, y, z)`` [T, 21, 3] per frame and joint, and the
frame's class as every joint's label (int64 [T, 21]); the loader's 16-frame windows are
``train.window``. It takes none of the options.

Features and series labels are float32; edge weights are the file's (1 where it has none, as the
Chickenpox and MTM loaders set them). The store keeps one edge list per snapshot, so a static
graph is repeated in each: beyond ``MAX_REPEATED_EDGES`` edges in all (WindmillLarge's complete
graph over 17,464 hours) the file is refused. Plain or gzip.
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from dynagnn.data.types import RawGraph, SnapshotList
from dynagnn.errors import ConfigError, InputError, did_you_mean

from . import pyg_layouts as layouts
from .parse import dataset_name, open_text, require_file

log = logging.getLogger(__name__)

TRANSFORMS = ("none", "log1p", "standardize")
FEATURE_MODES = ("encoded", "raw")
STANDARDIZE_EPS = 1e-10
# WindmillLarge's 101,761 edges x 17,464 snapshots would be 1.8e9 edges, about 33 GiB.
MAX_REPEATED_EDGES = 400_000_000


@dataclass(frozen=True)
class Layout:
    """A JSON layout: the keys that tell it, its parser and its loader's defaults (lags None: no
    series to supervise)."""

    name: str
    keys: tuple[str, ...]
    read: Callable
    loader: str
    lags: int | None = None
    horizon: int = 1
    transform: str = "none"
    feature_mode: str | None = None


LAYOUTS = (
    Layout("england_covid", ("edge_mapping",), layouts.read_england, "EnglandCovidDatasetLoader",
           8, 1, "standardize"),
    Layout("montevideo_bus", ("nodes", "links"), layouts.read_montevideo,
           "MontevideoBusDatasetLoader", 4, 1, "standardize"),
    Layout("mtm", ("edges", "LABEL"), layouts.read_mtm, "MTMDatasetLoader"),
    Layout("chickenpox", ("edges", "FX"), layouts.read_chickenpox, "ChickenpoxDatasetLoader",
           4, 1, "none"),
    Layout("windmill_output", ("edges", "block"), layouts.read_windmill,
           "WindmillOutput{Large,Medium,Small}DatasetLoader", 8, 1, "standardize"),
    Layout("pedalme", ("edges", "X"), layouts.read_pedalme, "PedalMeDatasetLoader", 4, 1, "none"),
    Layout("wikivital_mathematics", ("edges", "time_periods"), layouts.read_wikimath,
           "WikiMathsDatasetLoader", 8, 1, "standardize"),
    Layout("twitter_tennis", ("node_ids", "time_periods"), layouts.read_tennis,
           "TwitterTennisDatasetLoader", 0, 1, "log1p", "encoded"),
)


def read_pyg_temporal_json(path: str | Path, *, lags: int | None = None,
                           horizon: int | None = None, transform: str | None = None,
                           feature_mode: str | None = None) -> RawGraph:
    """Read a PyTorch Geometric Temporal JSON dataset, supervised as its loader does (see the
    module docstring; None takes the layout's default).

    Returns snapshots (times 0..T'-1, weights float32), node_labels float32 [T', N] (int64 for
    MTM), node_features float32 [T', N, F] or None, node_ids (the file's names or ids, else
    0..N-1), directed (the file's say, else True).
    """
    given = {name: value for name, value in (("lags", lags), ("horizon", horizon),
                                             ("transform", transform),
                                             ("feature_mode", feature_mode)) if value is not None}
    check_options(given)
    path = require_file(path)
    data = _load(path)
    layout = detect(data, path)
    if layout.lags is None:
        if given:
            raise ConfigError(f"{path}: options {', '.join(sorted(given))} do not apply to the "
                              f"{layout.name} layout (frames with a class each, no series to lag)")
        series, classes = layout.read(data, path)
        labels = np.repeat(classes[:, None], series.num_nodes, axis=1)
        return _raw_graph(series, series.target.shape[0], series.features.astype(np.float32),
                          labels, path)
    lags, horizon, transform, feature_mode = resolve(layout, given, path)
    series = layout.read(data, path)
    if series.features is not None and feature_mode == "encoded":
        series.features = encode_tennis(series.features, path)
    count, x, y = supervise(series, lags, horizon, transform, path)
    log.info("%s: %s layout (as PyG-Temporal's %s): lags %d, horizon %d, transform %s; "
             "%d snapshots from %d steps", path.name, layout.name, layout.loader, lags, horizon,
             transform, count, series.target.shape[0])
    return _raw_graph(series, count, x, y, path)


def _check_count(name: str) -> Callable[[object], None]:
    def check(value) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 0):
            raise ConfigError(f"pyg-temporal-json option {name}: expected an integer >= 0, "
                              f"got {value!r}")
    return check


def _check_choice(name: str, allowed: tuple[str, ...]) -> Callable[[object], None]:
    def check(value) -> None:
        if value is not None and value not in allowed:
            raise ConfigError(f"pyg-temporal-json option {name}: expected one of "
                              f"{', '.join(allowed)}, got {value!r}{did_you_mean(value, allowed)}")
    return check


# Each option's value check, by name (None, the layout's default, passes every one).
OPTION_CHECKS: dict[str, Callable[[object], None]] = {
    "lags": _check_count("lags"), "horizon": _check_count("horizon"),
    "transform": _check_choice("transform", TRANSFORMS),
    "feature_mode": _check_choice("feature_mode", FEATURE_MODES),
}


def check_options(given: dict) -> None:
    """The options' values, checked before the file is read."""
    for name, value in given.items():
        OPTION_CHECKS[name](value)


def resolve(layout: Layout, given: dict, path: Path) -> tuple[int, int, str, str | None]:
    """(lags, horizon, transform, feature_mode): the options given, else the layout's defaults."""
    if "feature_mode" in given and layout.feature_mode is None:
        raise ConfigError(f"{path}: option feature_mode applies to the twitter_tennis layout; "
                          f"this file is {layout.name}")
    lags = given.get("lags", layout.lags)
    horizon = given.get("horizon", layout.horizon)
    if lags >= 1 and horizon < 1:
        raise ConfigError(f"pyg-temporal-json options lags {lags} and horizon {horizon}: the "
                          "target would be one of the lags; horizon must be >= 1 when lags >= 1")
    return (lags, horizon, given.get("transform", layout.transform),
            given.get("feature_mode", layout.feature_mode))


def detect(data, path: Path) -> Layout:
    """The first layout whose keys the file has, or an InputError naming the keys found and the
    layouts known."""
    known = "; ".join(f"{lay.name} ({', '.join(map(repr, lay.keys))})" for lay in LAYOUTS)
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object, got a {type(data).__name__}; known PyTorch "
                         f"Geometric Temporal layouts (and their keys): {known}", path)
    for layout in LAYOUTS:
        if all(k in data for k in layout.keys):
            return layout
    found = sorted(data)
    shown = ", ".join(map(repr, found[:10])) + (f" and {len(found) - 10} more" if found[10:]
                                                else "")
    raise InputError(f"not a PyTorch Geometric Temporal layout: found the keys {shown or 'none'};"
                     f" known layouts (and their keys): {known}", path)


def apply_transform(series: np.ndarray, transform: str, path: Path) -> np.ndarray:
    """The transform of a float64 [T, N] series (see the module docstring)."""
    if transform == "log1p":
        low = series <= -1
        if low.any():
            t, n = np.argwhere(low)[0]
            raise InputError(f"transform log1p needs values above -1: the series has "
                             f"{series[t, n]} at step {t}, node {n}", path)
        return np.log1p(series)
    if transform == "standardize":
        return (series - series.mean(axis=0)) / (series.std(axis=0) + STANDARDIZE_EPS)
    return series


def supervise(series: layouts.Series, lags: int, horizon: int, transform: str, path: Path
              ) -> tuple[int, np.ndarray | None, np.ndarray]:
    """(snapshot count T', features float32 [T', N, F] or None, labels float32 [T', N])."""
    target = apply_transform(series.target, transform, path)
    lagged = target if series.feature_series is None else \
        apply_transform(series.feature_series, transform, path)
    steps = target.shape[0]
    ahead = lags - 1 + horizon if lags else horizon   # label index - snapshot index
    count = steps - ahead
    if count < 1:
        raise InputError(f"{steps} time steps leave no snapshot for lags {lags} and horizon "
                         f"{horizon} (they need at least {ahead + 1})", path)
    parts = [] if series.features is None else [series.features[:count]]
    if lags:
        parts.append(sliding_window_view(lagged, lags, axis=0)[:count])  # [i, n, k] = S[i+k, n]
    x = np.concatenate(parts, axis=2).astype(np.float32) if parts else None
    return count, x, target[ahead:].astype(np.float32)


def encode_tennis(x: np.ndarray, path: Path) -> np.ndarray:
    """The Tennis loader's ``encode_features`` of X [T, N, 2] (degree, transitivity): one-hot of
    min(ceil(ln(degree + 1)), 4) in 5 columns and of floor(10 * transitivity) in 11: [T, N, 16]."""
    with np.errstate(invalid="ignore", divide="ignore"):
        codes = (np.minimum(np.ceil(np.log(x[..., 0] + 1.0)), 4), np.floor(x[..., 1] * 10))
    for col, (name, code, top) in enumerate(zip(("degree", "transitivity"), codes, (4, 10))):
        bad = ~((code >= 0) & (code <= top))
        if bad.any():
            t, n = np.argwhere(bad)[0]
            raise InputError(f"{t}.X[{n}]: {name} {x[t, n, col]} is outside what the loader "
                             "one-hot encodes (degree >= 0, transitivity in [0, 1]); "
                             "use feature_mode: raw", path)
    out = np.zeros(x.shape[:2] + (16,), dtype=np.float32)
    np.put_along_axis(out, codes[0].astype(np.int64)[..., None], 1.0, axis=2)
    np.put_along_axis(out, 5 + codes[1].astype(np.int64)[..., None], 1.0, axis=2)
    return out


def _raw_graph(series: layouts.Series, count: int, x, y, path: Path) -> RawGraph:
    """The first ``count`` steps' graphs (a static graph repeated) with features and labels."""
    graphs = [(r, c, w.astype(np.float32)) for r, c, w in series.graphs]
    if series.static:
        total = count * graphs[0][0].shape[0]
        if total > MAX_REPEATED_EDGES:
            raise InputError(f"the static graph's {graphs[0][0].shape[0]} edges in each of "
                             f"{count} snapshots make {total} edges, more than this store's "
                             f"{MAX_REPEATED_EDGES} (it keeps one edge list per snapshot)", path)
        graphs = graphs * count
    rows, cols, weights = (list(part) for part in zip(*graphs[:count]))
    snapshots = SnapshotList(rows=rows, cols=cols, weights=weights,
                             times=np.arange(count, dtype=np.int64))
    return RawGraph(num_nodes=series.num_nodes, node_ids=series.node_ids, snapshots=snapshots,
                    node_labels=y, node_features=x, time_unit=series.time_unit,
                    directed=series.directed, sources=[path], name=dataset_name(path))


def _load(path: Path):
    try:
        with open_text(path) as f:
            return json.load(f)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path, exc.lineno) from exc
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read the file: {exc}", path) from exc
