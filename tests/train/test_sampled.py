"""The sampled strategy (BGL): the in-training hit ratio is the simulation's for the same order, policy
and sizes; sampler processes give the same batches as sampling in place; the stages stop at once on
a dead sampler; across 2 gloo workers the seeds are partitioned and the gradient is the one of the
union batch, computed here independently."""

import os
import signal

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dynagnn.analysis.cache import cache_hit_table
from dynagnn.data.ingest import ingest
from dynagnn.data.store import open_store
from dynagnn.distributed.testing import run_on
from dynagnn.graph.sample import NeighborSampler, batch_rng
from dynagnn.models.sage import make_blocks
from dynagnn.train.cache import MIB
from dynagnn.train.stages import Pipeline
from dynagnn.train.engine import TrainConfig, Trainer
from tests.testing.devices import DEVICES
from tests.testing.limits import PROCESS_HANG_S
from tests.testing.steps import ends_with
from dynagnn.train.strategies.sampled import static_graph

N, F_DIM = 600, 8


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("sampled") / "s.zarr"
    ingest({"format": "synthetic", "generator": "bgl",
            "params": {"num_nodes": N, "num_edges": 3000, "feature_dim": F_DIM, "classes": 3, "signal": 0.6,
                       "seed": 1}}, path)
    return path


def config(**kw):
    base = dict(model="graphsage", strategy="sampled", hidden=16, epochs=2, patience=10, lr=0.01, fanouts=[4, 3],
                batch_size=32, cache_l1_mb=0.0, cache_l2_mb=0.0, samplers=0, warmup_epochs=0, threads=1)
    base.update(kw)
    return TrainConfig.of(**base)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("policy,order,fraction", [("fifo", "proximity", 0.2), ("fifo", "random", 0.1),
                                                   ("static", "random", 0.1)])
def test_training_hit_ratio_is_the_simulation(store_path, policy, order, fraction, device):
    """On cuda level 1 is in device memory: the hits are the simulation's all the same."""
    store = open_store(store_path)
    cap = int(round(fraction * N))
    strategy = {"fifo": "sampled", "static": "sampled_static"}[policy]
    trainer = Trainer(store, config(strategy=strategy, order=order, cache_policy=policy,
                                    cache_l1_mb=cap * 4 * F_DIM / MIB, device=device), progress=False)
    metrics, _ = trainer.fit()
    hits = (metrics["l1_hit_ratio"] * metrics["lookups"]).sum()
    indptr, indices = static_graph(store)
    sim = cache_hit_table(indptr, indices, trainer.split.train, batch_size=32, fanouts=(4, 3), fractions=(fraction,),
                          policies=(policy,), orders=(order,), epochs=2, seed=0,
                          sequences=trainer.strategy.sequences).iloc[0]
    assert sim.capacity == cap
    assert metrics["lookups"].sum() == sim.lookups
    assert hits == pytest.approx(sim.hits, abs=1e-6)
    assert metrics["l2_hit_ratio"].eq(0).all()
    assert metrics["store_bytes"].sum() == sim.misses * 4 * F_DIM
    assert metrics["val_accuracy"].iloc[-1] > 0.5       # 3 classes: it learns
    if order == "proximity":    # the shuffling-error check's count, in the metrics
        assert metrics["order_sequences"].eq(trainer.strategy.sequences).all() and trainer.strategy.sequences >= 1


def test_two_levels_and_the_store_share_the_lookups(store_path):
    trainer = Trainer(open_store(store_path), config(cache_l1_mb=40 * 4 * F_DIM / MIB,
                                                     cache_l2_mb=100 * 4 * F_DIM / MIB), progress=False)
    m = trainer.fit()[0]
    l1_hits = m["l1_hit_ratio"] * m["lookups"]
    l2_lookups = m["lookups"] - l1_hits
    l2_hits = m["l2_hit_ratio"] * l2_lookups
    np.testing.assert_allclose(m["store_bytes"], (l2_lookups - l2_hits) * 4 * F_DIM)
    assert (m["l2_hit_ratio"] > 0).all() and (m["l1_hit_ratio"] > 0).all()


def test_sampler_processes_give_the_same_training(store_path):
    store = open_store(store_path)
    inline = Trainer(store, config(epochs=1), progress=False).fit()[0]
    procs = Trainer(store, config(epochs=1, samplers=2, queue_depth=2), progress=False)
    try:
        m = procs.fit()[0]
    finally:
        procs.strategy.pipeline.close()
    assert m["loss"].tolist() == inline["loss"].tolist()
    assert m["val_accuracy"].tolist() == inline["val_accuracy"].tolist()
    assert m["sample_busy_s"].iloc[0] > 0 and m["fetch_wait_s"].iloc[0] >= 0


def test_a_dead_sampler_stops_the_stages_at_once(store_path):
    store = open_store(store_path)
    indptr, indices = static_graph(store)
    pipe = Pipeline(indptr, indices, (4, 3), "mean", lambda ids, update: torch.zeros(ids.size, 1), "cpu",
                    samplers=1, depth=1)
    batches = [np.arange(i, i + 10) for i in range(0, 400, 10)]
    keys = [(0, 0, b) for b in range(len(batches))]
    it = pipe.batches(batches, keys)
    next(it)
    os.kill(pipe.procs[0].pid, signal.SIGKILL)
    ends_with(it, r"sampler process 0 died \(killed by signal 9\)", within=10)
    assert pipe.procs == []


