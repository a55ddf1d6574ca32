"""Bad-input table, damaged plans (issue 34): a plan with depth 0, an operator order of the wrong shape
(once an internal IndexError), and a group plan's store, model and worker checks, which run in the
launcher before any of the job's processes starts."""

from __future__ import annotations

import json

import pytest

from dynagnn.train import engine
from tests.testing.stores import small_store
from tests.testing.steps import WINDOW, make_plan

from .common import assert_refused


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return small_store(tmp_path_factory.mktemp("plans") / "link.zarr", num_snapshots=12)


def argv(store, tmp_path, plan, workers=1, model="wdgcn"):
    return ["train", str(store), "--out-dir", str(tmp_path / "o"), "--model", model, "--hidden", "5", "--window",
            str(WINDOW), "--epochs", "1", "--strategy", "group", "--workers", str(workers), "--threads", "1",
            "--options", json.dumps({"plan": str(plan)})]


@pytest.fixture
def no_spawn(monkeypatch):
    """Any start of the job's processes fails the test: the checks must refuse first."""
    def launch(*a, **k):
        raise AssertionError("the job's processes were started before the plan was checked")
    monkeypatch.setattr(engine, "launch", launch)


def damaged(store, tmp_path, edit, workers=1, model="wdgcn"):
    d = make_plan(store, model, workers, tmp_path / "plan.json").to_dict()
    edit(d)
    (tmp_path / "plan.json").write_text(json.dumps(d))
    return tmp_path / "plan.json"


def _depth0(d):
    d["processes"][0]["depth"] = 0


def _orders_of_one_worker(d):
    d["operators"]["update_first"] = d["operators"]["update_first"][:1]


@pytest.mark.parametrize("edit, message", [
    (_depth0, r"processes\[0\]\.depth 0: p1's queue bound must be an integer >= 1"),
    (_orders_of_one_worker, r"operators\.update_first has shape \[1, 2, 1\], expected \[2, 2, layers\]"),
])
def test_damaged_plan(store, tmp_path, capfd, no_spawn, edit, message):
    plan = damaged(store, tmp_path, edit, workers=2)
    assert_refused(capfd, argv(store, tmp_path, plan, workers=2), tmp_path, message)


@pytest.mark.parametrize("case, message", [
    ("workers", r"plan is for 1 workers, this run has 2"),
    ("model", r"plan is for model 'tgcn', expected 'wdgcn'"),
    ("store", r"plan is for store_checksum"),
    ("split", r"a group of 3 snapshots needs a split in 1\.\.3"),
    ("layers", r"the plan orders 2 GCN layers per process, the model has 1"),
])
def test_a_group_plan_is_checked_before_the_processes_start(store, tmp_path, capfd, no_spawn, case, message):
    if case == "workers":
        make_plan(store, "wdgcn", 1, tmp_path / "plan.json")
        plan = tmp_path / "plan.json"
    elif case == "model":
        make_plan(store, "tgcn", 2, tmp_path / "plan.json")
        plan = tmp_path / "plan.json"
    elif case == "store":
        plan = damaged(store, tmp_path, lambda d: d.update(store_checksum="0" * 16), workers=2)
    elif case == "split":
        plan = damaged(store, tmp_path, lambda d: d["processes"][1]["splits"].__setitem__(0, 0), workers=2)
    else:  # a plan made for tgcn's two layers, relabelled for wdgcn's one
        make_plan(store, "tgcn", 2, tmp_path / "plan.json")
        d = json.loads((tmp_path / "plan.json").read_text())
        d["model"] = "wdgcn"
        (tmp_path / "plan.json").write_text(json.dumps(d))
        plan = tmp_path / "plan.json"
    assert_refused(capfd, argv(store, tmp_path, plan, workers=2), tmp_path, message)
