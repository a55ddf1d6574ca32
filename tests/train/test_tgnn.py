"""Sven's tgnn strategies on 2 gloo processes against the events strategy on one: the same losses,
every gradient and the same memory and mailbox (staleness off; TGN and JODIE, APAN once; 1, 2 and 64
micro-batches, 64 leaving pieces empty; tgnn on 1 worker too; DepComm and DepCache too); the stale
all-reduce's shifted gradients and own losses; the bytes each batch sends against the closed forms
of ``analysis.commvolume`` on the same partition and batches; redundancy-free dispatch against the
per-occurrence fetch; no timing barriers on the communication thread, no full-memory allocation;
and a worker that dies ending the run with a clear error.

Where a GPU is present (``pytest -m gpu``), CASES run again on it: the events strategy on the GPU is
the reference, and the two workers share that GPU (gloo with host staging: nccl refuses two ranks on
one device)."""

import numpy as np
import pytest
import torch

from dynagnn.analysis.commvolume import sven_trainer_stats, sven_volumes
from dynagnn.distributed import DistError
from dynagnn.distributed.launch import launch
from dynagnn.distributed.testing import run_on
from dynagnn.train import engine
from dynagnn.train.engine import Trainer, TrainConfig
from dynagnn.train.strategies.tgnn import worker_batches
from tests.testing.devices import HAS_CUDA, needs_gpu
from tests.testing.steps import event_config as config
from tests.testing.stores import event_store
from tests.testing.limits import PROCESS_HANG_S

STEPS = 3
CASES = [("tgn", "tgnn", 1, "hash"), ("tgn", "tgnn", 2, "reflexbicut"), ("jodie", "tgnn", 1, "range"),
         ("jodie", "tgnn", 2, "hash"), ("tgn", "tgnn_depcomm", 2, "hash"), ("tgn", "tgnn_depcache", 1, "hash"),
         ("jodie", "tgnn_depcomm", 1, "hash"), ("apan", "tgnn", 2, "hash"),
         ("tgn", "tgnn", 64, "hash")]  # m > the batch's 50 events: trailing pieces empty on both workers
BYTES = [("tgn", s, 1, "hash") for s in ("tgnn", "tgnn_depcomm", "tgnn_depcache")]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return event_store(tmp_path_factory.mktemp("tgnn") / "store.zarr")


def _no_dropout(model):
    for mod in model.modules():
        if isinstance(mod, torch.nn.Dropout):
            mod.p = 0.0


def _steps(tr, counts=None):
    """STEPS training steps: (loss, gradients) of each, and the memory state after them as
    (ids, memory, memory_ts, mail, mail_ts, mail_valid) of the rows this process holds."""
    s = tr.strategy
    tr.model.train()
    tr.head.train()
    s.start_epoch(0)
    out, sent = [], []
    for unit in tr.split.train[:STEPS]:
        tr.optimizer.zero_grad(set_to_none=True)
        loss = s.train_step([unit])
        params = list(tr.model.parameters()) + list(tr.head.parameters())
        out.append((loss, [None if p.grad is None else _host(p.grad) for p in params]))
        tr.optimizer.step()
        if counts is not None:
            sent.append({k: b for k, (b, _) in tr.comm.take_counts().items()})
    s.after_step()
    s.prefetch.close()
    if hasattr(s.memory, "own"):  # a tgnn strategy's partitioned memory
        ids, store = s.memory.own, s.memory.store
    else:
        ids, store = np.arange(tr.store.num_nodes), s.memory
    state = (ids, *map(_host, (store.memory, store.memory_ts, store.mail, store.mail_ts, store.mail_valid)))
    return out, state, sent, {k: _host(v) for k, v in s.state_buffers().items()}


def _host(t: torch.Tensor) -> torch.Tensor:
    """A host copy (results cross the worker's pipe, and a later step may write the original)."""
    return t.detach().to("cpu", copy=True)


def _trainer(store, model, strategy="events", m=1, partitioner="hash", ctx=None, comm=None, **kw):
    from dynagnn.train.strategies import strategy_class

    takes = strategy_class(strategy).settable()  # the events reference and the fixed partitioners take fewer
    sven = {k: v for k, v in {"micro_batches": m, "memory_partitioner": partitioner}.items() if k in takes}
    cfg = config(model, strategy=strategy, workers=1 if ctx is None else ctx.world_size, **sven, **kw)
    tr = Trainer(store, cfg, progress=False, ctx=ctx, comm=comm)
    _no_dropout(tr.model)
    return tr