def test_a_sampler_start_is_waited_for_as_a_connect_not_a_batch(store_path):
    """A batch wait of 0.2 s, shorter than any sampler's start (a spawned process importing torch): the
    pipeline still starts, and its batches are sampling in place's (a start is waited for as long as a
    worker's connect, DYNAGNN_CONNECT_TIMEOUT)."""
    store = open_store(store_path)
    indptr, indices = static_graph(store)
    make = lambda samplers, timeout=None: Pipeline(indptr, indices, (4, 3), "mean",   # noqa: E731
                                                   lambda ids, update: torch.zeros(ids.size, 1), "cpu",
                                                   samplers=samplers, depth=1, timeout=timeout)
    batches = [np.arange(i, i + 10) for i in range(0, 40, 10)]
    keys = [(0, 0, b) for b in range(len(batches))]
    inline = make(0)
    want = [(b.index, b.seeds.tolist(), b.x.tolist()) for b in inline.batches(batches, keys)]
    pipe = make(1, timeout=0.2)
    pipe.timeout = PROCESS_HANG_S   # started: its batches are waited for as a hang guard only
    try:
        got = [(b.index, b.seeds.tolist(), b.x.tolist()) for b in pipe.batches(batches, keys)]
    finally:
        pipe.close()
        inline.close()
    assert got == want and len(got) == len(batches)


def _two_workers(ctx, comm, store_path):
    out = {}
    for partitioner in ("bgl", "random"):
        trainer = Trainer(open_store(store_path), config(seed_partitioner=partitioner, batch_size=64, threads=None,
                                                         device=ctx.device.type), progress=False, ctx=ctx, comm=comm)
        s = trainer.strategy
        s.start_epoch(0)
        step = s.steps(trainer.split.train, 1)[0]
        for p in trainer.run.parameters():
            p.grad = None
        loss = s.train_step(step)
        grads = [p.grad.to("cpu", copy=True) for p in trainer.run.parameters()]
        init = {k: v.to("cpu", copy=True) for k, v in trainer.model.state_dict().items()}, \
            {k: v.to("cpu", copy=True) for k, v in trainer.head.state_dict().items()}
        out[partitioner] = (loss, grads, np.sort(step), s.key(0, 0), s.own, init)
    return out


@pytest.mark.parametrize("device", DEVICES)
def test_two_workers_partition_seeds_and_all_reduce_the_union_gradient(store_path, device):
    """On cuda both workers share the GPU (gloo, host staging); the reference is on the CPU."""
    runs = run_on(2, _two_workers, store_path, device=device)
    owners = {}
    for partitioner in ("bgl", "random"):
        (loss0, g0, seeds0, key0, own0, init), (loss1, g1, seeds1, key1, own1, _) = (r[partitioner] for r in runs)
        owners[partitioner] = own0
        check_union_gradient(store_path, loss0, g0, seeds0, key0, own0, init, loss1, g1, seeds1, key1, own1)
    assert not np.array_equal(owners["bgl"], owners["random"])


def check_union_gradient(store_path, loss0, g0, seeds0, key0, own0, init, loss1, g1, seeds1, key1, own1):
    store = open_store(store_path)
    trainer = Trainer(store, config(), progress=False)
    train = np.asarray(trainer.split.train)
    assert np.array_equal(np.sort(np.concatenate([own0, own1])), train) and not set(own0) & set(own1)
    assert loss0 == loss1
    for a, b in zip(g0, g1):
        torch.testing.assert_close(a, b)
    # independently: both workers' batches in one process, mean loss over the union of their seeds
    model, head = trainer.model, trainer.head
    model.load_state_dict(init[0])
    head.load_state_dict(init[1])
    indptr, indices = static_graph(store)
    x = torch.from_numpy(store.read("features/x"))
    y = torch.from_numpy(np.asarray(store.labels()).astype(np.int64))
    sampler = NeighborSampler(indptr, indices, (4, 3))
    total = torch.zeros(())
    for seeds, key in ((seeds0, key0), (seeds1, key1)):
        if seeds.size:
            inputs, blocks = make_blocks(sampler.sample(seeds, batch_rng(*key)), np.diff(indptr), "mean")
            logits = head(model([b.to("cpu") for b in blocks], x[torch.from_numpy(inputs)]))
            total = total + F.cross_entropy(logits, y[torch.from_numpy(seeds)], reduction="sum")
    loss = total / (seeds0.size + seeds1.size)
    loss.backward()
    assert float(loss.detach()) == pytest.approx(loss0, rel=1e-5)
    for g, p in zip(g0, list(model.parameters()) + list(head.parameters())):
        torch.testing.assert_close(g, p.grad, atol=1e-5, rtol=1e-4)


def test_samplers_live_across_epochs_and_evaluations(store_path):
    trainer = Trainer(open_store(store_path), config(epochs=3, samplers=1), progress=False)
    pipe = trainer.strategy.pipeline
    try:
        m = trainer.fit()[0]
        assert len(pipe.procs) == 1 and pipe.procs[0].is_alive()
        assert (m["sample_busy_s"] > 0).all()     # every epoch sampled in the process
    finally:
        pipe.close()
