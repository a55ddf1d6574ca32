"""The claims table from result tables: exact values, 'not run', the GPU note, a changed file."""

import json

import numpy as np
import pandas as pd
import pytest

from dynagnn.cli import main
from dynagnn.errors import InputError
from dynagnn.report.claims import CLAIMS, claim_tables, claims_html, claims_table
from dynagnn.tables import write_parquet
from tests.badinput.common import assert_refused


def _write(path, df, meta=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    write_parquet(df, path, "", meta)
    return path


def _results(root, eta1=(0.5, 0.9, 0.95)):
    """A results folder with a dataset's statistics and redundancy table, and a compare table whose runs
    ran on a CPU."""
    stats = _write(root / "d" / "stats.parquet", pd.DataFrame({
        "snapshot": [0, 1, 2], "edges": [10, 20, 40], "active_nodes": [4, 10, 25], "overlap_rate": [0.0, 0.5, 0.75]}))
    red = _write(root / "d" / "analysis" / "redundancy.parquet", pd.DataFrame({
        "batch_size": [200, 800, 3000], "mean_eta1": list(eta1), "mean_eta2": [0.4, 0.6, 0.7]}))
    cmp_ = _write(root / "d" / "m" / "compare-2.parquet", pd.DataFrame({
        "strategy": ["vertex", "snapshot", "group", "blad_nm", "blad_even"], "epoch_s": [3.0, 2.0, 1.6, 1.8, 2.2],
        "sync_share": [0.0, 0.1, 0.05, 0.08, 0.3], "overlap_share": [np.nan, np.nan, 0.2, 0.1, 0.1]}))
    _write(root / "d" / "m" / "group-2" / "metrics.parquet", pd.DataFrame({"epoch": [0]}),
           {"config": json.dumps({"device": "cpu", "strategy": "group"})})
    return [stats, red, cmp_]


def _rows(table, claim_start):
    return table[table["claim"].str.startswith(claim_start)]


def test_claims_exact_values_not_run_and_gpu_note(tmp_path):
    paths = _results(tmp_path)
    t = claims_table(paths, tmp_path)
    spread = _rows(t, "a snapshot has up to 6.95x").iloc[0]
    assert spread["ours"] == 25 / 4 and spread["ratio"] == pytest.approx(25 / 4 / 6.95)
    assert spread["where"] == "d/stats.parquet" and spread["status"] == "measured"
    change = _rows(t, "adjacent snapshots change").iloc[0]
    assert change["ours"] == pytest.approx((0.5 + 0.25) / 2)  # snapshots 1 and 2: 1 - overlap rate
    eta1 = _rows(t, "dispatch redundancy").iloc[0]
    assert eta1["ours"] == 0.9 and eta1["paper_value"] == 0.8  # batch 800 is the closest to 1000
    esdg = _rows(t, "epoch time: BLAD over ESDG").iloc[0]
    assert esdg["ours"] == pytest.approx(2.0 / 1.6) and esdg["device"] == "cpu"
    assert esdg["status"] == "needs a GPU (this run: cpu)"
    even = _rows(t, "synchronisation share of the epoch, BLAD-Even").iloc[0]
    assert even["ours"] == 0.3 and even["status"] == "measured"  # a share of time, not a GPU time
    # Every claim has a row; those without a table here say so.
    assert set(t["claim"]) == {c.claim for c in CLAIMS}
    ladder = _rows(t, "training speed-up of PiPAD").iloc[0]
    assert ladder["status"] == "not run" and np.isnan(ladder["ours"]) and ladder["where"] == ""
    assert "not run" in claims_html(t) and "needs a GPU (this run: cpu)" in claims_html(t)


def test_changed_result_file_changes_the_table(tmp_path):
    paths = _results(tmp_path)
    before = claims_table(paths, tmp_path)
    _results(tmp_path, eta1=(0.5, 0.42, 0.95))  # the redundancy table rewritten
    after = claims_table(paths, tmp_path)
    changed = (before["ours"] != after["ours"]) & ~(before["ours"].isna() & after["ours"].isna())
    assert list(after.loc[changed, "claim"]) == ["dispatch redundancy eta1 above 80% (batch of 1000 events)"]
    assert after.loc[changed, "ours"].item() == 0.42 and after.loc[changed, "ratio"].item() == pytest.approx(0.42 / 0.8)


def test_gpu_run_and_study_tables(tmp_path):
    """A table with a device column (a study's) on a GPU: measured; the paper's number per model."""
    _write(tmp_path / "d" / "tgcn" / "pipad_ladder.parquet", pd.DataFrame({
        "run": ["sequential", "pipad"], "device": ["cuda", "cuda"], "epoch_s": [2.0, 0.5], "speedup": [1.0, 4.0],
        "transfer_share": [0.25, 0.1], "peak_memory_mb": [100.0, 120.0]}))
    t = claims_table([tmp_path / "d" / "tgcn" / "pipad_ladder.parquet"], tmp_path)
    row = _rows(t, "training speed-up of PiPAD").iloc[0]
    assert (row["ours"], row["paper_value"], row["status"]) == (4.0, 5.18, "measured")
    assert _rows(t, "data transfer is 38.7%").iloc[0]["ours"] == 0.25


def test_table_lacking_rows_and_pattern_per_folder(tmp_path):
    vol = _write(tmp_path / "d" / "analysis" / "volume.parquet", pd.DataFrame({
        "scheme": ["snapshot", "snapshot"], "partitioner": ["esdg_even"] * 2, "workers": [2, 8],
        "counted_bytes": [10.0, 15.0]}))
    t = claims_table([vol], tmp_path)
    assert _rows(t, "snapshot-partition volume").iloc[0]["ours"] == 1.5
    assert _rows(t, "communication volume: DepComm").iloc[0]["status"].startswith("not in this table (no sven rows")
    # a run's training figure deeper down is not a sampled-<P> table
    assert claim_tables([tmp_path / "d" / "m" / "sampled-1" / "training.parquet",
                         tmp_path / "d" / "m" / "sampled-1.parquet"], tmp_path) == [
        tmp_path / "d" / "m" / "sampled-1.parquet"]


def test_cli_writes_parquet_and_html(tmp_path, capfd):
    paths = _results(tmp_path)
    out, page = tmp_path / "report" / "claims.parquet", tmp_path / "report" / "claims.html"
    assert main(["-q", "claims", *map(str, paths), "--results", str(tmp_path), "--out", str(out),
                 "--html", str(page)]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(out), claims_table(paths, tmp_path))
    assert "<td>6.25</td>" in page.read_text()
    outside = tmp_path.parent / f"{tmp_path.name}_elsewhere.parquet"
    _write(outside, pd.DataFrame({"x": [1]}))
    try:
        assert_refused(capfd, ["claims", str(outside), "--results", str(tmp_path / "d"), "--out",
                               str(tmp_path / "c.parquet"), "--html", str(tmp_path / "c.html")], tmp_path,
                       "not under the results folder")
    finally:
        outside.unlink()


def test_sven_hook_reads_the_tgnn_comparison(tmp_path):
    """The tgnn strategies' comparison table (report/sven.py's columns), runs labelled by strategy."""
    sven = _write(tmp_path / "d" / "tgn" / "sven-2.parquet", pd.DataFrame({
        "run": ["tgnn", "tgnn", "tgnn_depcomm", "tgnn_depcomm"], "worker": [0, 1, 0, 1],
        "dispatch": [10.0, 20.0, 50.0, 40.0], "aggregation": [5.0, 5.0, 5.0, 5.0], "epoch_s": [2.0, 2.0, 3.0, 3.0]}))
    t = claims_table([sven], tmp_path)
    assert _rows(t, "time per iteration: DepComm over Sven").iloc[0]["ours"] == 1.5
    assert _rows(t, "bytes sent per batch in training").iloc[0]["ours"] == 100 / 40


def test_ratio_over_zero_is_undefined_not_an_error(tmp_path):
    cache = _write(tmp_path / "d" / "analysis" / "cache.parquet", pd.DataFrame({
        "order": ["random", "proximity"], "policy": ["static", "fifo"], "fraction": [0.1, 0.1],
        "hit_ratio": [0.0, 0.3]}))
    t = claims_table([cache], tmp_path)
    row = _rows(t, "FIFO with proximity order").iloc[0]
    assert np.isnan(row["ours"]) and row["status"] == "undefined here (a ratio over zero)"
    assert _rows(t, "a static cache of 10%").iloc[0]["ours"] == 0.0


def _run(folder, epoch_s, processes, threads=1, cores=2):
    """A finished run's metrics and timings: 3 epochs of ``epoch_s`` seconds, timed on ``processes``
    processes of ``threads`` threads on ``cores`` cores (what the engine records)."""
    metrics = pd.DataFrame({"epoch": [0, 1, 2], "loss": [1.0, 0.9, 0.8], "train_seconds": [epoch_s] * 3,
                            "val_auc": [0.5, 0.6, 0.7], "best": [False, False, True],
                            "processes": processes, "threads": threads, "cores": cores,
                            "oversubscribed": processes * threads > cores})
    timings = pd.DataFrame({"epoch": [1, 2], "worker": [0, 0], "phase": ["graph_op", "graph_op"],
                            "seconds": [epoch_s, epoch_s]})
    _write(folder / "metrics.parquet", metrics)
    _write(folder / "timings.parquet", timings)
    return f"{folder.name.rsplit('-', 1)[0]}={folder}"


def test_an_oversubscribed_run_is_no_evidence(tmp_path):
    """BLAD at 2 workers x 2 processes on 2 cores (4 processes) is shown, never as a ratio; the same
    comparison on equal hardware (1 x 2 beside 2 x 1) gives one."""
    base = tmp_path / "d" / "m"
    over = [_run(base / "snapshot-2", 2.0, 2), _run(base / "group-2", 1.0, 4)]
    assert main(["-q", "compare", *over, "--out", str(base / "compare-2.parquet"),
                 "--figure", str(base / "compare-2.png")]) == 0
    row = pd.read_parquet(base / "compare-2.parquet").set_index("strategy").loc["group"]
    assert (row["processes"], row["threads"], row["cores"], bool(row["oversubscribed"])) == (4, 1, 2, True)
    t = claims_table([base / "compare-2.parquet"], tmp_path)
    esdg = _rows(t, "epoch time: BLAD over ESDG").iloc[0]
    assert np.isnan(esdg["ours"]) and np.isnan(esdg["ratio"])
    assert esdg["status"] == "oversubscribed: not evidence (group: 4 processes × 1 threads on 2 cores)"
    assert "oversubscribed: not evidence" in claims_html(t)
    equal = [_run(base / "snapshot-2", 2.0, 2), _run(base / "group-1", 1.6, 2)]
    assert main(["-q", "compare", *equal, "--out", str(base / "compare-2.parquet"),
                 "--figure", str(base / "compare-2.png")]) == 0
    esdg = _rows(claims_table([base / "compare-2.parquet"], tmp_path), "epoch time: BLAD over ESDG").iloc[0]
    assert esdg["ours"] == pytest.approx(2.0 / 1.6) and esdg["status"].startswith("needs a GPU")


# ---- gpu-check's rows ----------------------------------------------------------------------------

def _gpu_json(tmp_path, rows, device="cuda"):
    path = tmp_path / "gpu-check.json"
    path.write_text(json.dumps({"version": 1, "environment": {"device": device, "gpu": "Test GPU"},
                                "rows": [{"unit": "", "note": "", "status": "measured", **r} for r in rows]}))
    return path


def test_claims_needing_a_gpu_take_rows_from_gpu_check(tmp_path):
    rows = [{"system": "BLAD", "rung": "blad_nm 1x2", "measure": "epoch", "value": 0.3},
            {"system": "BLAD", "rung": "group 1x2", "measure": "epoch", "value": 0.2},
            {"system": "BLAD", "rung": "group 1x2", "measure": "operator overlap share", "value": 0.25},
            {"system": "PiPAD", "rung": "a: PiPAD", "measure": "speed-up over the PyG-T loop", "value": 4.0},
            {"system": "PiPAD", "rung": "b: PiPAD", "measure": "speed-up over the PyG-T loop", "value": 2.0},
            {"system": "PiPAD", "rung": "a: pyg", "measure": "transfer share of the one-snapshot loop",
             "value": None, "status": "not evidence"}]
    t = claims_table([], tmp_path, gpu_check=_gpu_json(tmp_path, rows))
    gpu = t[t["device"] == "cuda (Test GPU)"]
    nm = gpu[gpu["claim"].str.startswith("epoch time: BLAD-NM")].iloc[0]
    assert nm["ours"] == pytest.approx(0.3 / 0.2) and nm["status"] == "measured (gpu-check)"
    assert nm["where"] == "gpu-check: BLAD: blad_nm 1x2 / group 1x2"
    overlap = gpu[gpu["claim"] == "share of time the NN and graph operators overlap, BLAD"].iloc[0]
    assert overlap["ours"] == 0.25 and overlap["ratio"] == pytest.approx(0.25 / 0.359)
    speed = gpu[gpu["claim"].str.startswith("training speed-up of PiPAD")]
    assert speed["ours"].tolist() == [4.0, 2.0] and (speed["paper_value"] == 5.18).all()  # T-GCN's figure
    # a rung gpu-check did not measure, or measured as no evidence, says so; no "not run" row beside it
    transfer = t[t["claim"] == "data transfer is 38.7% of PyGT's training time"]
    assert transfer["status"].str.startswith("not in this gpu-check").all() and len(transfer) == 1
    assert (t.loc[t["claim"].str.startswith("epoch time: PaGraph"), "status"].str.startswith("not in this gpu")).all()
    # claims that need no GPU get no gpu-check rows
    assert not gpu["claim"].str.contains("dispatch redundancy").any()


def test_a_cpu_gpu_check_adds_nothing_and_a_bad_file_is_refused(tmp_path):
    plain = claims_table([], tmp_path)
    cpu = claims_table([], tmp_path, gpu_check=_gpu_json(tmp_path, [
        {"system": "BLAD", "rung": "group 1x2", "measure": "operator overlap share", "value": 0.25}], device="cpu"))
    pd.testing.assert_frame_equal(plain, cpu)
    bad = tmp_path / "bad.json"
    bad.write_text("{\"rows\": 3}")
    with pytest.raises(InputError, match="not a gpu-check result"):
        claims_table([], tmp_path, gpu_check=bad)
