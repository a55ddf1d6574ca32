"""What every reader shares: files and lines, the row layout and field checks, the fast
(pyarrow) parse and the slow line-by-line pass that names the first bad row, and the event graph."""

from __future__ import annotations

import gzip
import logging
import math
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, TextIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pv

from dynagnn.data.ids import dense_ids
from dynagnn.data.types import EventStream, RawGraph, RowSource
from dynagnn.errors import ConfigError, InputError

log = logging.getLogger(__name__)


GZIP_MAGIC = b"\x1f\x8b"
INT = re.compile(r"[+-]?\d+")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
WHITESPACE = (" ", "\t")

# A check takes the fields of one data row and returns what is wrong with it, or None.
RowCheck = Callable[[list[str]], "str | None"]


class Malformed(Exception):
    """The fast parse succeeded but produced values a valid file cannot have."""


# What sends a reader from the fast parse to the slow pass (pyarrow reports a truncated gzip
# stream as OSError).
FAST_PARSE_ERRORS = (pa.ArrowException, OSError, Malformed)


# --------------------------------------------------------------------------------------------
# Files and lines


def require_file(path: str | Path) -> Path:
    path = Path(path)
    if path.is_dir():
        raise InputError("expected a file, found a directory", path)
    if not path.is_file():
        raise InputError("file not found", path)
    return path


def require_dir(path: str | Path) -> Path:
    path = Path(path)
    if not path.exists():
        raise InputError("directory not found", path)
    if not path.is_dir():
        raise InputError("expected a directory, found a file", path)
    return path


def is_gzip(path: Path) -> bool:
    """Gzip is told by the magic bytes, not the suffix, so a renamed file still reads."""
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


