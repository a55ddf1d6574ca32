"""compare-sampled: the data-path table of sampled training runs (warm epochs: after the first), its
figure, and one clear line for a run that is not sampled training."""

import pandas as pd
import pytest

from dynagnn.cli import main
from dynagnn.errors import InputError
from dynagnn.report.sampled import sampled_table


def metrics(seconds, l1, l2, store, chunks, sequences=0.0):
    n = len(seconds)
    return pd.DataFrame({"epoch": range(n), "train_seconds": seconds, "l1_hit_ratio": l1, "l2_hit_ratio": l2,
                         "store_bytes": store, "store_chunk_bytes": chunks, "store_seconds": [0.5] * n,
                         "order_sequences": [sequences] * n, "val_accuracy": [0.1 * (i + 1) for i in range(n)]})


def test_warm_epochs_per_run_and_the_cli_writes_table_and_figure(tmp_path, capsys):
    runs = {"sampled_nocache": metrics([9.0, 4.0, 6.0, 5.0], [0.0] * 4, [0.0] * 4, [40, 30, 30, 30], [80, 60, 60, 60]),
            "sampled": metrics([5.0, 2.0], [0.1, 0.3], [0.2, 0.4], [20, 10], [40, 20], sequences=16.0)}
    t = sampled_table(runs)
    assert t["strategy"].tolist() == ["sampled_nocache", "sampled"]
    assert t["epoch_s"].tolist() == [5.0, 2.0]          # the first epoch (filling the caches) left out
    assert t["l1_hit_ratio"].tolist() == [0.0, 0.3] and t["l2_hit_ratio"].tolist() == [0.0, 0.4]
    assert t["store_bytes"].tolist() == [30.0, 10.0] and t["store_chunk_bytes"].tolist() == [60.0, 20.0]
    assert t["order_sequences"].tolist() == [0.0, 16.0]
    assert t["best_val"].tolist() == pytest.approx([0.4, 0.2])
    assert sampled_table({"one": metrics([3.0], [0.5], [0.0], [1], [2])})["epoch_s"].tolist() == [3.0]
    args = []
    for name, m in runs.items():
        (tmp_path / name).mkdir()
        m.to_parquet(tmp_path / name / "metrics.parquet")
        args.append(f"{name}={tmp_path / name}")
    assert main(["compare-sampled", *args, "--out", str(tmp_path / "t.parquet"),
                 "--figure", str(tmp_path / "f.png")]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "t.parquet"), t)
    assert (tmp_path / "f.png").stat().st_size > 0 and (tmp_path / "f.pdf").exists()
    # a run of another strategy (no cache columns): one line, nothing written
    (tmp_path / "seq").mkdir()
    pd.DataFrame({"epoch": [0], "train_seconds": [1.0]}).to_parquet(tmp_path / "seq" / "metrics.parquet")
    with pytest.raises(InputError, match="'sequential'.*without l1_hit_ratio"):
        sampled_table({"sequential": pd.read_parquet(tmp_path / "seq" / "metrics.parquet")})
    assert main(["compare-sampled", f"sequential={tmp_path / 'seq'}", "--out", str(tmp_path / "u.parquet"),
                 "--figure", str(tmp_path / "u.png")]) == 2
    assert "not a sampled training run" in capsys.readouterr().err
    assert not (tmp_path / "u.parquet").exists() and not (tmp_path / "u.png").exists()
