"""England COVID set up as the field does it (PyG-Temporal's loader: 8 lags of the standardised
case counts as features, the next day's as target): T-GCN, trained by the library, beats the two
naive forecasts on the same test windows, predicting zero (each region's mean) and predicting the
last value. The baselines are computed here from the JSON file itself, not from the store."""

import json
import statistics
from pathlib import Path

import numpy as np
import pytest

from dynagnn.config import validate
from dynagnn.data.ingest import ingest
from dynagnn.train.engine import TrainConfig, Trainer

ENGLAND = Path(__file__).resolve().parents[3] / "shared" / "data" / "pyg_temporal" / "england_covid.json"
LAGS = 8


def standardized_cases(path: Path) -> np.ndarray:
    """y [T][N] standardised per region over all days (population std + 1e-10), as the loader."""
    y = np.asarray(json.loads(path.read_text())["y"], dtype=np.float64)
    out = np.empty_like(y)
    for n in range(y.shape[1]):
        column = list(y[:, n])
        out[:, n] = (y[:, n] - statistics.fmean(column)) / (statistics.pstdev(column) + 1e-10)
    return out


def test_tgcn_beats_zero_and_last_value_on_england_covid(tmp_path):
    if not ENGLAND.is_file():
        pytest.skip(f"{ENGLAND} is absent")
    entry = {"format": "pyg-temporal-json", "path": str(ENGLAND),   # options: the loader's defaults
             "edge_weight": "sum", "self_loops": "keep"}            # the mobility flows as they are
    spec = validate({"datasets": {"england": entry}})["datasets"]["england"]
    store = ingest(spec, tmp_path / "england.zarr", name="england")
    config = TrainConfig.of(task="regress", model="tgcn", hidden=32, window=1, batch_windows=4,
                         epochs=20, patience=8, lr=0.01, seed=0)
    trainer = Trainer(store, config, progress=False)
    metrics, _ = trainer.fit()
    tgcn = float(metrics.loc[metrics["best"], "test_mse"].iloc[0])   # the epoch validation chose

    cases = standardized_cases(ENGLAND)
    snapshots = cases.shape[0] - LAGS                  # snapshot t predicts day t + LAGS
    steps = list(range(snapshots))                     # windows of one snapshot end anywhere
    test = steps[len(steps) - max(1, round(0.15 * len(steps))):]   # the last 15%, chronologically
    assert trainer.split.test == test
    target = cases[[t + LAGS for t in test]]
    zero = float(np.mean(target ** 2))
    last = float(np.mean((target - cases[[t + LAGS - 1 for t in test]]) ** 2))
    print(f"england_covid test MSE: T-GCN {tgcn:.4f}, zero {zero:.4f}, last value {last:.4f}")
    assert tgcn < last < zero
