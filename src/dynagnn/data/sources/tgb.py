"""TGB's link property prediction datasets (tgbl-wiki, tgbl-review, ...): the edge list, TGB's split
and TGB's pre-generated evaluation negatives.

What TGB's ``LinkPropPredDataset`` (tgb/linkproppred/dataset.py) reads from a dataset's folder
(``tgb/datasets/tgbl_wiki/``):

- ``<name>_edgelist_v<k>.csv`` (``<name>_edgelist.csv`` at version 1): a header row, then one edge a
  row, in one of two layouts (tgb/utils/pre_process.py):

  - source first (``load_edgelist_wiki``: tgbl-wiki, -subreddit, -lastfm, -uci, -enron):
    ``src,dst,t,label,features...`` with integer ids (tgbl-wiki's header is JODIE's,
    ``user_id,item_id,timestamp,state_label,comma_separated_list_of_features``). TGB's node ids are
    the sources as they are and the destinations shifted past them, ``dst + max(src) + 1``;
  - time first (``csv_to_pd_data_sc`` and ``_rc``: tgbl-review, -coin, -comment, -flight), told by a
    first header field ``ts``, ``time``, ``timestamp``, ``day`` or ``date``: ``t,src,dst,...`` with
    ids read as strings; TGB's node ids number them 0, 1, ... in order of first appearance (a row's
    src before its dst).

  TGB casts the times to integers (``timestamps.astype(int)``).
- the split (``generate_splits``): ``val_time, test_time = np.quantile(t, [0.70, 0.85])`` of those
  integer times; train ``t <= val_time``, validation ``val_time < t <= test_time``, test the rest.
- ``<name>_val_ns_v<k>.pkl`` and ``<name>_test_ns_v<k>.pkl`` (``negative_sampler.py``; version 1
  without ``_v<k>``), ``pickle.dump`` of a dict ``{(src, dst, t): negative destinations}`` in TGB's
  node ids and integer times, one entry per validation (test) edge, identical edges sharing one.
  :mod:`.tgb_negatives` reads them (only containers, numbers and numpy arrays load).

The reader maps TGB's node ids to dense ids with :func:`~dynagnn.data.ids.dense_ids` (``node_ids``:
TGB's ids in the source-first layout, the file's id strings in the time-first one), and the
negatives' destinations with the same map. Times are int64 when every one is a whole number (``5``
or ``5.0``, :func:`.parse.time_column`, as the TGL reader's), else float64; ``label`` is a 4th column
whose header names a label; ``features`` the other numeric columns (a column of text, as tgbl-flight's
call signs, is left out and logged); ``split`` TGB's.
"""

from __future__ import annotations

import csv as csvlib
import logging
import re
from pathlib import Path

import numpy as np
import pandas as pd

from dynagnn.data.ids import dense_ids
from dynagnn.data.types import RawGraph
from dynagnn.errors import InputError, one_line

from .parse import event_stream, integer_column, time_column
from .tgb_negatives import read_negatives

log = logging.getLogger(__name__)

EDGELIST = re.compile(r"(?P<name>.+)_edgelist(?P<version>_v\d+)?\.csv")
TIME_FIRST = ("ts", "time", "timestamp", "day", "date")
QUANTILES = (0.70, 0.85)  # TGB's generate_splits: val_ratio = test_ratio = 0.15
SOURCE_FIRST_IDS = ("TGB's source-first layout has integer node ids (a first header field "
                    f"{', '.join(TIME_FIRST[:-1])} or {TIME_FIRST[-1]} marks the time-first layout, whose ids may "
                    "be any text)")


def read_tgb(path: str | Path) -> RawGraph:
    """Read TGB's dataset folder (or its edge list; module docstring): events src, dst int64 [E],
    t int64 or float64 [E], label int64 [E] or None, features float32 [E, F] or None, split int8 [E]
    (TGB's), negatives (event int64 [M], dst int64 [M, K]) when the folder holds the val and test
    negatives; node_ids [N]. InputError, in one line naming the file, for a file missing or out of
    place, and for negatives that do not match the edge list."""
    csv, name, version = _edge_list(Path(path))
    header = _header(csv)
    time_first = header[0].strip().lower() in TIME_FIRST
    t_col, s_col, d_col = (0, 1, 2) if time_first else (2, 0, 1)
    df = _rows(csv, dtype={s_col: str, d_col: str} if time_first else None)
    t = time_column(df[t_col], "the time column", csv)
    tgb_t = t if t.dtype.kind == "i" else np.trunc(t).astype(np.int64)  # TGB's timestamps.astype(int)
    if time_first:   # ids as strings, numbered by first appearance
        ids = [_text_ids(df[c], c, csv) for c in (s_col, d_col)]
        (src, dst), node_ids = dense_ids(*ids)
        codes, first_seen = pd.factorize(np.stack(ids, axis=1).ravel())
        tgb_src, tgb_dst = codes[0::2].astype(np.int64), codes[1::2].astype(np.int64)
        tgb_dense = np.empty(len(first_seen), dtype=np.int64)
        tgb_dense[codes] = np.stack([src, dst], axis=1).ravel()
        tgb_ids = np.arange(len(first_seen), dtype=np.int64)
    else:   # destinations shifted past the sources
        tgb_src, raw_dst = (integer_column(df[c], f"column {c + 1}", csv, SOURCE_FIRST_IDS) for c in (s_col, d_col))
        tgb_dst = raw_dst + int(tgb_src.max()) + 1
        (src, dst), node_ids = dense_ids(tgb_src, tgb_dst)
        tgb_ids, tgb_dense = node_ids, np.arange(node_ids.shape[0], dtype=np.int64)
    label, features = _label_features(df, header, csv)
    events = event_stream(src, dst, t, label=label, features=features)
    split = tgb_split(tgb_t)
    pos = np.arange(len(events), dtype=np.int64)   # file row -> event index
    if events.order is not None:
        pos[events.order] = np.arange(len(events), dtype=np.int64)
        split = split[events.order]
    events.split = split
    sources = [csv]
    found = {s: csv.parent / f"{name}_{s}_ns{version}.pkl" for s in ("val", "test")}
    present = [f for f in found.values() if f.is_file()]
    if len(present) == 1:
        missing = next(f for f in found.values() if not f.is_file())
        raise InputError(f"{missing.name} is missing: TGB ships the validation and test negatives together; "
                         f"put it beside {present[0].name}, or remove both to draw random negatives", csv.parent)
    if present:
        events.negatives = read_negatives(found, csv, (tgb_src, tgb_dst, tgb_t), pos, events.split,
                                          (tgb_ids, tgb_dense))
        sources += present
    return RawGraph(num_nodes=int(node_ids.shape[0]), node_ids=node_ids, events=events, time_unit="s",
                    directed=True, sources=sources, name=name)