def open_text(path: Path) -> TextIO:
    if is_gzip(path):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def numbered_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(1-based line number, line without its end-of-line), \\r\\n and \\n alike."""
    try:
        with open_text(path) as f:
            for lineno, line in enumerate(f, 1):
                yield lineno, line.rstrip("\r\n")
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read the file: {exc}", path) from exc


def dataset_name(path: Path) -> str:
    """File name without ``.gz`` and its format suffix: ``CollegeMsg.txt.gz`` -> ``CollegeMsg``."""
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return Path(name).stem


# --------------------------------------------------------------------------------------------
# Row layout, field checks, the slow pass


@dataclass
class Layout:
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


def split(line: str, split_sep: str | None) -> list[str]:
    if split_sep is None:
        return line.split()
    return [f.strip() for f in line.split(split_sep)]


def is_comment(line: str, comment: str | None) -> bool:
    return comment is not None and line.lstrip().startswith(comment)


def is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def header_mode(value) -> bool | None:
    """The reader option ``header``: True (the first non-comment row is a header), False (there is
    none: every row is data) or "auto" (a first row that is not all numbers is one), as
    True/False/None."""
    if not (isinstance(value, bool) or value == "auto"):
        raise ConfigError(f"reader option header: expected true, false or auto, got {value!r}")
    return None if value == "auto" else bool(value)


def check_sep(sep) -> None:
    """The reader option ``sep``: None (guessed) or one character."""
    if sep is not None and (not isinstance(sep, str) or len(sep) != 1):
        raise ConfigError(f"reader option sep: expected one character (',', ' ' or a tab, '\\t'), "
                          f"got {sep!r}")


def check_comment(comment) -> None:
    """The reader option ``comment``: None (no comments) or a non-empty prefix."""
    if comment is not None and (not isinstance(comment, str) or not comment):
        raise ConfigError(f"reader option comment: expected a non-empty string such as '#', or null, "
                          f"got {comment!r}")


# Value checks of the reader options that several readers share, by name.
OPTION_CHECKS: dict[str, Callable[[object], object]] = {
    "sep": check_sep, "comment": check_comment, "header": header_mode,
}


def sniff(path: Path, sep: str | None, comment: str | None, any_whitespace: bool = True,
           header: list[str] | None = None, has_header: bool | None = None) -> Layout:
    """Find the header and the first data row.

    With ``header`` (the names a format requires) the first non-comment row must start with
    them. Otherwise ``has_header`` says whether the first non-comment row is a header: True, False,
    or None (auto: it is one when it is not all numbers, and the log says so).

    With ``sep=None`` the delimiter is guessed from the first data row: a comma if it has one,
    else a tab if it has one, else a space. With ``any_whitespace`` a space or tab delimiter
    splits on any run of whitespace outside pyarrow (SNAP files may carry stray spaces); without
    it (Reddit's tab-separated fields hold spaces) rows split on the delimiter exactly.
    """
    header_line: int | None = None
    for lineno, line in numbered_lines(path):
        if not line.strip() or is_comment(line, comment):
            continue
        delimiter = sep or ("," if "," in line else "\t" if "\t" in line else " ")
        split_sep = None if any_whitespace and delimiter in WHITESPACE else delimiter
        fields = split(line, split_sep)
        if header_line is None and header is not None:
            if fields[: len(header)] != header:
                raise InputError(f"expected the header {delimiter.join(header)!r}, got {line!r}",
                                 path, lineno)
            header_line = lineno
            continue
        if header_line is None and header is None and has_header is not False:
            if has_header:
                header_line = lineno
                continue
            if not all(is_number(f) for f in fields):
                log.info("%s: line %d is not all numbers and is taken as a header (reader option "
                         "header: auto; set header: true or false to say which)", path, lineno)
                header_line = lineno
                continue
        return Layout(lineno - 1, lineno, fields, delimiter, split_sep)
    raise InputError("no data rows: the file is empty or holds only comments and a header", path)


def int_problem(value: str, what: str) -> str | None:
    if not INT.fullmatch(value):
        return f"expected an integer {what}, got {value!r}"
    if not INT64_MIN <= int(value) <= INT64_MAX:
        return f"{what} {value} does not fit in 64 bits: expected an integer from -2**63 to 2**63-1"
    return None


def number_problem(value: str, what: str) -> str | None:
    try:
        ok = math.isfinite(float(value))
    except ValueError:
        ok = False
    return None if ok else f"expected a finite number for {what}, got {value!r}"


def first_problem(*problems: str | None) -> str | None:
    return next((p for p in problems if p), None)


def data_rows(path: Path, layout: Layout, comment: str | None) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each data row, skipping what pyarrow/pandas skip too."""
    for lineno, line in numbered_lines(path):
        if lineno <= layout.skip or not line or is_comment(line, comment):
            continue
        yield lineno, split(line, layout.split_sep)


def raise_bad_row(path: Path, layout: Layout, check: RowCheck, comment: str | None,
                   cause: Exception) -> NoReturn:
    """Slow pass after a failed fast parse: raise an InputError at the first row check() rejects."""
    for lineno, fields in data_rows(path, layout, comment):
        problem = check(fields)
        if problem:
            raise InputError(problem, path, lineno) from cause
    raise InputError(f"cannot parse the file: {cause}", path) from cause


def check_first_row(path: Path, layout: Layout, check: RowCheck) -> None:
    problem = check(layout.first_fields)
    if problem:
        raise InputError(problem, path, layout.first_line)


def row_source(path: Path, layout: Layout, comment: str | None) -> RowSource:
    """The :class:`RowSource` of a parsed text file: data row k (0-based) to its line number."""
    def line_of(k: int) -> int | None:
        for i, (lineno, _) in enumerate(data_rows(path, layout, comment)):
            if i == k:
                return lineno
        return None

    return RowSource(path, line_of)


# --------------------------------------------------------------------------------------------
# Fast parse


def arrow_read(path: Path, layout: Layout, names: list[str], types: dict[str, pa.DataType],
                include: list[str] | None = None) -> pa.Table:
    """One multi-threaded pyarrow parse of the data rows, with the column types fixed.

    No null values and no quoting: an empty or quoted field in a typed column is an error, which
    sends the reader to the slow pass instead of becoming a silent null.
    """
    read = pv.ReadOptions(skip_rows=layout.skip, column_names=names)
    parse = pv.ParseOptions(delimiter=layout.delimiter, quote_char=False)
    convert = pv.ConvertOptions(column_types=types, null_values=[], strings_can_be_null=False,
                                include_columns=include)
    if is_gzip(path):
        with pa.input_stream(str(path), compression="gzip") as stream:
            return pv.read_csv(stream, read_options=read, parse_options=parse,
                               convert_options=convert)
    return pv.read_csv(str(path), read_options=read, parse_options=parse, convert_options=convert)


def numpy(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column.to_numpy(zero_copy_only=False)


def require_finite(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        raise Malformed("a value is not a finite number")
    return values


# --------------------------------------------------------------------------------------------
# Columns a reader got from pandas (TGB's and TGL's CSVs)


def integer_column(col: pd.Series, what: str, path: Path, expected: str = "expected an integer") -> np.ndarray:
    """A pandas column of integers as int64 [E]; a value that is no whole number (text, a fraction,
    a missing value) is an InputError, in one line naming ``path``: ``"<what> holds <value> at data row
    <k>: <expected>"``."""
    if pd.api.types.is_integer_dtype(col):
        return col.to_numpy(np.int64)
    num = pd.to_numeric(col, errors="coerce")
    bad = (num.isna() | (num != num.round())).to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(f"{what} holds {col.iloc[row]!r} at data row {row + 1}: {expected}", path)
    return num.to_numpy(np.int64)


def time_column(col: pd.Series, what: str, path: Path) -> np.ndarray:
    """A pandas column of times: int64 [E] when every time is a whole number (written ``5`` or ``5.0``),
    else float64 [E]; a value that is no finite number is an InputError, in one line naming ``path``:
    ``"<what> holds <value> at data row <k>: expected a finite number"``."""
    if pd.api.types.is_integer_dtype(col):
        return col.to_numpy(np.int64)
    t = pd.to_numeric(col, errors="coerce").to_numpy(np.float64)
    if not np.isfinite(t).all():
        row = int(np.flatnonzero(~np.isfinite(t))[0])
        raise InputError(f"{what} holds {col.iloc[row]!r} at data row {row + 1}: expected a finite number", path)
    return t.astype(np.int64) if np.array_equal(t, np.trunc(t)) else t


def event_stream(src: np.ndarray, dst: np.ndarray, t: np.ndarray, w: np.ndarray | None = None,
            label: np.ndarray | None = None, features: np.ndarray | None = None) -> EventStream:
    """The event stream in time order; the stable sort runs only when the file was not sorted
    (then ``order`` keeps each event's source row)."""
    order = None
    if t.shape[0] > 1 and not bool(np.all(t[1:] >= t[:-1])):
        order = np.argsort(t, kind="stable")
        src, dst, t = src[order], dst[order], t[order]
        w = None if w is None else w[order]
        label = None if label is None else label[order]
        features = None if features is None else features[order]
    return EventStream(src=src, dst=dst, t=t, w=w, label=label, features=features, order=order)


def event_graph(path: Path | list[Path], src, dst, t, *, name: str, time_unit: str,
                 directed: bool = True, w=None, label=None, features=None,
                 rows: RowSource | None = None) -> RawGraph:
    """A RawGraph over one event stream, src and dst mapped to dense ids together. ``rows``: where
    the events' rows came from (:func:`row_source`), for messages about an event's line."""
    (src, dst), node_ids = dense_ids(src, dst)
    return RawGraph(num_nodes=int(node_ids.shape[0]), node_ids=node_ids,
                    events=event_stream(src, dst, t, w, label, features), time_unit=time_unit,
                    directed=directed, sources=path if isinstance(path, list) else [path],
                    name=name, row_source=rows)
