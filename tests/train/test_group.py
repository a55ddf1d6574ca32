"""BLAD's group strategy: with 1 worker × 2 processes and 2 workers × 2 processes the step's loss and
every gradient equal sequential's for the same windows; the deferred-backward queue reaches, and
never passes, the plan's pipeline depth; the plan's operator order is set; bad plans are one line."""

import copy
import json
import os
import signal

import numpy as np
import pandas as pd
import pytest

from dynagnn import api
from dynagnn.cli import main
from dynagnn.data.store import open_store
from dynagnn.distributed import DistError
from dynagnn.distributed.launch import launch
from dynagnn.distributed.testing import run_on
from dynagnn.models import build_model
from dynagnn.models.layers import find_gcn_layers
from dynagnn.schedule.balance import PIPELINE_DEPTH
from dynagnn.schedule.measured import measured_costs
from dynagnn.schedule.plan import build_plan
from dynagnn.train import engine
from dynagnn.train.engine import Trainer
from dynagnn.tasks.snapshot import training_ends
from dynagnn.train.strategies.group import _Measured

from tests.testing.devices import DEVICES
from tests.testing.steps import HIDDEN, WINDOW, assert_same_loss_and_grads, group_steps, make_plan
from tests.testing.steps import group_config as config
from tests.testing.steps import group_step as one_step

from tests.testing.stores import small_store
from tests.testing.limits import PROCESS_HANG_S