def _body(ctx, comm, store):
    results = {case: _steps(_trainer(store, case[0], case[1], case[2], case[3], ctx, comm)) for case in CASES}
    for case in BYTES:
        tr = _trainer(store, case[0], case[1], case[2], case[3], ctx, comm)
        comm.take_counts()
        results[("bytes",) + case] = (tr.strategy.owner, _steps(tr, counts=True)[2])
    fresh = _trainer(store, "tgn", "tgnn", 1, "reflexbicut", ctx, comm)  # another partition than CASES[0]'s
    fresh.strategy.load_state_buffers(results[CASES[0]][3])
    results["loaded"] = fresh.strategy.state_buffers()
    results["dispatch"] = _dispatch(ctx, comm)
    results["allocated"] = _allocations(store, ctx, comm)
    results["wire"] = _wires(ctx, comm)
    results["barriers"] = _barriers_of_steps(_trainer(store, "tgn", "tgnn", 2, "hash", ctx, comm), comm)
    results["stale"] = _steps(_trainer(store, "tgn", "tgnn", 2, "hash", ctx, comm, stale_allreduce=True, lr=0.0))[0]
    results["range"] = _trainer(store, "jodie", "tgnn_range", 1, "hash", ctx, comm).strategy.owner
    return results


def _wires(ctx, comm):
    """Where the bookkeeping crosses a job's Comm: this gloo one, and the same job were it nccl on GPUs."""
    import dataclasses

    from dynagnn.distributed.comm import Comm
    from dynagnn.train.strategies.tgnn_memory import wire_device

    nccl = dataclasses.replace(ctx, device=torch.device(f"cuda:{ctx.rank}"), backend="nccl")
    return str(wire_device(comm)), str(wire_device(Comm(nccl)))


def _allocations(store, ctx, comm):
    """(the node counts of every memory the tgnn strategy's setup allocates, the rows it holds)."""
    from dynagnn.models.tgnn import NodeMemory

    sizes, init = [], NodeMemory.__init__
    NodeMemory.__init__ = lambda self, n, *a, **k: (sizes.append(int(n)), init(self, n, *a, **k))[1]
    try:
        tr = _trainer(store, "tgn", "tgnn", 1, "range", ctx, comm)
    finally:
        NodeMemory.__init__ = init
    return sizes, tr.strategy.memory.own.size


def _barriers_of_steps(tr, comm):
    """(barriers during STEPS training steps, whether the bytes still reach the engine's counters)."""
    import torch.distributed as dist

    calls, barrier = [], dist.barrier
    dist.barrier = lambda *a, **k: (calls.append(1), barrier(*a, **k))[1]
    try:
        comm.take_counts()
        _steps(tr)
    finally:
        dist.barrier = barrier
    return len(calls), comm.take_counts().get("dispatch", (0, 0))[1] > 0


@pytest.fixture(scope="module")
def two(store):
    return run_on(2, _body, store, timeout=PROCESS_HANG_S)


def _cases_on(ctx, comm, store, device):
    return {case: _steps(_trainer(store, case[0], case[1], case[2], case[3], ctx, comm, device=device))
            for case in CASES}


@pytest.fixture(scope="module")
def two_cuda(store):
    return run_on(2, _cases_on, store, "cuda", timeout=PROCESS_HANG_S, device="cuda") if HAS_CUDA else None


@pytest.fixture(scope="module")
def one_cuda(store):
    return {model: _steps(_trainer(store, model, device="cuda")) for model in ("tgn", "jodie", "apan")} \
        if HAS_CUDA else None


@pytest.fixture(scope="module")
def one(store):
    out = {model: _steps(_trainer(store, model)) for model in ("tgn", "jodie", "apan")}
    out["tgn lr 0"] = _steps(_trainer(store, "tgn", lr=0.0))[0]
    return out


