"""One training step taken for comparison: a strategy's step against sequential's (the loss, every
gradient, the embedding), BLAD's group step with a plan, and the event models' and sampled training's
configs, as the equivalence tests of several modules take them."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from dynagnn.data.store import open_store
from dynagnn.models.layers import find_gcn_layers
from dynagnn.schedule.balance import PIPELINE_DEPTH
from dynagnn.schedule.plan import build_plan
from dynagnn.tasks.snapshot import training_ends
from dynagnn.train.engine import TrainConfig, Trainer
from dynagnn.train.stages import SamplerError


ENDS = [4, 5]          # B = 2 windows of 3 snapshots
HIDDEN = 5


def strategy_config(model, strategy, workers, **kw):
    return TrainConfig.of(**{"model": model, "strategy": strategy, "hidden": HIDDEN, "window": 3, "epochs": 1,
                          "batch_windows": len(ENDS), "workers": workers, **kw})


def one_step(store, cfg, ctx=None, comm=None):
    """(loss, {param: grad}, embedding at the end of the last window on rank 0, comm counts)."""
    tr = Trainer(store, cfg, progress=False, ctx=ctx, comm=comm)
    tr.comm.take_counts()
    tr.run.epoch = 1
    tr.optimizer.zero_grad(set_to_none=True)
    loss = tr.strategy.train_step(ENDS)
    counts = tr.comm.take_counts()
    named = list(tr.model.named_parameters()) + [("head." + k, p) for k, p in tr.head.named_parameters()]
    grads = {k: p.grad.cpu() for k, p in named if p.grad is not None}
    with torch.no_grad():
        h = tr.strategy.embed(tr.run.windows([ENDS[-1]])[0])
    return loss, grads, None if h is None else h.cpu(), counts


def strategy_steps(ctx, comm, store, models, strategy, extra):
    """:func:`one_step` of each of ``models`` on this worker (a ``run_on`` target)."""
    return {m: one_step(store, strategy_config(m, strategy, ctx.world_size, **extra), ctx, comm) for m in models}


def assert_same_step(got, ref):
    loss, grads, h, _ = got
    rloss, rgrads, rh, _ = ref
    assert loss == pytest.approx(rloss, rel=1e-5)
    assert grads.keys() == rgrads.keys() and grads
    for k in rgrads:
        torch.testing.assert_close(grads[k], rgrads[k], rtol=1e-5, atol=1e-6, msg=k)
    if rh is not None:
        torch.testing.assert_close(h, rh, rtol=1e-5, atol=1e-6)


LAYERS = {"tgcn": 2, "evolvegcn_o": 2, "wdgcn": 1}


WINDOW = 3   # the group tests' window (their hidden width is HIDDEN)


def make_plan(store_path, model, workers, path, seed=0, window=WINDOW, ends=None, tail=None, depth=PIPELINE_DEPTH):
    """A plan from random per-snapshot and per-layer times (what the cost model would predict):
    uneven loads, so the balanced and even plans differ and some layers get reordered. Its meta
    records the per-snapshot predictions, as the schedule stage's do. ``tail``: each group's head
    seconds (p2's alone); ``depth``: p1's queue bound."""
    st = open_store(store_path)
    rng = np.random.default_rng(seed)
    T, L = st.num_snapshots, LAYERS[model]
    fwd = rng.uniform(1, 10, T)
    agg, upd, rnn = (rng.uniform(0.1, 1, (T, L)) for _ in range(3))
    ends = training_ends(st, window) if ends is None else ends
    plan = build_plan(fwd, 2 * fwd, group_len=window, num_workers=workers, dataset=st.attrs["name"], model=model,
                      layer_times=(agg, upd, rnn), store_checksum=st.checksum, groups=ends, tail=tail,
                      meta={"snapshot_forward_s": fwd.tolist(), "snapshot_backward_s": (2 * fwd).tolist()},
                      depth=depth)
    plan.save(path)
    return plan


def group_config(model, strategy, workers, **kw):
    return TrainConfig.of(**{"model": model, "strategy": strategy, "hidden": HIDDEN, "window": WINDOW, "epochs": 1,
                          "workers": workers, **kw})


def group_step(store_path, cfg, ends, ctx=None, comm=None):
    """(loss, {param: grad}, deepest queue, GCN layer orders, steps of the epoch for B = 3, (whether the
    pair's hand-overs went through shared memory, how many went over gloo instead))."""
    tr = Trainer(store_path, cfg, progress=False, ctx=ctx, comm=comm)
    tr.run.epoch = 1
    tr.optimizer.zero_grad(set_to_none=True)
    loss = tr.strategy.train_step(ends)
    named = list(tr.model.named_parameters()) + [("head." + k, p) for k, p in tr.head.named_parameters()]
    grads = {k: p.grad.cpu() for k, p in named if p.grad is not None}
    orders = [layer.order for layer in find_gcn_layers(tr.model)]
    steps = tr.strategy.steps(tr.split.train, 3)
    channel = getattr(tr.strategy, "channel", None)
    shm = (channel.shared, channel.via_gloo) if channel is not None else None
    return loss, grads, getattr(tr.strategy, "max_queue", None), orders, steps, shm


def group_steps(ctx, comm, store_path, cases):
    """:func:`group_step` of each case ``key: (model, strategy, plan, ends)`` on this worker."""
    return {key: group_step(store_path, group_config(m, s, ctx.workers, plan=plan, device=ctx.device.type), ends, ctx, comm)
            for key, (m, s, plan, ends) in cases.items()}


def assert_same_loss_and_grads(got, ref):
    loss, grads = got[:2]
    rloss, rgrads = ref[:2]
    assert loss == pytest.approx(rloss, rel=1e-5)
    assert grads.keys() == rgrads.keys() and grads
    for k in rgrads:
        torch.testing.assert_close(grads[k], rgrads[k], rtol=1e-5, atol=1e-6, msg=k)


def event_config(model="tgn", **kw):
    base = dict(model=model, strategy="events", event_batch=50, memory_dim=8, time_dim=4, neighbors=3,
                event_negatives=5, epochs=2, lr=1e-3, threads=1)
    return TrainConfig.of(**{**base, **kw})


def ends_with(batches, message: str, within: float) -> None:
    """Iterating ``batches`` raises a SamplerError matching ``message`` within ``within`` seconds."""
    t0 = time.monotonic()
    with pytest.raises(SamplerError, match=message):
        for _ in batches:
            pass
    assert time.monotonic() - t0 < within
