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

    # a frame size longer than the store is skipped (the schema says so), the others are tabled
    assert main(["-q", "analyze", str(out), "--out-dir", str(tmp_path / "x"), "--parts", "overlap",
                 "--frame-sizes", "2", str(st.num_snapshots + 1)]) == 0
    assert sorted(set(pd.read_parquet(tmp_path / "x" / "overlap.parquet")["frame_size"])) == [2]


def test_analyze_defaults_fit_a_small_store_without_events(tmp_path, capsys):
    """The README's command (every analysis, default options) on a 5-snapshot store without an event
    stream: redundancy, frame size 8 and 8 partition workers are left out with a log line each."""
    synth = _synth_store(tmp_path, "s", T=5)
    adir = tmp_path / "analysis"
    capsys.readouterr()
    assert main(["analyze", str(synth), "--out-dir", str(adir), "--threads-only", "--cache-fanouts", "2",
                 "--volume-partitioners", "hash"]) == 0
    assert sorted(p.stem for p in adir.glob("*.parquet")) == ["cache", "formats", "overlap", "partitions", "volume"]
    assert sorted(set(pd.read_parquet(adir / "overlap.parquet")["frame_size"])) == [2, 4]
    assert sorted(set(pd.read_parquet(adir / "partitions.parquet")["workers"])) == [2, 4]
    log = capsys.readouterr().err
    assert "redundancy skipped" in log and "no event stream" in log
    assert "frame sizes [8] skipped" in log and "partition worker counts [8] skipped" in log


def _synth_store(tmp_path, name="s", T=8):
    out = tmp_path / f"{name}.zarr"
    gen = json.dumps({"format": "synthetic", "generator": "blad", "features": {"kind": "random", "dim": 4},
                      "params": {"num_nodes": 120, "num_edges": 600, "num_snapshots": T, "seed": 1}})
    assert main(["-q", "ingest", "--spec", gen, "--dataset", name, "--out", str(out)]) == 0
    return out


