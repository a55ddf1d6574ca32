"""TGL's dataset folder (github.com/amazon-research/tgl, its README's "Dataset" section).

TGL reads ``DATA/<NAME>/``:

- ``edges.csv``: pandas' ``to_csv`` of the columns ``src, dst, time, int_roll, ext_roll`` with its
  unnamed index column first (the edge's index, from 0); node ids from 0 (a bipartite dataset's
  destinations already past its sources), sorted by time; ``ext_roll`` the split: 0 training,
  1 validation, 2 test edges (``int_roll`` is TGL's own and not read);
- ``edge_features.pt`` (optional): ``torch.save`` of a tensor [E, d_e], a row per edge of edges.csv;
- ``node_features.pt`` (optional): a tensor [N, d_n], a row per node id;
- ``labels.csv`` (optional, node classification): not read.

The reader keeps TGL's ids (dense already: node ``k`` is dense id ``k``; N is the larger of the
highest id + 1 and the node features' rows), the times as int64 when every one is a whole number
(``5`` or ``5.0``, :func:`.parse.time_column`, as the TGB reader's) and float64 otherwise, ``ext_roll``
as the events' split, and the features read with ``torch.load(weights_only=True)``, which loads
tensors and refuses the pickled code a ``.pt`` file could otherwise run.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dynagnn.data.types import RawGraph
from dynagnn.errors import InputError, one_line

from .parse import event_stream, integer_column, time_column

COLUMNS = ("src", "dst", "time", "ext_roll")


def read_tgl(path: str | Path) -> RawGraph:
    """Read TGL's ``DATA/<NAME>/`` folder or its ``edges.csv`` (module docstring): events src, dst
    int64 [E], t int64 or float64 [E], split int8 [E] (``ext_roll``), features float32 [E, d_e] or
    None; node_features float32 [N, d_n] or None; node_ids int64 [N] (0..N-1). InputError, in one line
    naming the file, for a missing file, column or row out of place."""
    path = Path(path)
    edges = path / "edges.csv" if path.is_dir() else path
    if not edges.is_file():
        raise InputError("edges.csv is missing: expected TGL's dataset folder DATA/<NAME>/ holding edges.csv "
                         "(columns ,src,dst,time,int_roll,ext_roll), or the path of that file", path)
    folder = edges.parent
    try:
        df = pd.read_csv(edges)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise InputError(f"not a CSV pandas reads ({one_line(exc)[:160]})", edges) from None
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise InputError(f"expected TGL's columns src, dst, time, int_roll, ext_roll (after the unnamed index); "
                         f"missing {', '.join(missing)}", edges)
    if len(df) == 0:
        raise InputError("no edges: expected one edge a row", edges)
    src, dst, roll = (integer_column(df[c], f"column {c}", edges) for c in ("src", "dst", "ext_roll"))
    low = min(int(src.min()), int(dst.min()))
    if low < 0:
        raise InputError(f"node id {low}: TGL's node ids start at 0", edges)
    bad = np.flatnonzero((roll < 0) | (roll > 2))
    if bad.size:
        raise InputError(f"ext_roll {int(roll[bad[0]])} at data row {int(bad[0]) + 1}: expected 0 (training), "
                         "1 (validation) or 2 (test)", edges)
    t = time_column(df["time"], "column time", edges)
    edge_feat = _tensor(folder / "edge_features.pt", "edge features [E, d_e]")
    if edge_feat is not None and edge_feat.shape[0] != len(df):
        raise InputError(f"{edge_feat.shape[0]} rows, but {edges.name} has {len(df)} edges: TGL's edge features "
                         "have a row per edge", folder / "edge_features.pt")
    node_feat = _tensor(folder / "node_features.pt", "node features [N, d_n]")
    n = max(int(src.max()), int(dst.max())) + 1
    if node_feat is not None:
        if node_feat.shape[0] < n:
            raise InputError(f"{node_feat.shape[0]} rows, but {edges.name} names node {n - 1}: TGL's node features "
                             "have a row per node id", folder / "node_features.pt")
        n = node_feat.shape[0]
    events = event_stream(src, dst, t, features=edge_feat)
    events.split = (roll if events.order is None else roll[events.order]).astype(np.int8)
    sources = [edges] + [f for f in (folder / "edge_features.pt", folder / "node_features.pt") if f.is_file()]
    return RawGraph(num_nodes=n, node_ids=np.arange(n, dtype=np.int64), events=events, node_features=node_feat,
                    time_unit="s", directed=True, sources=sources, name=folder.name)


def _tensor(path: Path, what: str) -> np.ndarray | None:
    """A 2-D float32 array of a TGL ``.pt`` tensor file, None when there is none."""
    if not path.is_file():
        return None
    import torch   # only for TGL's .pt files: the data layer does not need torch otherwise

    try:
        x = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:   # torch raises several kinds for a file it refuses or cannot read
        raise InputError(f"not a tensor file torch.load(weights_only=True) reads ({one_line(exc)[:160]}); TGL "
                         f"writes its {what} with torch.save", path) from None
    if not isinstance(x, torch.Tensor) or x.ndim != 2 or x.is_complex():
        shape = list(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise InputError(f"expected TGL's {what}: one 2-D tensor, got {shape}", path)
    arr = x.detach().to(torch.float32).numpy()
    if not np.isfinite(arr).all():
        raise InputError(f"the {what} hold a NaN or infinite value (row {int(np.argwhere(~np.isfinite(arr))[0, 0])})",
                         path)
    return arr