MODELS = ["tgcn", "evolvegcn_o", "wdgcn"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    # 12 snapshots: link windows end at 2..10, the first 7 train
    return small_store(tmp_path_factory.mktemp("group") / "link.zarr", num_snapshots=12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("workers", [1, 2])
def test_group_step_equals_sequential(store, tmp_path, workers, device):
    """On cuda every process of the job shares the one GPU (the pair through gloo, as BLAD's two
    processes share a device); sequential on that GPU is the reference."""
    ends = training_ends(open_store(store), WINDOW)
    assert len(ends) == 7
    cases, plans = {}, {}
    for m in MODELS:
        path = tmp_path / f"{m}.json"
        plans[m] = make_plan(store, m, workers, path, depth=3 if m == "tgcn" else PIPELINE_DEPTH)
        cases[(m, "group")] = (m, "group", str(path), ends)
    cases[("wdgcn", "blad_even")] = ("wdgcn", "blad_even", str(tmp_path / "wdgcn.json"), ends)
    cases[("tgcn", "blad_nm")] = ("tgcn", "blad_nm", str(tmp_path / "tgcn.json"), ends[2:5])
    # a head heavier than a snapshot on some groups: p1 runs those whole and hands over the embedding
    heavy = make_plan(store, "evolvegcn_o", workers, tmp_path / "heavy.json",
                      tail={g: (50.0 if g % 2 else 0.0) for g in ends})
    splits = np.concatenate([p.splits for p in heavy.processes])
    assert (splits == WINDOW).any() and (splits < WINDOW).any()
    cases[("evolvegcn_o", "blad_nm")] = ("evolvegcn_o", "blad_nm", str(tmp_path / "heavy.json"), ends)
    results = run_on(workers, group_steps, store, cases, procs_per_worker=2, timeout=PROCESS_HANG_S, device=device)
    assert len(results) == 2 * workers
    for key, (m, s, _, e) in cases.items():
        ref = one_step(store, config(m, "sequential", 1, device=device), e)
        for rank, res in enumerate(results):
            assert_same_loss_and_grads(res[key], ref)
            plan = plans[m]
            groups = (plan.baseline_groups if s == "blad_even" else plan.groups).workers[rank // 2]
            mine = [g for g in e if g in groups]
            if rank % 2 == 0:  # p1's queue: the plan's depth (2, or 3 for tgcn's) when it has the groups, never more
                assert plan.depth == (3 if m == "tgcn" else 2)
                assert res[key][2] == min(plan.depth, len(mine))
            assert res[key][5] == (True, 0)  # every hand-over through the ring: it holds the queue's messages
    # the plan's operator order: a flipped layer runs the other order than the default ("auto")
    other = {"aggregate_first": "update_first", "update_first": "aggregate_first"}
    for m in MODELS:
        default = [layer.resolved_order() for layer in find_gcn_layers(build_model(m, 6, HIDDEN))]
        flags = np.asarray(plans[m].operators.update_first)
        assert flags.any()  # the random plan reorders something
        for rank, res in enumerate(results):
            want = [other[d] if f else d for d, f in zip(default, flags[rank // 2, rank % 2])]
            assert res[(m, "group")][3] == want
    for rank, res in enumerate(results):  # the baselines keep the default
        assert res[("wdgcn", "blad_even")][3] == ["auto"] and res[("tgcn", "blad_nm")][3] == ["auto", "auto"]
    # steps: each of the epoch's ceil(7 / 3) = 3 steps holds a contiguous piece of every worker's groups
    steps = results[0][("tgcn", "group")][4]
    assert sorted(g for s in steps for g in s) == ends and len(steps) == 3
    for w, groups in enumerate(plans["tgcn"].groups.workers):
        pieces = [[g for g in s if g in groups] for s in steps]
        assert [g for p in pieces for g in p] == groups
        assert max(map(len, pieces)) - min(map(len, pieces)) <= 1


def test_bad_plans_are_one_line(store, tmp_path, capsys):
    def run(*args):
        rc = main(["-q", "train", str(store), "--out-dir", str(tmp_path / "o"), "--model", "wdgcn", "--hidden", "5",
                   "--window", str(WINDOW), "--epochs", "1", "--strategy", "group", *args])
        err = capsys.readouterr().err.strip()
        assert rc == 2 and len(err.splitlines()) == 1, err
        assert not (tmp_path / "o").exists()
        return err

    assert "schedule plan not found" in run("--options", json.dumps({"plan": str(tmp_path / "none.json")}))
    make_plan(store, "wdgcn", 2, tmp_path / "p2.json")
    assert "plan is for 2 workers, this run has 1" in run("--options", json.dumps({"plan": str(tmp_path / "p2.json")}))
    make_plan(store, "wdgcn", 1, tmp_path / "w4.json", window=4)
    assert "groups of 4 snapshots, this run's window is 3" in run("--options", json.dumps({"plan": str(tmp_path / "w4.json")}))
    make_plan(store, "wdgcn", 1, tmp_path / "stale.json", ends=[2, 3, 4])
    assert "a plan of another task, window or split" in run("--options", json.dumps({"plan": str(tmp_path / "stale.json")}))
    make_plan(store, "tgcn", 1, tmp_path / "tgcn.json")
    assert "plan is for model 'tgcn', expected 'wdgcn'" in run("--options", json.dumps({"plan": str(tmp_path / "tgcn.json")}))
    d = make_plan(store, "wdgcn", 1, tmp_path / "split.json").to_dict()
    d["processes"][0]["splits"][1] = 0  # p1 would run nothing of that group
    (tmp_path / "split.json").write_text(json.dumps(d))
    assert "a group of 3 snapshots needs a split in 1..3" in run("--options", json.dumps({"plan": str(tmp_path / "split.json")}))
    assert "window 1 is too short" in run("--window", "1")


class _Dies(engine.Trainer):
    def train_epoch(self, epoch):
        if epoch == 1 and self.ctx.rank == 1:  # p2 of the only worker; p1 is waiting for its gradient
            os.kill(os.getpid(), signal.SIGKILL)
        return super().train_epoch(epoch)


def _train_and_die(ctx, store_path, out, cfg):
    engine.Trainer = _Dies
    return engine._train_here(ctx, store_path, out, cfg, None, False)


def test_a_dead_partner_stops_the_job(store, tmp_path):
    make_plan(store, "wdgcn", 1, tmp_path / "p.json")
    out = tmp_path / "o"
    cfg = config("wdgcn", "group", 1, epochs=3, plan=str(tmp_path / "p.json"), batch_windows=7)
    with pytest.raises(DistError, match="worker 1 was killed by SIGKILL"):
        launch(_train_and_die, 1, store, out, cfg, threads=1, timeout=60, procs_per_worker=2)
    assert not out.exists() or not any(out.iterdir())


def _replan_then_step(ctx, comm, store_path, plan, ends):
    """Epoch 0 measured, the re-plan, then a step by the new plan; and a run with replan off."""
    tr = Trainer(store_path, config("wdgcn", "group", 1, plan=plan), progress=False, ctx=ctx, comm=comm)
    tr.run.epoch = 0
    tr.strategy.start_epoch(0)  # one epoch configured: the first is measured
    tr.strategy.train_step(ends)
    measured = copy.deepcopy(tr.strategy._measured.taken())
    tr.strategy.epoch_metrics(0, 1.0)
    tr.run.epoch = 1
    tr.optimizer.zero_grad(set_to_none=True)
    loss = tr.strategy.train_step(ends)
    grads = {k: p.grad.clone() for k, p in list(tr.model.named_parameters()) + [("head." + k, p) for k, p in
                                                                                tr.head.named_parameters()]}
    off = Trainer(store_path, config("wdgcn", "group", 1, plan=plan, replan=False), progress=False, ctx=ctx, comm=comm)
    off.strategy.train_step(ends)
    off.strategy.epoch_metrics(0, 1.0)
    return (measured, tr.strategy.replanned.to_dict(), dict(tr.strategy.split), loss, grads, tr.strategy._measured.on,
            off.strategy.replanned, dict(off.strategy.split))


def test_replan_from_measured_times(store, tmp_path):
    """After the first epoch the split follows the times the two processes measured (every
    training snapshot's forward, each part's backward, each group's head), the same on both; a step
    by the new split still equals sequential's; with replan off the plan's split stays."""
    st = open_store(store)
    ends = training_ends(st, WINDOW)
    plan = make_plan(store, "wdgcn", 1, tmp_path / "p.json", seed=3)
    results = run_on(1, _replan_then_step, store, str(tmp_path / "p.json"), ends, procs_per_worker=2, timeout=PROCESS_HANG_S)
    fwd, bwd, tails = _Measured.merge([r[0] for r in results])
    assert sorted(fwd) == sorted({s for t in ends for s in range(t - WINDOW + 1, t + 1)})
    assert all(len(v) == sum(s in range(t - WINDOW + 1, t + 1) for t in ends) for s, v in fwd.items())
    assert sorted(tails) == ends and sorted(s for part, _ in bwd for s in part) == sorted(
        s for t in ends for s in range(t - WINDOW + 1, t + 1))
    f, b = measured_costs(fwd, bwd, plan.meta["snapshot_forward_s"], plan.meta["snapshot_backward_s"])
    want = build_plan(f, b, group_len=WINDOW, num_workers=1, dataset=plan.dataset, model="wdgcn", groups=ends,
                      tail=tails)
    ref = one_step(store, config("wdgcn", "sequential", 1), ends)
    for measured, replanned, split, loss, grads, on, off, off_split in results:
        assert replanned["processes"][0]["splits"] == want.processes[0].splits.tolist()
        assert split == dict(zip(ends, want.processes[0].splits.tolist()))
        assert_same_loss_and_grads((loss, grads), ref)
        assert not on  # measured in the first epoch only
        assert off is None and off_split == dict(zip(plan.processes[0].groups, plan.processes[0].splits.tolist()))


def test_train_without_a_plan_plans_at_start(store, tmp_path):
    """No plan given: rank 0 profiles and plans the training windows; the run writes what a run
    writes, with every process's timings and the measured operator overlap per epoch."""
    metrics, timings = api.train(store, tmp_path / "o", config("wdgcn", "group", 1, epochs=2, batch_windows=7),
                                    progress=False)
    assert sorted(timings["worker"].unique()) == [0, 1]  # p1 and p2
    assert {"sync_wait", "communication", "graph_op"} <= set(timings["phase"])
    assert ((metrics["overlap_share"] >= 0) & (metrics["overlap_share"] < 1)).all()
    assert (tmp_path / "o" / "model.pt").exists()
    # compare: the run's median epoch (warm-up excluded) and sync-wait share, as the table says
    assert main(["-q", "compare", f"group={tmp_path / 'o'}", "--out", str(tmp_path / "c.parquet"),
                 "--figure", str(tmp_path / "c.png")]) == 0
    row = pd.read_parquet(tmp_path / "c.parquet").iloc[0]
    t = timings[timings["epoch"] == 1]
    assert row["epoch_s"] == pytest.approx(metrics.loc[metrics["epoch"] == 1, "train_seconds"].item())
    assert row["sync_share"] == pytest.approx(t.loc[t["phase"] == "sync_wait", "seconds"].sum() / t["seconds"].sum())
    assert np.isnan(row["predicted_epoch_s"]) and (tmp_path / "c.pdf").exists()


def test_compare_refuses_a_run_that_did_not_finish(tmp_path, capfd):
    from tests.badinput.common import assert_refused

    (tmp_path / "run").mkdir()
    assert_refused(capfd, ["compare", f"group={tmp_path / 'run'}", "--out", str(tmp_path / "c.parquet"),
                           "--figure", str(tmp_path / "c.png")], tmp_path, "no metrics.parquet here")
    assert_refused(capfd, ["compare", "group", "--out", str(tmp_path / "c.parquet"), "--figure",
                           str(tmp_path / "c.png")], tmp_path, "expected STRATEGY=DIR")


def _frames_steps(ctx, comm, store_path, cases):
    """Two steps of each case (the second reads the first-layer aggregations from the reuse cache);
    the second's (loss, grads)."""
    out = {}
    for key, (model, plan, ends, extra) in cases.items():
        tr = Trainer(store_path, config(model, "group_frames", 1, plan=plan, device=ctx.device.type, **extra), progress=False, ctx=ctx,
                     comm=comm)
        tr.strategy.start_epoch(0)
        for epoch in (0, 1):
            tr.run.epoch = epoch
            tr.optimizer.zero_grad(set_to_none=True)
            loss = tr.strategy.train_step(ends)
        named = list(tr.model.named_parameters()) + [("head." + k, p) for k, p in tr.head.named_parameters()]
        out[key] = (loss, {k: p.grad.cpu() for k, p in named if p.grad is not None},
                    tr.strategy.engine.counts["first_layer_aggregations"])
        tr.strategy.engine.close()
    return out


@pytest.mark.parametrize("device", DEVICES)
def test_group_frames_equal_sequential(store, tmp_path, device):
    """BLAD × PiPAD: each of the two processes runs its parts of the groups through the frame engine
    (frames of 2, reuse and pipeline on or off): loss and gradients equal sequential's; with reuse,
    each snapshot's first aggregation is computed once over both steps; a group split at k works."""
    ends = training_ends(open_store(store), WINDOW)
    cases, plans = {}, {}
    for m in ("wdgcn", "evolvegcn_o"):
        # evolvegcn_o's plan gives p1 some groups whole (p2 runs their head alone and no frame)
        tail = {g: (50.0 if g % 2 else 0.0) for g in ends} if m == "evolvegcn_o" else None
        plans[m] = make_plan(store, m, 1, tmp_path / f"{m}.json", tail=tail)
        for reuse, pipeline in (("on", "on"), ("off", "off")):
            cases[(m, reuse)] = (m, str(tmp_path / f"{m}.json"), ends,
                                 {"frame_size": 2, "frame_reuse": reuse, "pipeline": pipeline})
    results = run_on(1, _frames_steps, store, cases, procs_per_worker=2, timeout=PROCESS_HANG_S, device=device)
    for (m, reuse), _ in cases.items():
        ref = one_step(store, config(m, "sequential", 1, device=device), ends)
        for res in results:
            assert_same_loss_and_grads(res[(m, reuse)], ref)
    assert (plans["evolvegcn_o"].processes[0].splits == WINDOW).any()
    for m in ("wdgcn", "evolvegcn_o"):  # with the cache each snapshot of a process's parts is aggregated once
        split = dict(zip(plans[m].processes[0].groups, plans[m].processes[0].splits.tolist()))
        parts = [[list(range(t - WINDOW + 1, t + 1))[:split[t]] for t in ends],
                 [list(range(t - WINDOW + 1, t + 1))[split[t]:] for t in ends]]
        for rank, res in enumerate(results):
            assert res[(m, "off")][2] == 2 * sum(map(len, parts[rank]))  # two steps, every snapshot each time
            assert res[(m, "on")][2] == len({s for p in parts[rank] for s in p})


def test_steps_when_steps_outnumber_a_workers_groups():
    """B = 1 with 2 workers: more steps than either worker's groups; each step takes at most one
    group of each worker, every group once, in each worker's order (no error)."""
    from types import SimpleNamespace

    from dynagnn.train.strategies.group import GroupPipeline

    s = GroupPipeline.__new__(GroupPipeline)
    s.order, s.carry = [[2, 3, 4], [5, 6]], False
    s.run = SimpleNamespace(ctx=SimpleNamespace(is_main=False))
    steps = s.steps([2, 3, 4, 5, 6], 1)
    assert sorted(g for st in steps for g in st) == [2, 3, 4, 5, 6]
    assert all(sum(g in w for g in st) <= 1 for st in steps for w in s.order)
    for w in s.order:
        assert [g for st in steps for g in st if g in w] == w


def test_transfer_bytes_of_a_step(store):
    """What the plan charges the channel for: WD-GCN's state (h, c) and embedding h, every
    parameter's gradient (the model's and the link head's), each window's loss inputs (int64)."""
    from dynagnn.cost.run_costs import transfer_bytes
    from dynagnn.tasks.snapshot import make_task

    st = open_store(store)
    ends = training_ends(st, WINDOW)
    got = transfer_bytes(st, "wdgcn", HIDDEN, ends)
    n, f, h = st.num_nodes, st.feature_dim(), HIDDEN
    assert got["state"] == 2 * n * h * 4 and got["embedding"] == n * h * 4
    task = make_task("auto", st, 0)
    head = sum(p.numel() for p in task.head(h).parameters())
    assert got["gradients"] == (f * h + h + 4 * h * (h + h) + 8 * h + head) * 4  # GCN W, b; LSTM W_ih, W_hh, biases
    assert task.prepares_inputs and got["inputs"] == {t: 3 * task.loss_inputs(t, 0).shape[1] * 8 for t in ends}