@pytest.mark.parametrize("case", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_two_workers_equal_one(one, two, case):
    """Loss, every gradient, memory and mailbox of 2 workers equal the events strategy's on 1."""
    _assert_case_equal(one, two, case)


@needs_gpu
@pytest.mark.parametrize("case", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_two_workers_equal_one_on_the_gpu(one_cuda, two_cuda, case):
    _assert_case_equal(one_cuda, two_cuda, case)


def _assert_case_equal(one, two, case):
    ref_steps, ref_state = one[case[0]][:2]
    for rank in range(2):
        steps = two[rank][case][0]
        for (loss, grads), (rloss, rgrads) in zip(steps, ref_steps):
            assert loss == pytest.approx(rloss, rel=1e-5, abs=1e-6)
            for g, r in zip(grads, rgrads):  # a parameter without a gradient has none on either
                assert (g is None) == (r is None)
                if r is not None:
                    torch.testing.assert_close(g, r, rtol=1e-5, atol=1e-6)
    # the two workers' rows together are every row, each equal to the one worker's; DepCache's
    # workers each hold every row: each copy is compared
    copies = [two[rank][case][1] for rank in range(2)]
    if case[1] != "tgnn_depcache":
        ids = np.concatenate([c[0] for c in copies])
        assert np.array_equal(np.sort(ids), np.arange(ref_state[0].size))
        copies = [(ids, *[torch.cat(parts) for parts in zip(*[c[1:] for c in copies])])]
    for ids, *bufs in copies:
        assert np.array_equal(np.sort(ids), np.arange(ref_state[0].size))
        for b, r in zip(bufs, ref_state[1:]):
            torch.testing.assert_close(b, r[torch.from_numpy(ids)], rtol=1e-5, atol=1e-6)
    assert ref_state[5].any()  # the mailboxes were written
    # what a checkpoint keeps: every node's rows, put together on each worker, the one worker's
    ref_full = one[case[0]][3]
    for rank in range(2):
        full = two[rank][case][3]
        assert set(full) == set(ref_full)
        for k, r in ref_full.items():
            torch.testing.assert_close(full[k], r, rtol=1e-5, atol=1e-6, msg=k)


def test_a_checkpoint_memory_loads_into_another_partition(two):
    """Every node's rows, loaded into workers that partition them otherwise, give back every row."""
    for rank in range(2):
        saved, loaded = two[rank][CASES[0]][3], two[rank]["loaded"]
        for k, v in saved.items():
            assert torch.equal(loaded[k], v), k
    assert saved["memory_ts"].max() > 0


@pytest.mark.parametrize("m", [1, 2, 64])
def test_micro_batches_do_not_change_one_worker(store, one, m):
    """On 1 worker too, the tgnn strategy with m micro-batches (64: more than a batch's 50 events, so
    that pieces fetch nothing) gives the events strategy's losses, gradients and memory: m changes
    the order of the work, not what it computes (with dropout it changes which masks are drawn)."""
    steps, (ids, *bufs) = _steps(_trainer(store, "tgn", "tgnn", m, "hash"))[:2]
    ref_steps, ref_state = one["tgn"][:2]
    for (loss, grads), (rloss, rgrads) in zip(steps, ref_steps):
        assert loss == pytest.approx(rloss, rel=1e-5, abs=1e-6)
        for g, r in zip(grads, rgrads):
            assert (g is None) == (r is None)
            if r is not None:
                torch.testing.assert_close(g, r, rtol=1e-5, atol=1e-6)
    assert np.array_equal(ids, np.arange(ref_state[0].size))
    for b, r in zip(bufs, ref_state[1:]):
        torch.testing.assert_close(b, r, rtol=1e-5, atol=1e-6)


def test_the_stale_allreduce_applies_the_previous_gradient_and_reports_its_own_loss(one, two):
    """Stale, 2 workers, lr 0 (so that the weights stay where one worker's lr-0 run keeps them): step 1
    applies no gradient, step k the one worker's gradient of step k-1; every step reports its own
    loss, the one worker's."""
    ref = one["tgn lr 0"]
    for rank in range(2):
        steps = two[rank]["stale"]
        assert all(g is None for g in steps[0][1])
        for k, (loss, grads) in enumerate(steps):
            assert loss == pytest.approx(ref[k][0], rel=1e-5, abs=1e-6)
            if k:
                for g, r in zip(grads, ref[k - 1][1]):
                    assert (g is None) == (r is None)
                    if r is not None:
                        torch.testing.assert_close(g, r, rtol=1e-5, atol=1e-6)
    assert ref[0][0] != pytest.approx(ref[1][0])  # the losses of steps 1 and 2 differ, so the test can tell


def test_bookkeeping_crosses_on_the_device_nccl_takes(two):
    """Counts, ids and times cross gloo from the host, nccl from the worker's GPU (the nccl path itself
    is not run here: it needs one GPU per worker)."""
    assert [r["wire"] for r in two] == [("cpu", "cuda:0"), ("cpu", "cuda:1")]


def test_a_worker_allocates_only_its_rows(two):
    """The range partition of 25 nodes gives 13 and 12 rows; no worker allocates the N rows first."""
    assert [r["allocated"] for r in two] == [([13], 13), ([12], 12)]


def test_the_communication_thread_runs_no_barriers(two):
    """The engine's Comm times a barrier before each collective; the memory's exchanges and the
    all-reduces on the communication thread run without it, and still count their bytes."""
    assert [r["barriers"] for r in two] == [(0, True), (0, True)]


def _pieces(store, owner):
    """The batches each worker trains in the first STEPS steps (m = 1), rebuilt in this process by
    the events strategy's batch maker: per (worker, step) the sampled occurrences (roots and valid
    neighbours) and the positive endpoints."""
    tr = _trainer(store, "tgn")
    occurrences, originals, trainer, step = [], [], [], []
    for i, rank, b in worker_batches(tr.strategy, owner, 2, tr.split.train[:STEPS]):
        occurrences.append(np.concatenate([b.roots, b.nbr[b.nbr_valid]]))
        originals.append(np.concatenate([b.src, b.dst]))
        trainer.append(rank)
        step.append(i)
    return occurrences, originals, np.array(trainer), np.array(step), tr.model


@pytest.mark.parametrize("case", BYTES, ids=[c[1] for c in BYTES])
def test_bytes_per_batch_equal_the_closed_forms(store, two, case):
    owner = two[0][("bytes",) + case][0]
    occ, orig, trainer, step, model = _pieces(store, owner)
    scheme = {"tgnn": "sven", "tgnn_depcomm": "depcomm", "tgnn_depcache": "depcache"}[case[1]]
    for i in range(STEPS):
        pick = step == i
        stats = sven_trainer_stats([occ[j] for j in np.flatnonzero(pick)], [orig[j] for j in np.flatnonzero(pick)],
                                   trainer[pick], owner, 2)
        want = sven_volumes(stats, None, owner.size, model.memory_dim, model.edge_dim, mailbox=model.mailbox)
        sent = {k: sum(two[r][("bytes",) + case][1][i].get(k, 0) for r in range(2))
                for k in ("dispatch", "dispatch.backward", "aggregation")}
        assert sent["dispatch"] == want[f"{scheme}/dispatch"].bytes
        assert sent["aggregation"] == want[f"{scheme}/aggregation"].bytes
        back = want["depcomm/dispatch_backward"].bytes if scheme == "depcomm" else 0
        assert sent["dispatch.backward"] == back
    # Sven sends fewer rows than DepComm's per-occurrence fetch does whenever a row repeats
    assert sum(s.size for s in occ) > sum(np.unique(s).size for s in occ)


def _dispatch(ctx, comm):
    from dynagnn.models.tgnn import Writes
    from dynagnn.train.strategies.tgnn_memory import PartitionedMemory

    n, rng = 20, np.random.default_rng(0)
    owner = rng.integers(0, 2, n)
    got = {}
    for mode in ("sven", "depcomm"):
        mem = PartitionedMemory(comm, owner, 3, 4, 2, mode)
        store = mem.store
        g = torch.Generator().manual_seed(1)
        full = [torch.randn(n, 3, generator=g), torch.rand(n, generator=g).double(), torch.randn(n, 2, 4, generator=g),
                torch.rand(n, 2, generator=g).double(), torch.rand(n, 2, generator=g) > 0.5]
        own = torch.from_numpy(mem.own)
        for buf, f in zip((store.memory, store.memory_ts, store.mail, store.mail_ts, store.mail_valid), full):
            buf.copy_(f[own])
        ids = np.random.default_rng(5 + ctx.rank).integers(0, n, 30)
        req = mem.plan(ids)
        rows = mem.fetch(req)
        inv = torch.from_numpy(req.inverse)
        got[mode] = [getattr(rows, k)[inv] for k in ("memory", "memory_ts", "mail", "mail_ts", "mail_valid")]
        want = [f[torch.from_numpy(ids)] for f in full]
        for a, b in zip(got[mode], want):
            assert torch.equal(a, b)
        mem.push(Writes(torch.zeros(0, dtype=torch.int64), torch.zeros(0, 3), torch.zeros(0).double(), np.zeros(0, int)),
                 Writes(torch.zeros(0, dtype=torch.int64), torch.zeros(0, 4), torch.zeros(0).double(), np.zeros(0, int)))
    return all(torch.equal(a, b) for a, b in zip(got["sven"], got["depcomm"]))


def test_redundancy_free_dispatch_equals_the_per_occurrence_fetch(two):
    """Each distinct id asked once (sven) or every occurrence (depcomm's plan, raw rows): the same
    rows as a direct read, on 2 processes."""
    assert [r["dispatch"] for r in two] == [True, True]


class _Dies(engine.Trainer):
    def train_epoch(self, epoch):
        if self.ctx.rank == 1:
            import os
            import signal
            os.kill(os.getpid(), signal.SIGKILL)
        return super().train_epoch(epoch)


def _train_and_die(ctx, store, out, cfg):
    engine.Trainer = _Dies  # this process only: rank 1 dies as its first epoch starts
    return engine._train_here(ctx, store, out, cfg, None, False)


def test_a_worker_that_dies_stops_the_run(store, tmp_path):
    out = tmp_path / "o"
    cfg = config("tgn", strategy="tgnn", workers=2, micro_batches=2, epochs=2)
    with pytest.raises(DistError, match="worker 1 was killed by SIGKILL"):
        launch(_train_and_die, 2, store, out, cfg, threads=1, timeout=120)
    assert not out.exists() or not any(out.iterdir())


def test_the_partitioner_variants_own_their_partition(two):
    """tgnn_range splits the rows by id ranges whatever memory_partitioner says."""
    from dynagnn.graph.partition import range_partition

    for rank in range(2):
        assert np.array_equal(two[rank]["range"], range_partition(25, 2))
