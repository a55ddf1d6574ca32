"""DyGLib's processed format (TGN's, which DyGLib and its users' datasets follow).

``preprocess_data.py`` writes, in ``processed_data/<name>/``:

- ``ml_<name>.csv``: pandas' ``to_csv`` of the columns ``u, i, ts, label, idx`` with its unnamed
  index column first; node ids start at 1 (0 pads), a bipartite dataset's items shifted past its
  users so that both share one id space; ``idx`` (1..E) is the event's row of the edge features;
- ``ml_<name>.npy``: edge features [E + 1, d_e], row 0 the padding's zeros;
- ``ml_<name>_node.npy``: node features [N + 1, d_n], row 0 the padding's.

The reader reads the three together (DyGLib's ``get_link_prediction_data`` does): dense id ``k - 1``
for DyGLib's node ``k``, the original ids kept as ``node_ids``, the events' features their rows of
``ml_<name>.npy``, the node features rows 1..N of ``ml_<name>_node.npy``, ``label`` the events' state
labels. Times stay in the file's unit (seconds for DyGLib's datasets).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dynagnn.data.types import RawGraph
from dynagnn.errors import InputError

from .parse import event_stream

COLUMNS = ("u", "i", "ts", "label", "idx")


def _load(path: Path, what: str) -> np.ndarray:
    try:
        arr = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"not a numpy array file ({' '.join(str(exc).split())[:120]}); DyGLib writes {what} "
                         "with np.save", path) from None
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.dtype.kind not in "fiu":
        raise InputError(f"expected {what}: a 2-D numeric array with the padding row 0 first, got shape "
                         f"{list(arr.shape)} of {arr.dtype}", path)
    if not np.isfinite(arr).all():
        raise InputError(f"{what} holds a NaN or infinite value (row {int(np.argwhere(~np.isfinite(arr))[0, 0])})", path)
    return arr.astype(np.float32)


def read_dyglib(path: str | Path) -> RawGraph:
    """Read DyGLib's ``processed_data/<name>/`` folder (module docstring): events src, dst int64 [E]
    (DyGLib's ids minus 1), t float64 [E], label int64 [E], features float32 [E, d_e]; node_features
    float32 [N, d_n]; node_ids int64 [N] (DyGLib's 1..N). InputError, in one line naming the file,
    for a missing file, a column or id out of place, or features that do not cover the ids."""
    folder = Path(path)
    if not folder.is_dir():
        raise InputError("expected DyGLib's folder processed_data/<name>/ (holding ml_<name>.csv, ml_<name>.npy and "
                         "ml_<name>_node.npy)", folder)
    name = folder.name
    csv, edges_npy, nodes_npy = (folder / f"ml_{name}{end}" for end in (".csv", ".npy", "_node.npy"))
    for f in (csv, edges_npy, nodes_npy):
        if not f.is_file():
            raise InputError(f"{f.name} is missing: DyGLib's preprocess_data.py writes ml_{name}.csv, ml_{name}.npy "
                             f"and ml_{name}_node.npy together into the dataset's folder", folder)
    try:
        df = pd.read_csv(csv)
    except (OSError, ValueError) as exc:
        raise InputError(f"not a CSV pandas reads ({' '.join(str(exc).split())[:120]})", csv) from None
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"expected DyGLib's columns {', '.join(COLUMNS)} (after the unnamed index); missing "
                         f"{', '.join(missing)}", csv)
    for c in ("u", "i", "label", "idx"):
        if not pd.api.types.is_integer_dtype(df[c]):
            bad = pd.to_numeric(df[c], errors="coerce")
            row = int(np.flatnonzero(bad.isna() | (bad != bad.round()))[0]) if len(df) else 0
            raise InputError(f"column {c} holds a non-integer value at data row {row + 1} ({df[c].iloc[row]!r})", csv)
    t = pd.to_numeric(df["ts"], errors="coerce").to_numpy(np.float64)
    if not np.isfinite(t).all():
        raise InputError(f"column ts holds a non-numeric or infinite value at data row "
                         f"{int(np.flatnonzero(~np.isfinite(t))[0]) + 1}", csv)
    u, i = df["u"].to_numpy(np.int64), df["i"].to_numpy(np.int64)
    nodes = _load(nodes_npy, "the node features [N + 1, d_n]")
    edges = _load(edges_npy, "the edge features [E + 1, d_e]")
    n = nodes.shape[0] - 1
    low = min(int(u.min()), int(i.min())) if len(df) else 1
    high = max(int(u.max()), int(i.max())) if len(df) else 0
    if low < 1:
        raise InputError(f"node id {low}: DyGLib's ids start at 1 (0 is the padding row)", csv)
    if high > n:
        raise InputError(f"node id {high} has no row in {nodes_npy.name}, whose {n + 1} rows cover ids 0..{n}", csv)
    idx = df["idx"].to_numpy(np.int64)
    if len(df) and (idx.min() < 1 or idx.max() >= edges.shape[0]):
        bad = int(idx.min()) if idx.min() < 1 else int(idx.max())
        raise InputError(f"idx {bad} has no row in {edges_npy.name} ({edges.shape[0]} rows, 0 the padding's)", csv)
    events = event_stream(u - 1, i - 1, t, label=df["label"].to_numpy(np.int64),
                          features=edges[idx] if edges.shape[1] else None)
    return RawGraph(num_nodes=n, node_ids=np.arange(1, n + 1, dtype=np.int64), events=events,
                    node_features=nodes[1:] if nodes.shape[1] else None, time_unit="s", directed=True,
                    sources=[csv, edges_npy, nodes_npy], name=name)
