import json

import numpy as np
import pytest

from dynagnn.errors import InputError
from dynagnn.schedule import SchedulePlan, build_plan, tune_frames


def make_plan():
    rng = np.random.default_rng(3)
    T = 40
    fwd = rng.lognormal(size=T) * np.linspace(1, 4, T)
    tuner = tune_frames(np.tile([1.0, 0.9, 0.8, 0.7], (5, 1)), 10.0, snapshot_bytes=np.ones(5))
    ops = (rng.random((T, 2)), rng.random((T, 2)), rng.random((T, 2)))
    return build_plan(fwd, 2 * fwd, group_len=5, num_workers=3, dataset="as733", model="wdgcn",
                      layer_times=ops, tuner=tuner, store_checksum="abc")


def test_roundtrip(tmp_path):
    plan = make_plan()
    path = plan.save(tmp_path / "plan-3.json")
    d = json.loads(path.read_text())
    assert d["version"] == 1 and d["dataset"] == "as733" and d["model"] == "wdgcn" and d["workers"] == 3
    assert d["predicted"]["imbalance"] <= d["predicted"]["baseline_imbalance"]
    back = SchedulePlan.load(path, dataset="as733", model="wdgcn", store_checksum="abc")
    assert back.to_json() == plan.to_json()
    assert [p.splits.tolist() for p in back.processes] == [p.splits.tolist() for p in plan.processes]
    assert list(tmp_path.iterdir()) == [path]  # no temporary left behind


def test_wrong_dataset_model_version(tmp_path):
    path = make_plan().save(tmp_path / "plan.json")
    with pytest.raises(InputError, match="dataset 'as733', expected 'reddit'"):
        SchedulePlan.load(path, dataset="reddit")
    with pytest.raises(InputError, match="model 'wdgcn', expected 'tgcn'"):
        SchedulePlan.load(path, model="tgcn")
    with pytest.raises(InputError, match="store_checksum"):
        SchedulePlan.load(path, store_checksum="zzz")
    d = json.loads(path.read_text())
    d["version"] = 99
    path.write_text(json.dumps(d))
    with pytest.raises(InputError, match="version 99"):
        SchedulePlan.load(path)
    path.write_text("{")
    with pytest.raises(InputError, match="not valid JSON"):
        SchedulePlan.load(path)
    with pytest.raises(InputError, match="not found"):
        SchedulePlan.load(tmp_path / "missing.json")