def tgb_split(t: np.ndarray) -> np.ndarray:
    """TGB's split of integer times ``t``, int8 [E]: 0 up to the 0.70 quantile, 1 up to the 0.85, 2 after."""
    val_time, test_time = np.quantile(t, QUANTILES)
    return ((t > val_time).astype(np.int8) + (t > test_time).astype(np.int8)).astype(np.int8)


def _edge_list(path: Path) -> tuple[Path, str, str]:
    """(the edge list, the dataset's name, its version suffix "" or "_v<k>")."""
    if path.is_file():
        match = EDGELIST.fullmatch(path.name)
        if not match:
            raise InputError("expected TGB's edge list <name>_edgelist_v<k>.csv (or <name>_edgelist.csv), or the "
                             "dataset's folder holding it", path)
        return path, match["name"], match["version"] or ""
    if not path.is_dir():
        raise InputError("not found: expected TGB's dataset folder (tgb/datasets/tgbl_wiki/, holding "
                         "tgbl-wiki_edgelist_v2.csv and its negatives)", path)
    lists = sorted(f for f in path.iterdir() if EDGELIST.fullmatch(f.name) and f.is_file())
    if not lists:
        raise InputError("no <name>_edgelist_v<k>.csv (or <name>_edgelist.csv) here: expected TGB's dataset folder "
                         "(tgb/datasets/tgbl_wiki/ holds tgbl-wiki_edgelist_v2.csv)", path)
    if len(lists) > 1:
        raise InputError(f"{len(lists)} edge lists here ({', '.join(f.name for f in lists)}): give the path of "
                         "the one to read", path)
    return _edge_list(lists[0])


def _header(csv: Path) -> list[str]:
    try:
        with open(csv, newline="", encoding="utf-8", errors="replace") as f:
            header = next(csvlib.reader(f), None)
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or one_line(exc)}", csv) from None
    if not header or len(header) < 3:
        raise InputError(f"expected a header row naming at least 3 columns (src,dst,t or t,src,dst), got "
                         f"{','.join(header or [])!r}", csv, 1)
    return header


def _rows(csv: Path, dtype) -> pd.DataFrame:
    """The data rows as TGB's loader reads them: ``pd.read_csv(fname, skiprows=1, header=None)``."""
    try:
        df = pd.read_csv(csv, skiprows=1, header=None, dtype=dtype, low_memory=False)
    except pd.errors.EmptyDataError:
        df = pd.DataFrame()
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise InputError(f"not a CSV TGB's loader reads ({one_line(exc)[:160]})", csv) from None
    if len(df) == 0 or df.shape[1] < 3:
        raise InputError("no data rows of at least 3 columns after the header: expected one edge a row", csv)
    return df


def _bad_row(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _text_ids(col: pd.Series, c: int, csv: Path) -> np.ndarray:
    if col.isna().any():
        row = _bad_row(col.isna().to_numpy())
        raise InputError(f"column {c + 1} is empty at data row {row + 1}: expected a node id", csv)
    return col.to_numpy(dtype=object)


def _label_features(df: pd.DataFrame, header: list[str], csv: Path) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(label int64 [E] from a 4th column whose header names a label, or None; float32 [E, F] of the
    other columns after the first three that are numbers, or None)."""
    label = None
    rest = list(df.columns[3:])
    if rest and len(header) > 3 and "label" in header[3].lower():
        label, rest = integer_column(df[rest[0]], f"the label column ({header[3]})", csv), rest[1:]
    text = [c for c in rest if not pd.api.types.is_numeric_dtype(df[c])]
    if text:
        log.info("%s: columns %s hold text, not numbers, and are not read as edge features", csv,
                 ", ".join(str(c + 1) for c in text))
    numeric = [c for c in rest if c not in text]
    if not numeric:
        return label, None
    features = df[numeric].to_numpy(np.float32)
    if not np.isfinite(features).all():
        row, j = (int(v) for v in np.argwhere(~np.isfinite(features))[0])
        raise InputError(f"column {numeric[j] + 1} holds a missing, NaN or infinite value at data row {row + 1}", csv)
    return label, features
