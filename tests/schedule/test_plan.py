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


@pytest.mark.parametrize("depth", [0, -2, 1.5, "4", True])
def test_a_queue_bound_below_one_group_is_refused(tmp_path, depth):
    """p1 must be able to hold one group: a plan saying otherwise would leave p2 waiting for ever."""
    d = make_plan().to_dict()
    d["meta"]["pipeline_depth"] = depth
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(d))
    with pytest.raises(InputError, match=r"plan\.json.*meta\.pipeline_depth .*: p1's queue bound must be an integer >= 1"):
        SchedulePlan.load(path)
    d["meta"]["pipeline_depth"] = 3
    path.write_text(json.dumps(d))
    assert SchedulePlan.load(path).depth == 3


def test_hand_overs_and_all_reduce_in_the_predicted_epoch():
    """transfer_costs turns bytes into seconds at the channel's measured line; the plan charges the
    hand-overs to the processes' tasks and adds the all-reduce to the epoch (known answers)."""
    from dynagnn.cost.link import LinkCost
    from dynagnn.schedule.balance import balance
    from dynagnn.schedule.stage import transfer_costs

    link = LinkCost(handover=(1e-3, 1e-9), allreduce=(2e-3, 1e-9))
    transfers = {"state": 4_000_000, "embedding": 2_000_000, "gradients": 1_000_000, "inputs": {3: 0, 4: 500_000}}
    handover, allreduce_s = transfer_costs(link, transfers)
    assert handover["state_s"] == pytest.approx(1e-3 + 4e-3) and handover["embedding_s"] == pytest.approx(3e-3)
    assert handover["inputs_s"] == {"4": pytest.approx(2 * 1e-3 + 8e-9 + 5e-4)}  # the size message, then the inputs
    assert allreduce_s == pytest.approx((2e-3 + 1e-3) + (2e-3 + 8e-9))  # the gradients, then the loss
    assert transfer_costs(None, transfers) == (None, 0.0) and transfer_costs(link, None) == (None, 0.0)

    fwd, bwd = np.full(6, 0.1), np.full(6, 0.2)
    free = build_plan(fwd, bwd, group_len=3, num_workers=1, dataset="d", model="m", groups=[3, 4])
    plan = build_plan(fwd, bwd, group_len=3, num_workers=1, dataset="d", model="m", groups=[3, 4],
                      handover=handover, allreduce_s=allreduce_s)
    proc = plan.processes[0]
    again = balance(fwd, bwd, 3, [3, 4], handover=handover)
    assert proc.splits.tolist() == again.splits.tolist() and proc.makespan == again.makespan
    # every group hands its state over and its gradient back: 4 receipts of state_s, plus group 4's inputs
    assert proc.busy.sum() == pytest.approx(free.processes[0].busy.sum() + 4 * handover["state_s"]
                                            + handover["inputs_s"]["4"])
    s = plan.summary()
    assert s["epoch_time"] == pytest.approx(proc.makespan + allreduce_s) and s["allreduce_time"] == allreduce_s
    assert free.summary()["epoch_time"] == free.processes[0].makespan
    assert SchedulePlan.from_json(plan.to_json()).summary()["epoch_time"] == s["epoch_time"]  # kept in meta
