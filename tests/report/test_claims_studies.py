"""The studies behind the papers' ablations: their runs from the config, and runs side by side."""

import json
import re

import numpy as np
import pandas as pd
import pytest

from dynagnn.cli import main
from dynagnn.api.runs import check_studies, study_runs, validate
from dynagnn.errors import ConfigError, InputError
from dynagnn.report.studies import runs_table
from dynagnn.tables import write_parquet

CFG = {"datasets": {"a": {"format": "synthetic", "generator": "blad"}},
       "train": {"hidden": 8, "window": 4},
       "studies": {"ladder": {"dataset": "a", "models": ["tgcn", "wdgcn"], "options": {"window": 8, "epochs": 3},
                              "variants": {"seq": {"strategy": "sequential"},
                                           "full": {"strategy": "frames", "options": {"epochs": 2}}}}}}


def test_study_runs_merge_train_study_and_variant_options():
    cfg = validate(CFG)
    runs = study_runs(cfg)
    assert [(r["model"], r["variant"], r["strategy"]) for r in runs] == [
        ("tgcn", "seq", "sequential"), ("tgcn", "full", "frames"), ("wdgcn", "seq", "sequential"),
        ("wdgcn", "full", "frames")]
    o = runs[1]["options"]
    assert (o["hidden"], o["window"], o["epochs"], o["model"], o["strategy"], o["workers"]) == (8, 8, 2, "tgcn", "frames", 1)
    assert runs[0]["options"]["epochs"] == 3


@pytest.mark.parametrize("change, message", [
    (lambda c: c["studies"]["ladder"].update(dataset="b"), "config key studies.ladder.dataset: no dataset 'b'"),
    (lambda c: c["studies"]["ladder"]["variants"]["seq"].update(options={"windw": 2}),
     "config key studies.ladder.variants.seq.options: unknown key 'windw' (did you mean 'window'?)"),
    (lambda c: c["studies"]["ladder"].update(options={"epochs": 0}), "config key studies.ladder.options.epochs"),
])
def test_check_studies_names_the_key(change, message):
    cfg = json.loads(json.dumps(CFG))
    change(cfg)
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_studies(validate(cfg))


def _run(epoch_s, peak, val, test):
    metrics = pd.DataFrame({"epoch": [0, 1, 2], "train_seconds": [9.0, *epoch_s], "val_auc": val, "test_auc": test,
                            "best": [False, True, False]})
    timings = pd.DataFrame({"epoch": [0, 1, 1, 2, 2], "worker": 0,
                            "phase": ["graph_op", "transfer", "graph_op", "transfer", "graph_op"],
                            "seconds": [5.0, 1.0, 3.0, 1.0, 5.0], "warmup": False,
                            "peak_memory_bytes": [peak, peak, peak, peak, peak]})
    return metrics, timings


def test_runs_table_side_by_side(tmp_path):
    a = _run([2.0, 4.0], 200 * 2**20, [0.5, 0.7, 0.6], [0.4, 0.65, 0.6])
    b = _run([1.0, 1.0], 100 * 2**20, [0.5, 0.69, 0.6], [0.4, 0.66, 0.6])
    t = runs_table({"base": (*a, "sequential", "cpu"), "fast": (*b, "frames", "cpu")})
    assert t["run"].tolist() == ["base", "fast"] and t["strategy"].tolist() == ["sequential", "frames"]
    assert t["epoch_s"].tolist() == [3.0, 1.0] and t["speedup"].tolist() == [1.0, 3.0]  # medians of epochs 1, 2
    assert t["peak_memory_mb"].tolist() == [200.0, 100.0]
    assert t["transfer_share"].tolist() == [0.2, 0.2]  # 2 s of transfer in 10 s timed, warm-up left out
    assert t["best_val"].tolist() == [0.7, 0.69] and t["test_at_best"].tolist() == [0.65, 0.66]
    assert np.isnan(t["bytes_fed"]).all()
    with pytest.raises(InputError, match="different validation metrics"):
        runs_table({"base": (*a, "sequential", "cpu"),
                    "other": (b[0].rename(columns={"val_auc": "val_acc"}), b[1], "frames", "cpu")})
    # the command line: runs read from their folders, their strategy and device from the recorded config
    dirs = []
    for name, (m, tm), strategy in (("base", a, "sequential"), ("fast", b, "frames")):
        d = tmp_path / name
        d.mkdir()
        write_parquet(m, d / "metrics.parquet", "", {"config": json.dumps({"strategy": strategy, "device": "cpu"})})
        write_parquet(tm, d / "timings.parquet", "")
        dirs.append(f"{name}={d}")
    out = tmp_path / "s.parquet"
    assert main(["-q", "study", *dirs, "--out", str(out), "--figure", str(tmp_path / "s.png")]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(out), t)
    assert (tmp_path / "s.png").exists() and (tmp_path / "s.pdf").exists()
