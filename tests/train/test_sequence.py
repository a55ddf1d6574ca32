"""Sequence mode ``carry`` (PyTorch Geometric Temporal's loop) against the loop that library's examples
run, written here by hand: the state carried from snapshot to snapshot, every snapshot's loss, one
optimiser step per epoch or per tbptt piece. Same epoch loss, parameters after the epoch, and
validation and test metrics with the state continued from the end of training."""

import copy

import numpy as np
import pytest
import torch

from dynagnn.errors import ConfigError
from dynagnn.train.engine import TrainConfig, Trainer
from dynagnn.train.transfer import SnapshotFeeder

from tests.testing.devices import DEVICES

from tests.testing.stores import small_store
from tests.testing.limits import PROCESS_HANG_S

MODELS = ["tgcn", "gcrn", "evolvegcn_o", "mpnn_lstm", "wdgcn", "cdgcn", "tmgcn"]


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    d = tmp_path_factory.mktemp("sequence")
    return {"regress": small_store(d / "regress.zarr", labels="regress", num_snapshots=14),
            "class": small_store(d / "class.zarr", labels="class", num_snapshots=14),
            "link": small_store(d / "link.zarr", num_snapshots=14)}


def trainer(store, model, **kw):
    cfg = TrainConfig.of(**{"model": model, "hidden": 5, "epochs": 1, "lr": 0.01, "sequence": "carry", **kw})
    return Trainer(store, cfg, progress=False)


def hand_loop(tr, k, per_piece):
    """One epoch of the loop in PyTorch Geometric Temporal's examples, on a copy of ``tr``'s model and
    head: (epoch loss, parameters after it, val metrics, test metrics)."""
    run = tr.run
    model, head, task = copy.deepcopy(run.model), copy.deepcopy(run.head), run.task
    params = list(model.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=tr.config.lr, weight_decay=tr.config.weight_decay, fused=True)
    feeder = SnapshotFeeder(run.host, run.features, run.num_nodes, "cpu", "full")
    units = run.train_ends
    model.train()
    head.train()
    state = model.initial_state(run.num_nodes)
    with torch.no_grad():
        for t in range(units[0]):
            _, state = model.step(*feeder.get(t), state)
    pieces = [units[i:i + (k or len(units))] for i in range(0, len(units), k or len(units))]
    losses = []
    opt.zero_grad()
    for piece in pieces:
        cost = 0
        for t in piece:
            h, state = model.step(*feeder.get(t), state)
            cost = cost + task.loss(head, h, t, 0)
        cost = cost / (len(piece) if per_piece else len(units))
        cost.backward()
        losses.append(float(cost.detach()))
        state = tuple(s.detach() for s in state)
        if per_piece:
            opt.step()
            opt.zero_grad()
    if not per_piece:
        opt.step()
        losses = [sum(losses)]
    model.eval()
    head.eval()
    metrics = []
    with torch.no_grad():
        for split in (run.split.val, run.split.test):   # the state continues: training -> val -> test
            emb = {}
            for t in range(split[0], split[-1] + 1):
                h, state = model.step(*feeder.get(t), state)
                emb[t] = h
            metrics.append(task.evaluate(head, emb))
    return float(np.mean(losses)), [p.detach() for p in params], *metrics


