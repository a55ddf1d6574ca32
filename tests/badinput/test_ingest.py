"""Bad ingest inputs: one line, exit 2, nothing written (issue 18: items 1, 6 and 7, the ingest
tracebacks, and the classes that already held: missing, empty, malformed files).

Each row writes its input under the test's folder, runs ``dynagnn ingest`` (or ``check-config``)
on it, and asserts the refusal contract of :func:`tests.badinput.common.assert_refused`; the
message must name what is wrong and where (file and line, the JSON key and index, the config key).
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from tests.badinput.common import assert_refused

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"
BY_COUNT = {"by": "count", "size": 2}


def text(name: str, content: str):
    def make(tmp: Path) -> str:
        (tmp / name).write_text(content)
        return str(tmp / name)
    return make


def gz_truncated(tmp: Path) -> str:
    data = gzip.compress(b"1 2 3\n" * 2000)
    (tmp / "cut.txt.gz").write_bytes(data[: len(data) // 2])
    return str(tmp / "cut.txt.gz")


def england(change):
    """The england_covid fixture with one value changed (NaN is written as JSON's NaN literal)."""
    def make(tmp: Path) -> str:
        data = json.loads((FIXTURES / "england_covid_small.json").read_text())
        change(data)
        (tmp / "england.json").write_text(json.dumps(data))
        return str(tmp / "england.json")
    return make


def _set(path, value):
    def change(data):
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return change


SNAP = "snap-edgelist"

# (id, format, make the input -> path, extra spec keys, message regex)
ROWS = [
    # what already held
    ("missing file", SNAP, lambda tmp: str(tmp / "absent.txt"), {}, r"absent\.txt: file not found"),
    ("empty file", SNAP, text("e.txt", ""), {}, r"e\.txt: no data rows"),
    ("directory", SNAP, lambda tmp: str(tmp), {}, r"expected a file, found a directory"),
    ("malformed row", SNAP, text("m.txt", "1 2 3\n2 3\n"), {}, r"m\.txt, line 2: expected 3 or 4 fields"),
    ("truncated gzip", SNAP, gz_truncated, {}, r"cut\.txt\.gz.*(cannot|line)"),
    # node ids beyond 64 bits (a pandas OverflowError traceback)
    ("id >= 2**64", SNAP, text("b.txt", "1 2 3\n18446744073709551616 2 4\n"), {},
     r"b\.txt, line 2: src node id 18446744073709551616 does not fit in 64 bits"),
    ("id >= 2**63", SNAP, text("b.txt", "1 2 3\n2 9223372036854775808 4\n"), {},
     r"b\.txt, line 2: dst node id 9223372036854775808 does not fit in 64 bits"),
    # reader options (a TypeError / ValueError traceback)
    ("unknown option", SNAP, text("o.txt", "1 2 3\n"), {"options": {"delimiter": ","}},
     r"datasets\.d\.options: unknown key 'delimiter'; allowed: sep, comment, header"),
    ("bad sep", SNAP, text("o.txt", "1 2 3\n"), {"options": {"sep": "||"}},
     r"datasets\.d\.options\.sep: '\|\|' is not one character"),
    ("bad header", SNAP, text("o.txt", "1 2 3\n"), {"options": {"header": "sometimes"}},
     r"datasets\.d\.options\.header: 'sometimes' is not one of \[True, False, 'auto'\]"),
    ("option of a format without options", "as733", lambda tmp: str(FIXTURES / "as733"),
     {"options": {"sep": ","}}, r"datasets\.d\.options: unknown key 'sep'; allowed: none"),
    # header: false on a file whose first row is a header: named, not skipped
    ("header false", SNAP, text("h.txt", "src dst t\n1 2 3\n"), {"options": {"header": False}},
     r"h\.txt, line 1: expected an integer src node id, got 'src'"),
    # non-finite numbers (item 6): CSV weights and times, JSON targets and weights
    ("NaN weight", SNAP, text("w.txt", "1 2 3 1.0\n2 3 4 nan\n"), {},
     r"w\.txt, line 2: expected a finite number for w"),
    ("inf time", SNAP, text("t.txt", "1 2 3.5\n2 3 inf\n"), {}, r"t\.txt, line 2: expected a finite number for t"),
    ("NaN rating", "bitcoin-csv", text("r.csv", "1,2,3,10\n2,3,nan,11\n"), {},
     r"r\.csv, line 2: expected a finite number for rating"),
    ("NaN JSON target", "pyg-temporal-json", england(lambda d: d["y"][3].__setitem__(1, float("nan"))), {},
     r"england\.json.*y.*3.*1.*(nan|NaN).*finite"),
    ("inf JSON weight", "pyg-temporal-json",
     england(_set(["edge_mapping", "edge_weight", "2", 1], float("inf"))), {},
     r"england\.json.*edge_weight.*2.*1.*inf.*finite"),
    # negative weights that would be summed into snapshot edge weights (a numpy warning in training)
    ("negative weight", SNAP, text("n.txt", "# c\n1 2 5 1.0\n2 3 4 -0.5\n"), {},
     r"n\.txt, line 3: negative weight -0\.5: .*edge_weight: auto.* count or binary"),
    ("negative rating", "bitcoin-csv", text("r.csv", "1,2,3,10\n2,3,-4,11\n"), {"edge_weight": "sum"},
     r"r\.csv, line 2: negative weight -4: .*edge_weight: sum"),
    ("negative JSON weight", "pyg-temporal-json",
     england(_set(["edge_mapping", "edge_weight", "2", 0], -3.0)), {},
     r"england\.json: .*negative weight -3"),
    # a width far below the time span: refused before 6 GiB are allocated
    ("tiny width", SNAP, text("s.txt", "1 2 0\n2 3 15552000\n"), {"snapshots": {"by": "time", "width": 1}},
     r"width 1 over the times 0\.\.15552000 makes 15552001 snapshots \(about .* GiB to build\), "
     r"more than snapshots\.max_count = 100000"),
]


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_bad_ingest_input(capfd, tmp_path, row):
    _, fmt, make, extra, message = row
    spec = {"format": fmt, "path": make(tmp_path), "snapshots": BY_COUNT, **extra}
    if fmt in ("as733", "pyg-temporal-json"):
        spec["snapshots"] = extra.get("snapshots", {"by": "source"})
    out = tmp_path / "results" / "d" / "store.zarr"
    assert_refused(capfd, ["ingest", "--dataset", "d", "--spec", json.dumps(spec), "--out", str(out)],
                   tmp_path, message)


def test_unknown_reader_option_in_check_config(capfd, tmp_path):
    """check-config validates a dataset's reader options as ingest does (issue 18, item 5)."""
    config = tmp_path / "config.yaml"
    config.write_text("datasets:\n  d: {format: snap-edgelist, path: x.txt, snapshots: {by: count, size: 2},\n"
                      "      options: {sepp: ','}}\n")
    assert_refused(capfd, ["check-config", str(config)], tmp_path,
                   r"config key datasets\.d\.options: unknown key 'sepp' \(did you mean 'sep'\?\)")


def _unwritable_outputs(tmp: Path) -> list[tuple[str, str]]:
    """(output path, message) of outputs that cannot be written; the input does not exist, so the
    output must be checked first."""
    (tmp / "a_file").write_text("")
    rows = [(str(tmp / "a_file" / "store.zarr"), r"a_file is a file, not a directory"),
            (str(tmp / "a_file"), r"a_file: a file is in the way of the store")]
    if os.geteuid() != 0:  # root writes through permission bits
        (tmp / "ro").mkdir(mode=0o555)
        rows.append((str(tmp / "ro" / "d" / "store.zarr"), r"the folder .*ro is not writable"))
    if Path("/proc/1").is_dir() and not os.access("/proc/1", os.W_OK):  # unwritable even for root
        rows.append(("/proc/1/d/store.zarr", r"/proc/1 is not writable"))
    return rows


def test_unwritable_output_refused_before_reading(capfd, tmp_path):
    spec = json.dumps({"format": SNAP, "path": str(tmp_path / "absent.txt"), "snapshots": BY_COUNT})
    rows = _unwritable_outputs(tmp_path)
    try:
        for out, message in rows:
            assert_refused(capfd, ["ingest", "--dataset", "d", "--spec", spec, "--out", out], tmp_path,
                           r"dynagnn ingest: error: .*cannot write the store|in the way")
            line = assert_refused(capfd, ["ingest", "--dataset", "d", "--spec", spec, "--out", out], tmp_path,
                                  message)
            assert "absent.txt" not in line  # the output is checked before the input is read
    finally:
        if (tmp_path / "ro").exists():
            (tmp_path / "ro").chmod(0o755)