def test_profile_then_schedule_agree_with_library(tmp_path, capsys):
    from dynagnn.cost.models import model_calls
    from dynagnn.cost.predictor import Predictor
    from dynagnn.cost.profile import read_profile
    from dynagnn.cost.stage import stage_grid
    from dynagnn.schedule import SchedulePlan, build_plan

    store = _synth_store(tmp_path)
    cost = tmp_path / "cost" / "cpu"
    assert main(["-q", "profile", "--out-dir", str(cost), "--grid", "quick", "--stores", str(store),
                 "--models", "tgcn", "--repeats", "2", "--threads", "1"]) == 0
    df = read_profile(cost / "profile.parquet")
    points = stage_grid("quick", models=["tgcn"]).points()
    assert len(df) == 2 * len(points) and set(df["operator"]) == {"graph_op", "nn_op", "elementwise", "sigmoid", "tanh"}
    assert (df["median_s"] > 0).all() and set(df["direction"]) == {"forward", "backward"}
    doc = json.loads((cost / "predictor.json").read_text())
    for op in ("graph_op", "nn_op"):
        assert 0 <= doc["operators"][op]["mape"] < 10 and doc["operators"][op]["forward"]["n_test"] >= 1
    assert (cost / "predicted_vs_measured.png").stat().st_size > 0

    plan_path = tmp_path / "s" / "tgcn" / "plan-2.json"
    assert main(["-q", "schedule", str(store), "--predictor", str(cost / "predictor.json"), "--model", "tgcn",
                 "--workers", "2", "--window", "3", "--hidden", "4", "--out", str(plan_path)]) == 0
    st = open_store(store)
    plan = SchedulePlan.load(plan_path, dataset="s", model="tgcn", store_checksum=st.checksum)
    fwd, bwd = Predictor.load(cost / "predictor.json").predict({"edges": np.diff(st.offsets)},
                                                               model_calls("tgcn", 4, 4), num_nodes=st.num_nodes)
    from dynagnn.tasks.snapshot import training_ends

    ends = training_ends(st, 3)  # the CLI plans the training windows (--windows train)
    # p1's loss inputs (negative sampling) and p2's loss and head, timed by the CLI
    tail = {int(g): s for g, s in plan.meta["group_tail_s"].items()}
    assert sorted(tail) == ends and all(len(s) == 2 and min(s) > 0 for s in tail.values())
    # the hand-overs at the channel the profile timed, and the stage's queue depth
    from dynagnn.cost.link import LinkCost
    from dynagnn.schedule.stage import DEFAULT_PIPELINE_DEPTH, transfer_costs
    from dynagnn.cost.run_costs import transfer_bytes

    handover, allreduce_s = transfer_costs(LinkCost.of(Predictor.load(cost / "predictor.json")),
                                           transfer_bytes(st, "tgcn", 4, ends))
    assert handover["state_s"] > 0 and allreduce_s > 0 and plan.depth == DEFAULT_PIPELINE_DEPTH
    want = build_plan(fwd, bwd, group_len=3, num_workers=2, dataset="s", model="tgcn", groups=ends, tail=tail,
                      handover=handover, allreduce_s=allreduce_s, depth=plan.depth)
    assert sorted(g for w in plan.groups.workers for g in w) == ends
    np.testing.assert_allclose(plan.meta["snapshot_forward_s"], fwd)
    np.testing.assert_allclose(plan.groups.loads, want.groups.loads)
    np.testing.assert_allclose(plan.baseline_groups.loads, want.baseline_groups.loads)
    assert plan.groups.workers == want.groups.workers
    assert [p.splits.tolist() for p in plan.processes] == [p.splits.tolist() for p in want.processes]
    assert plan.summary()["imbalance"] <= plan.summary()["baseline_imbalance"] + 1e-12
    assert (plan_path.with_name("plan-2.png")).stat().st_size > 0

    capsys.readouterr()
    assert main(["schedule", str(store), "--predictor", str(cost / "predictor.json"), "--model", "tgcn",
                 "--workers", "2", "--check", str(plan_path)]) == 0
    assert json.loads(capsys.readouterr().out)["worker_loads"] == plan.groups.loads.tolist()

    # bad input: one line, exit 2, no plan written
    other = _synth_store(tmp_path, "o", T=5)
    pred = str(cost / "predictor.json")
    cases = [
        (["schedule", str(store), "--predictor", pred, "--model", "wdgcn", "--workers", "2"],
         "no lstm/forward model"),
        (["schedule", str(store), "--predictor", pred, "--model", "tgcn", "--workers", "9", "--window", "3"],
         "9 workers but only 3 snapshot groups"),
        (["schedule", str(store), "--predictor", pred, "--model", "tgcn", "--workers", "2", "--stats",
          str(tmp_path / "missing.parquet")], "statistics table not found"),
        (["schedule", str(store), "--predictor", str(tmp_path / "none.json"), "--model", "tgcn", "--workers", "2"],
         "predictor not found"),
        (["schedule", str(store), "--predictor", pred, "--model", "tgnc", "--workers", "2"], "did you mean 'tgcn'"),
        (["schedule", str(store), "--predictor", pred, "--model", "evolvegcn_o", "--workers", "2", "--check",
          str(plan_path)], "plan is for model 'tgcn', expected 'evolvegcn_o'"),
        (["schedule", str(other), "--predictor", pred, "--model", "tgcn", "--workers", "2", "--check",
          str(plan_path)], "plan is for dataset 's', expected 'o'"),
        (["profile", "--out-dir", str(tmp_path / "c2"), "--grid", "auto"], "give --stores"),
    ]
    (tmp_path / "bad").mkdir()
    for args, message in cases:
        if args[0] == "schedule" and "--check" not in args:
            args = [*args, "--out", str(tmp_path / "bad" / "plan.json")]
        assert main(["-q", *args]) == 2, args
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"dynagnn {args[0]}: error:") and message in err[0], (args, err)
    assert not list((tmp_path / "bad").iterdir()) and not (tmp_path / "c2").exists()


def test_schedule_stats_of_another_store(tmp_path, capsys):
    a, b = _synth_store(tmp_path, "a"), _synth_store(tmp_path, "b", T=6)
    assert main(["-q", "stats", str(b), "--out", str(tmp_path / "b.parquet"), "--threads-only"]) == 0
    cost = tmp_path / "cost"
    assert main(["-q", "profile", "--out-dir", str(cost), "--grid", "quick", "--models", "tgcn", "--repeats", "1"]) == 0
    capsys.readouterr()
    assert main(["-q", "schedule", str(a), "--predictor", str(cost / "predictor.json"), "--model", "tgcn", "--workers",
                 "2", "--stats", str(tmp_path / "b.parquet"), "--out", str(tmp_path / "p.json")]) == 2
    assert "statistics table of another store" in capsys.readouterr().err
    assert not (tmp_path / "p.json").exists()
