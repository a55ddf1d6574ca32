"""The command line: each stage end to end on fixture files, and bad input as one clear line, exit 2."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dynagnn.cli import main
from dynagnn.data import discretize as D
from dynagnn.data.sources import read_snap_edgelist
from dynagnn.data.store import open_store

FIX = Path(__file__).parent / "data" / "fixtures"


def spec(**kw):
    return json.dumps({"format": "snap-edgelist", "path": str(FIX / "snap_temporal.txt"), "directed": False,
                       "snapshots": {"by": "time", "width": 100}, "features": {"kind": "degree", "dim": 4}, **kw})


def test_ingest_stats_info(tmp_path, capsys):
    out = tmp_path / "d" / "store.zarr"
    assert main(["-q", "ingest", "--spec", spec(), "--dataset", "toy", "--out", str(out), "--threads", "2"]) == 0
    st = open_store(out)
    raw = read_snap_edgelist(FIX / "snap_temporal.txt")
    want = D.build_snapshots(raw, by="time", width=100, directed=False)
    assert np.array_equal(st.offsets, want.offsets) and np.array_equal(st.root["snapshots/col"][:], want.col)
    assert np.array_equal(st.node_ids(), raw.node_ids)
    assert st.attrs["name"] == "toy" and st.attrs["spec"]["snapshots"]["width"] == 100
    assert st.attrs["source_checksum"] and st.features(0).shape == (raw.num_nodes, 4)

    table = tmp_path / "stats.parquet"
    assert main(["-q", "stats", str(out), "--out", str(table), "--figure", str(tmp_path / "s.png"),
                 "--workers", "1", "--threads-only"]) == 0
    df = pd.read_parquet(table)
    assert df["edges"].tolist() == np.diff(want.offsets).tolist()
    assert (tmp_path / "s.png").stat().st_size > 0 and (tmp_path / "s.pdf").stat().st_size > 0

    capsys.readouterr()
    assert main(["info", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checksum"] == st.checksum


def test_ingest_from_config_file(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"datasets": {"toy": json.loads(spec())}}))
    out = tmp_path / "s.zarr"
    assert main(["-q", "ingest", "--config", str(cfg), "--dataset", "toy", "--out", str(out)]) == 0
    assert open_store(out).num_snapshots >= 1


@pytest.mark.parametrize("make_args, message", [
    (lambda p: ["ingest", "--spec", spec(path=str(p / "missing.txt")), "--dataset", "x"], "missing.txt"),
    (lambda p: ["ingest", "--spec", spec(format="gml"), "--dataset", "x"], "'gml' is not one of"),
    (lambda p: ["ingest", "--spec", spec(snapshot={"by": "time"}), "--dataset", "x"], "did you mean 'snapshots'"),
    (lambda p: ["ingest", "--spec", "{not json", "--dataset", "x"], "--spec is not valid JSON"),
    (lambda p: ["ingest", "--spec", spec(path=str(p / "bad.txt")), "--dataset", "x"], "bad.txt, line 2: expected"),
    (lambda p: ["ingest", "--spec", spec(empty_snapshots="error", snapshots={"by": "time", "width": 1}),
                "--dataset", "x"], "snapshots have no edges"),
    (lambda p: ["ingest", "--spec", spec(path=str(p / "empty.txt")), "--dataset", "x"], "empty.txt"),
    (lambda p: ["stats", str(p / "nostore.zarr"), "--out", str(p / "o.parquet")], "no snapshot store here"),
])
def test_bad_input_one_line_exit_2(tmp_path, capsys, make_args, message):
    (tmp_path / "bad.txt").write_text("1 2 3\n4 5\n")
    (tmp_path / "empty.txt").write_text("# only a comment\n")
    out = tmp_path / "res" / "store.zarr"
    args = make_args(tmp_path)
    if args[0] == "ingest":
        args += ["--out", str(out)]
    assert main(["-q", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"dynagnn {args[0]}: error:") and message in err[0], err
    assert not out.exists() and not (tmp_path / "o.parquet").exists()
    assert not list((tmp_path / "res").glob(".*"))  # no temporary store left behind


def test_help_lists_stages(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for stage in ("ingest", "stats", "info", "check-config"):
        assert stage in text


def test_analyze_tables_and_bad_requests(tmp_path, capsys):
    out = tmp_path / "store.zarr"
    assert main(["-q", "ingest", "--spec", spec(), "--dataset", "toy", "--out", str(out)]) == 0
    adir = tmp_path / "analysis"
    assert main(["-q", "analyze", str(out), "--out-dir", str(adir), "--threads-only", "--frame-sizes", "2",
                 "--edge-lives", "1", "--batch-sizes", "2", "--neighbors", "1", "--partition-workers", "2",
                 "--cache-batch-size", "2", "--cache-fanouts", "2", "2"]) == 0
    for name in ("overlap", "formats", "redundancy", "partitions", "cache"):
        assert (adir / f"{name}.parquet").exists() and (adir / f"{name}.png").exists()
    st = open_store(out)
    assert pd.read_parquet(adir / "formats.parquet")["nnz"].tolist() == np.diff(st.offsets).tolist()

    capsys.readouterr()
    assert main(["-q", "analyze", str(out), "--out-dir", str(tmp_path / "x"), "--parts", "overlap",
                 "--frame-sizes", "2", str(st.num_snapshots + 1)]) == 2
    assert "frame sizes [" in capsys.readouterr().err
    synth = tmp_path / "synth.zarr"
    gen = json.dumps({"format": "synthetic", "generator": "esdg",
                      "params": {"num_nodes": 20, "num_snapshots": 3, "avg_degree": 2}})
    assert main(["-q", "ingest", "--spec", gen, "--dataset", "s", "--out", str(synth)]) == 0
    assert main(["-q", "analyze", str(synth), "--out-dir", str(tmp_path / "y"), "--parts", "redundancy"]) == 2
    assert "no event stream" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