def assert_epoch_equal(tr, k, per_piece):
    ref_loss, ref_params, ref_val, ref_test = hand_loop(tr, k, per_piece)
    assert len(tr.step_ends()) == (-(-len(tr.run.train_ends) // k) if per_piece else 1)
    loss = tr.train_epoch(0)
    val, test = tr.evaluate(tr.split.val), tr.evaluate(tr.split.test)
    assert loss == pytest.approx(ref_loss, rel=1e-5)
    for p, r in zip(tr.run.parameters(), ref_params):
        torch.testing.assert_close(p.detach(), r, rtol=1e-5, atol=1e-6)
    for got, ref in ((val, ref_val), (test, ref_test)):
        assert got.keys() == ref.keys()
        for key in ref:
            assert got[key] == pytest.approx(ref[key], rel=1e-5, abs=1e-7, nan_ok=True), key


@pytest.mark.parametrize("model", MODELS)
def test_the_whole_sequence_is_the_hand_written_loop(stores, model):
    """The cumulative regime: one step per epoch, the state carried through every training snapshot."""
    assert_epoch_equal(trainer(stores["regress"], model), None, False)


@pytest.mark.parametrize("model", ["tgcn", "evolvegcn_o", "mpnn_lstm"])
@pytest.mark.parametrize("k,per_piece", [(1, True), (4, True), (4, False)])
def test_truncated_bptt_is_the_hand_written_loop(stores, model, k, per_piece):
    """k = 1, a step per snapshot: the incremental regime; k = 4 with a step per piece or per epoch."""
    tr = trainer(stores["regress"], model, tbptt=k, step="tbptt" if per_piece else "epoch")
    assert_epoch_equal(tr, k, per_piece)


@pytest.mark.parametrize("kind", ["class", "link"])
def test_every_task_carries(stores, kind):
    assert_epoch_equal(trainer(stores[kind], "gcrn", tbptt=3, step="tbptt"), 3, True)


def test_evaluation_after_a_checkpoint_replays_the_sequence(stores):
    """Units that follow no carried state (weights loaded, no training pass) replay the snapshots
    before them with the current weights, without gradients, from the initial state."""
    tr = trainer(stores["regress"], "tgcn")
    tr.train_epoch(0)
    tr.strategy._carried = None
    got = tr.evaluate(tr.split.val)
    run = tr.run
    feeder = SnapshotFeeder(run.host, run.features, run.num_nodes, "cpu", "full")
    state, emb = run.model.initial_state(run.num_nodes), {}
    with torch.no_grad():
        for t in range(run.split.val[-1] + 1):
            h, state = run.model.step(*feeder.get(t), state)
            emb[t] = h
        ref = run.task.evaluate(run.head, {t: emb[t] for t in run.split.val})
    assert got == pytest.approx(ref, rel=1e-6)


def test_auto_carries_on_pyg_temporal_regress_stores_only(stores):
    from dynagnn.train.options import WindowOptions, resolve_sequence

    class Store:
        attrs = {"spec": {"format": "pyg-temporal-json"}}

    auto = WindowOptions()
    assert resolve_sequence(auto, "regress", Store()) == "carry"
    assert resolve_sequence(auto, "link", Store()) == "window"
    assert resolve_sequence(auto, "regress", type("S", (), {"attrs": {"spec": {"format": "csv"}}})()) == "window"
    assert resolve_sequence(WindowOptions(sequence="window"), "regress", Store()) == "window"
    assert trainer(stores["regress"], "tgcn", sequence="auto").run.sequence == "window"   # a synthetic store


@pytest.fixture(scope="module")
def pyg_store(tmp_path_factory):
    from pathlib import Path

    from dynagnn.data.ingest import ingest

    path = tmp_path_factory.mktemp("pyg") / "chickenpox.zarr"
    fixture = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "pyg_chickenpox.json"
    ingest({"format": "pyg-temporal-json", "path": str(fixture)}, path)
    return path


def test_a_pyg_temporal_regress_store_carries_by_default_and_refuses_what_carry_cannot(pyg_store):
    tr = Trainer(pyg_store, TrainConfig.of(model="tgcn", hidden=4, epochs=1), progress=False)
    assert tr.run.sequence == "carry" and tr.step_ends() == [tr.run.train_ends]
    with pytest.raises(ConfigError, match=r"sequence carry \(auto: a regress task on a pyg-temporal-json store\) "
                                          "with checkpoint_blocks > 1"):
        Trainer(pyg_store, TrainConfig.of(model="tgcn", hidden=4, checkpoint_blocks=2), progress=False)
    assert Trainer(pyg_store, TrainConfig.of(model="tgcn", hidden=4, sequence="window", window=1, checkpoint_blocks=2),
                   progress=False).run.sequence == "window"


@pytest.mark.parametrize("kw,message", [
    ({"checkpoint_blocks": 2}, "bound the memory with tbptt instead"),
    ({"step": "tbptt"}, "step: tbptt needs tbptt: k"),
    ({"sequence": "window", "step": "tbptt", "tbptt": 2}, "it needs sequence: carry"),
    ({"strategy": "snapshot", "model": "wdgcn", "sequence": "window", "tbptt": 2}, "tbptt cuts a carried sequence"),
    ({"strategy": "frames", "sequence": "window", "tbptt": 2}, "tbptt cuts a carried sequence"),
    ({"strategy": "group_frames"}, "group_frames trains windows only; for a carried sequence use frames"),
    ({"strategy": "events", "model": "tgn"}, "an option of blad_even, blad_nm, frames, group, sequential, "
                                             "snapshot, vertex; this run trains events"),
])
def test_what_carry_cannot_do_is_refused_in_one_line(stores, kw, message):
    with pytest.raises(ConfigError, match=message) as err:
        trainer(stores["regress"], **{"model": "tgcn", **kw})
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("model", ["tgcn", "evolvegcn_o", "mpnn_lstm", "gcrn"])
@pytest.mark.parametrize("S,reuse,pipeline,k,step", [(4, "on", "on", None, "epoch"), (3, "off", "off", None, "epoch"),
                                                      (4, "on", "off", 5, "tbptt"), (2, "off", "on", 5, "epoch")])
def test_frames_carry_the_sequence_as_sequential(stores, model, S, reuse, pipeline, k, step, device):
    """PiPAD's frames over the carried sequence (S consecutive snapshots of each piece, reuse and the
    pipeline on or off) train and evaluate as sequential in the same mode; then again in epoch 2
    (the reuse cache full, the carried state reset). On cuda both run on the GPU."""
    kw = {"tbptt": k, "step": step, "device": device}
    seq = trainer(stores["regress"], model, **kw)
    frames = trainer(stores["regress"], model, strategy="frames", frame_size=S, frame_reuse=reuse,
                     pipeline=pipeline, **kw)
    for epoch in (0, 1):
        got = [frames.train_epoch(epoch), frames.evaluate(frames.split.val), frames.evaluate(frames.split.test)]
        ref = [seq.train_epoch(epoch), seq.evaluate(seq.split.val), seq.evaluate(seq.split.test)]
        rel = 1e-5 if device == "cpu" else 1e-4   # cuSPARSE sums a frame in another order (docs/gpu.md)
        assert got[0] == pytest.approx(ref[0], rel=rel)
        for g, r in zip(got[1:], ref[1:]):
            assert g == pytest.approx(r, rel=rel)
        for p, r in zip(frames.run.parameters(), seq.run.parameters()):
            torch.testing.assert_close(p.detach(), r.detach(), rtol=1e-5 if device == "cpu" else 1e-4,
                                       atol=1e-6 if device == "cpu" else 1e-5)
    assert frames.strategy.engine.tuner.frame_size == S
    frames.strategy.close()


def test_frames_tune_s_on_pieces_of_the_sequence(stores):
    """With S tuned, the profiling epoch runs frames of 1 and the trials time pieces of at most 16
    snapshots; the epochs after it train as sequential all the same."""
    seq = trainer(stores["regress"], "tgcn", epochs=3)
    frames = trainer(stores["regress"], "tgcn", strategy="frames", epochs=3, pipeline="off")
    assert all(len(r) <= 16 for r in frames.strategy._trial_ranges())
    m, _ = frames.fit()
    r, _ = seq.fit()
    np.testing.assert_allclose(m["loss"], r["loss"], rtol=1e-5)
    assert m["frame_size"].iloc[-1] >= 1 and m["tuning_s"].iloc[0] > 0


def two_epochs(tr):
    """(loss, val metrics, test metrics, parameters) after each of two epochs of trainer ``tr``."""
    out = []
    for epoch in (0, 1):
        loss = tr.train_epoch(epoch)
        out.append((loss, tr.evaluate(tr.split.val), tr.evaluate(tr.split.test),
                    [p.detach().clone() for p in tr.run.parameters()]))
    return out


def _worker_epochs(ctx, comm, store, model, strategy, kw):
    cfg = TrainConfig.of(**{"model": model, "hidden": 5, "epochs": 1, "lr": 0.01, "sequence": "carry",
                            "strategy": strategy, "workers": ctx.world_size, **kw})
    return two_epochs(Trainer(store, cfg, progress=False, ctx=ctx, comm=comm))


def sequential_epochs(store, model, kw):
    return two_epochs(trainer(store, model, **kw))


def assert_epochs_equal(got, ref):
    for (loss, val, test, params), (rloss, rval, rtest, rparams) in zip(got, ref, strict=True):
        assert loss == pytest.approx(rloss, rel=1e-5)
        assert val == pytest.approx(rval, rel=1e-5) and test == pytest.approx(rtest, rel=1e-5)
        for p, r in zip(params, rparams):
            torch.testing.assert_close(p, r, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("strategy,model,kw", [
    ("vertex", "gcrn", {"partitioner": "hash"}),
    ("vertex", "evolvegcn_o", {"partitioner": "hash", "tbptt": 4, "step": "tbptt"}),
    ("vertex", "mpnn_lstm", {"partitioner": "hash", "tbptt": 3}),
    ("snapshot", "mpnn_lstm", {}),
    ("snapshot", "evolvegcn_o", {"tbptt": 3}),
    ("snapshot", "wdgcn", {"tbptt": 4, "step": "tbptt"}),
])
def test_two_workers_carry_the_sequence_as_sequential(stores, strategy, model, kw):
    """Two gloo workers train and evaluate as sequential in the same mode, over two epochs: vertex,
    each worker carrying its vertices' rows (halo exchange per snapshot); snapshot, each piece's
    snapshots split between the workers, each carrying its vertices' rows of the temporal state
    (EvolveGCN-O: both carry the weight chain), the tbptt pieces 3 and 4 long, and the last piece
    shorter than a worker's share."""
    from dynagnn.distributed.testing import run_on

    ref = sequential_epochs(stores["regress"], model, {k: v for k, v in kw.items() if k != "partitioner"})
    for rank_out in run_on(2, _worker_epochs, stores["regress"], model, strategy, kw, timeout=PROCESS_HANG_S):
        assert_epochs_equal(rank_out, ref)


@pytest.mark.parametrize("model,kw", [("tmgcn", {}), ("evolvegcn_o", {"tbptt": 4, "step": "tbptt"}),
                                      ("cdgcn", {"tbptt": 5})])
def test_one_snapshot_worker_carries_the_sequence_as_sequential(stores, model, kw):
    """The snapshot strategy on one worker (no exchange) in carry mode equals sequential."""
    got = two_epochs(trainer(stores["link"], model, strategy="snapshot", **kw))
    assert_epochs_equal(got, sequential_epochs(stores["link"], model, kw))


@pytest.mark.parametrize("strategy,model,kw", [
    ("group", "tgcn", {"tbptt": 3}),
    ("group", "evolvegcn_o", {}),
    ("blad_even", "mpnn_lstm", {"tbptt": 4, "step": "tbptt"}),
    ("blad_nm", "gcrn", {"tbptt": 1, "step": "tbptt"}),
    ("group", "wdgcn", {"tbptt": 5}),
])
def test_group_pair_carries_the_sequence_as_sequential(stores, strategy, model, kw):
    """BLAD's two processes over the carried sequence: p1 runs the first part of each tbptt piece (the
    whole sequence without tbptt; the whole piece when it is one snapshot), hands the state to p2,
    which hands the end state back before its backward; loss, gradients and evaluation equal
    sequential's over two epochs, on both processes."""
    from dynagnn.distributed.testing import run_on

    ref = sequential_epochs(stores["regress"], model, kw)
    results = run_on(1, _worker_epochs, stores["regress"], model, strategy, kw, procs_per_worker=2, timeout=PROCESS_HANG_S)
    assert len(results) == 2
    for rank_out in results:
        assert_epochs_equal(rank_out, ref)


def test_group_splits_each_piece_by_its_cost(stores):
    """p1's share of a piece halves its predicted cost (edges plus vertices), at least one snapshot
    each; blad_even halves the count."""
    from dynagnn.train.strategies.group import BladEven, GroupPipeline

    g = GroupPipeline.__new__(GroupPipeline)
    g.baseline, g.cost = False, np.array([1.0, 1.0, 1.0, 9.0, 1.0, 1.0])
    assert g._carry_split([0, 1, 2, 3, 4, 5]) == 3      # 3 | 11 is nearer even than 12 | 2
    assert g._carry_split([3, 4]) == 1 and g._carry_split([2]) == 1
    assert g._carry_split([0, 1, 2, 4, 5]) == 2          # cost 1 each: the middle, rounded down
    e = BladEven.__new__(BladEven)
    e.cost = g.cost
    assert e._carry_split([0, 1, 2, 3, 4, 5]) == 3 and e._carry_split([0, 1, 2]) == 1


@pytest.mark.parametrize("kw,message", [
    ({"strategy": "group", "workers": 2}, "runs it on 1 worker"),
    ({"strategy": "group", "sequence": "window", "window": 3, "tbptt": 2}, "tbptt cuts a carried sequence"),
])
def test_group_refuses_what_a_carried_sequence_cannot_use(stores, kw, message):
    from dynagnn.data.store import open_store
    from dynagnn.train.run_config import TrainConfig

    cfg = TrainConfig.of(**{"model": "tgcn", "hidden": 5, "sequence": "carry", **kw})
    with pytest.raises(ConfigError, match=message) as err:
        cfg.strategy_cls(cfg).check(None, open_store(stores["regress"]), cfg.workers)
    assert "\n" not in str(err.value)


def test_group_leaves_a_given_plan_unread_in_carry(stores, caplog):
    """The workflow passes a plan to every BLAD run: in carry mode the check passes and says, in the log,
    that the plan is not read (the file is never opened)."""
    from dynagnn.data.store import open_store
    from dynagnn.train.run_config import TrainConfig

    cfg = TrainConfig.of(model="tgcn", hidden=5, sequence="carry", strategy="group", plan="no-such-plan.json")
    with caplog.at_level("WARNING"):
        cfg.strategy_cls(cfg).check(None, open_store(stores["regress"]), 1)
    assert "plan no-such-plan.json is not read in sequence carry" in caplog.text


def test_a_worker_that_receives_no_halo_still_returns_the_others_gradients(tmp_path):
    """A directed graph whose remote columns all sit in one worker's rows: in every snapshot worker 1
    receives halo rows and worker 0 none. Worker 0's halo still takes part in the backward (its
    all-to-all returns worker 1's gradients to their owner): the two workers carry the sequence as
    sequential does. (Dropping an empty halo from the graph left worker 0 out of that collective, and
    gloo aborted on the size mismatch: twitter_tennis under vertex and carry.)"""
    from dynagnn.data.store import open_store
    from dynagnn.distributed.testing import run_on
    from dynagnn.train.strategies.vertex import local_index, local_snapshot, vertex_parts
    from dynagnn.train.transfer import load_host_snapshots

    path = small_store(tmp_path / "directed.zarr", labels="regress", num_nodes=40, num_edges=10, num_snapshots=14,
                       directed=True)
    s = open_store(path)
    host = load_host_snapshots(s)
    parts = vertex_parts("hash", host, s.num_nodes, 2)
    received = [[sum(local_snapshot(h, s.num_nodes, parts, r, 2, local_index(parts, r))[1].recv_counts)
                 for r in (0, 1)] for h in host]
    assert all(r0 == 0 and r1 > 0 for r0, r1 in received)
    ref = sequential_epochs(path, "evolvegcn_o", {})
    for rank_out in run_on(2, _worker_epochs, path, "evolvegcn_o", "vertex", {"partitioner": "hash"}, timeout=PROCESS_HANG_S):
        assert_epochs_equal(rank_out, ref)
