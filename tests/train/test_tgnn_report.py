"""compare-sven: the bytes per batch of tgnn runs from comm.parquet and metrics.parquet (exact values),
the CLI's table and figure, and a run that is not tgnn training refused in one line."""

import pandas as pd
import pytest

from dynagnn.cli import main
from dynagnn.report.sven import sven_table
from tests.badinput.common import assert_refused


def _run(scale):
    metrics = pd.DataFrame({"epoch": [0, 1], "train_seconds": [3.0, 2.0 * scale], "batches": [4.0, 4.0]})
    rows = []
    for epoch in (0, 1):
        for worker in (0, 1):
            b = 400 * scale * (worker + 1) * (epoch + 1)
            rows += [(epoch, worker, "train", "dispatch", b), (epoch, worker, "train", "dispatch.backward", b / 4),
                     (epoch, worker, "train", "aggregation", 2 * b), (epoch, worker, "train", "dispatch.ids", 8),
                     (epoch, worker, "train", "grad_all_reduce", 40), (epoch, worker, "eval", "dispatch", 10**6),
                     (-1, worker, "setup", "partition", 100)]
    comm = pd.DataFrame(rows, columns=["epoch", "worker", "stage", "collective", "bytes"]).assign(calls=1)
    return metrics, comm


def test_bytes_per_batch_per_worker():
    t = sven_table({"tgnn": _run(1), "tgnn_depcomm": _run(3)})
    r = t[(t["run"] == "tgnn_depcomm") & (t["worker"] == 1)].iloc[0]
    # epochs 0 and 1: 2400 and 4800 dispatch bytes (+ a quarter returned), over 4 batches, mean
    assert r["dispatch"] == pytest.approx((2400 * 1.25 + 4800 * 1.25) / 4 / 2)
    assert r["aggregation"] == pytest.approx((4800 + 9600) / 4 / 2)
    assert r["bookkeeping"] == 2.0 and r["all_reduce"] == 10.0 and r["epoch_s"] == 6.0
    assert list(t["run"]) == ["tgnn", "tgnn", "tgnn_depcomm", "tgnn_depcomm"]


def test_cli_table_and_figure(tmp_path):
    for name, scale in (("a", 1), ("b", 2)):
        d = tmp_path / name
        d.mkdir()
        m, c = _run(scale)
        m.to_parquet(d / "metrics.parquet")
        c.to_parquet(d / "comm.parquet")
    out, fig = tmp_path / "t.parquet", tmp_path / "f.png"
    assert main(["-q", "compare-sven", f"tgnn={tmp_path / 'a'}", f"tgnn_depcache={tmp_path / 'b'}", "--out", str(out),
                 "--figure", str(fig)]) in (0, None)
    table = pd.read_parquet(out)
    pd.testing.assert_frame_equal(table.reset_index(drop=True),
                                  sven_table({"tgnn": _run(1), "tgnn_depcache": _run(2)}), check_dtype=False)
    assert fig.exists() and fig.with_suffix(".pdf").exists()


def test_a_run_that_is_not_tgnn(tmp_path, capfd):
    d = tmp_path / "run"
    d.mkdir()
    m, c = _run(1)
    m.drop(columns="batches").to_parquet(d / "metrics.parquet")
    c.to_parquet(d / "comm.parquet")
    argv = ["compare-sven", f"x={d}", "--out", str(tmp_path / "t.parquet"), "--figure", str(tmp_path / "f.png")]
    assert_refused(capfd, argv, tmp_path, r"run 'x': metrics without batches: not a tgnn training run")
