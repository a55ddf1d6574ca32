"""A run over several seeds (issue 28): each seed's run in its own folder, the per-seed table its best
epochs, the summary the mean and std over them, computed here again from the runs' own tables."""

import numpy as np
import pandas as pd
import pytest

from dynagnn.api import seed_summary, train_seeds
from dynagnn.cli import main
from dynagnn.train.engine import TrainConfig


def test_seeds_train_each_run_and_summarise(link_store, tmp_path):
    out = tmp_path / "runs"
    cfg = TrainConfig.of(model="tgcn", hidden=4, window=2, epochs=2)
    per_seed, summary = train_seeds(link_store, out, cfg, [0, 5], progress=False)
    assert per_seed["seed"].tolist() == [0, 5]
    rows = []
    for k in (0, 5):
        m = pd.read_parquet(out / f"seed-{k}" / "metrics.parquet")
        rows.append(m[m["best"]].iloc[0])
    cols = ["loss"] + [c for c in rows[0].index if c.startswith(("val_", "test_"))]
    for got, ref in zip(per_seed.itertuples(index=False), rows):
        assert got.epoch == ref["epoch"]
        for c in cols:
            assert getattr(got, c) == pytest.approx(ref[c], nan_ok=True)
    assert rows[0]["test_auc"] != rows[1]["test_auc"]          # the seed reaches the run
    table = np.array([[r[c] for c in cols] for r in rows], dtype=np.float64)
    assert summary["metric"].tolist() == cols and (summary["n"] == 2).all()
    np.testing.assert_allclose(summary["mean"], table.mean(0))
    np.testing.assert_allclose(summary["std"], np.sqrt(((table - table.mean(0)) ** 2).mean(0)))
    pd.testing.assert_frame_equal(pd.read_parquet(out / "summary.parquet"), summary)
    pd.testing.assert_frame_equal(pd.read_parquet(out / "seeds.parquet"), per_seed)


def test_a_metric_missing_in_a_seed_is_missing_in_the_summary():
    s = seed_summary(pd.DataFrame({"seed": [0, 1, 2], "epoch": [1, 2, 1], "test_ap": [0.5, 0.7, 0.9],
                                   "test_mrr": [0.3, np.nan, 0.4]}))
    assert s["mean"].iloc[0] == pytest.approx(0.7) and s["std"].iloc[0] == pytest.approx(np.sqrt(0.08 / 3))
    assert np.isnan(s["mean"].iloc[1]) and np.isnan(s["std"].iloc[1])


@pytest.mark.parametrize("args,message", [
    (["--seeds", "0", "1", "--seed", "3"], "--seeds with --seed: give one of them"),
    (["--seeds", "2", "2"], "seeds [2, 2]: give one or more distinct seeds"),
])
def test_seeds_refuse_in_one_line(link_store, tmp_path, capsys, args, message):
    assert main(["-q", "train", str(link_store), "--out-dir", str(tmp_path / "o"), "--epochs", "1", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_the_cli_trains_every_seed(link_store, tmp_path):
    out = tmp_path / "o"
    assert main(["-q", "train", str(link_store), "--out-dir", str(out), "--epochs", "1", "--hidden", "4",
                 "--window", "2", "--seeds", "1", "2"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["seed-1", "seed-2", "seeds.parquet", "summary.parquet"]
    assert pd.read_parquet(out / "seeds.parquet")["seed"].tolist() == [1, 2]


def test_seeds_refuse_a_folder_of_something_else(link_store, tmp_path):
    from dynagnn.errors import ConfigError

    out = tmp_path / "o"
    (out / "seed-9").mkdir(parents=True)          # another seed set's run
    cfg = TrainConfig.of(model="tgcn", hidden=4, window=2, epochs=1)
    with pytest.raises(ConfigError, match=r"holds 1 other entry \(seed-9\).*\(or --overwrite\)"):
        train_seeds(link_store, out, cfg, [0], progress=False)
    assert sorted(p.name for p in out.iterdir()) == ["seed-9"]     # nothing written


def test_gather_seeds_is_train_seeds_tables_and_refuses_what_is_not_one_quantity(link_store, tmp_path):
    """`dynagnn seeds DIR` (the workflow's gather of per-seed jobs) writes the tables train_seeds writes;
    a missing seed or seeds evaluated on other negatives are refused in one line, nothing written."""
    from dynagnn.api import gather_seeds
    from dynagnn.errors import InputError

    out = tmp_path / "runs"
    cfg = TrainConfig.of(model="tgcn", hidden=4, window=2, epochs=1)
    per_seed, summary = train_seeds(link_store, out, cfg, [0, 3], progress=False)
    (out / "summary.parquet").unlink()
    assert main(["seeds", str(out)]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(out / "summary.parquet"), summary)
    pd.testing.assert_frame_equal(gather_seeds(out, [0, 3])[0], per_seed)
    with pytest.raises(InputError, match="seed 7: no readable training run"):
        gather_seeds(out, [0, 7])
    other = tmp_path / "other"
    train_seeds(link_store, other, TrainConfig.of(model="tgcn", hidden=4, window=2, epochs=1,
                                                  eval_negative_kind="historical"), [5], progress=False)
    (other / "seed-5").rename(out / "seed-5")
    before = (out / "summary.parquet").read_bytes()
    with pytest.raises(InputError, match=r"different negatives \(historical, random\)") as err:
        gather_seeds(out)
    assert "\n" not in str(err.value) and (out / "summary.parquet").read_bytes() == before
