"""The frames strategy (PiPAD) computes the sequential strategy's step: the same loss, embeddings and
every gradient for S = 1, 2, 4, 8, with the reuse cache and the pipeline on and off; reuse skips the
first aggregation and its feed in later epochs; the tuner freezes S after a profiling epoch; a
model whose first aggregation reads the state gets no reuse, says so, and is still exact."""

import dataclasses
import logging

import numpy as np
import pytest
import torch

from dynagnn.errors import ConfigError
from dynagnn.schedule.tuner import Candidate, candidates, fastest
from dynagnn.train.engine import TrainConfig, Trainer, train
from dynagnn.train.frame_engine import ReuseCache
from dynagnn.train.strategies.frames import Frames, FramesOptions
from dynagnn.train.strategies.sequential import Sequential

from tests.testing.devices import DEVICES

from tests.testing.stores import small_store

WINDOW = 8
MODELS = ["tgcn_x", "tgcn", "evolvegcn_o", "evolvegcn_h", "wdgcn", "mpnn_lstm", "gcrn"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return small_store(tmp_path_factory.mktemp("frames") / "regress.zarr", labels="regress", num_snapshots=13)


@pytest.fixture
def model_name(request):
    return request.param


def trainer(store, model, **kw):
    """"tgcn_x" is T-GCN with graph_input "x" (PyG Temporal's TGCN, PiPAD's T-GCN)."""
    if model == "tgcn_x":
        model, kw = "tgcn", {"graph_input": "x", **kw}
    cfg = TrainConfig.of(**{"model": model, "hidden": 5, "window": WINDOW, "epochs": 1, "batch_windows": 2, **kw})
    return Trainer(store, cfg, progress=False)


def one_step(run, strategy):
    """(loss, {param: grad}, embedding of the evaluation window) of the epoch's first step."""
    for p in run.parameters():
        p.grad = None
    run.epoch = 1
    strategy.start_epoch(1)
    ends = strategy.steps(run.train_ends, run.batch_windows)[0]
    loss = strategy.train_step(ends)
    named = list(run.model.named_parameters()) + [("head." + k, p) for k, p in run.head.named_parameters()]
    grads = {k: p.grad.clone() for k, p in named if p.grad is not None}
    with torch.no_grad():
        h = strategy.embed(run.windows([run.split.val[0]])[0])
    return loss, grads, h


def frames_on(run, **options):
    s = Frames(run.config, FramesOptions(**{"frame_reuse": "on", "pipeline": "on", **options}))
    s.setup(run)
    return s


def assert_same(got, ref):
    """Within 1e-5 on the CPU; on a GPU within 1e-4: cuSPARSE sums a frame's block-diagonal
    aggregation in another order than one snapshot's (measured: embeddings up to 3.6e-5 apart on an
    H100, loss and gradients within 1e-5)."""
    loss, grads, h = got
    rloss, rgrads, rh = ref
    tol = 1e-4 if h.is_cuda else 1e-5
    assert loss == pytest.approx(rloss, rel=1e-5)
    assert grads.keys() == rgrads.keys() and grads
    for k in rgrads:
        torch.testing.assert_close(grads[k], rgrads[k], rtol=1e-5, atol=1e-5, msg=k)
    torch.testing.assert_close(h, rh, rtol=tol, atol=tol)


# every S with reuse on and off and with the pipeline on and off, each (reuse, pipeline) pair twice (a
# pairwise cover: the pipeline changes where a frame is prepared, never what it holds); the last
# case caps S_per at 1 (frames of single-snapshot partitions, as the measured tuner may choose)
CASES = [(1, "on", "on"), (1, "off", "off"), (2, "on", "off"), (2, "off", "on"), (4, "on", "on"),
         (4, "off", "off", 1), (8, "on", "off"), (8, "off", "on")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("model_name", MODELS, indirect=True)
def test_frames_equal_sequential(store, model_name, device):
    """On cuda the frames move through pinned host memory and the side stream (PiPAD's pipelined
    feed); sequential on the same GPU is the reference."""
    tr = trainer(store, model_name, device=device)
    run = tr.run
    ref = one_step(run, tr.strategy)
    for S, reuse, pipeline, *cap in CASES:
        s = frames_on(run, frame_size=S, frame_reuse=reuse, pipeline=pipeline)
        if cap:
            s.engine.tuner.max_s_per = cap[0]
        assert_same(one_step(run, s), ref)
        if reuse == "on":   # again: every Â_t X_t now comes from the cache (the first met partial misses)
            assert_same(one_step(run, s), ref)
        stats = s.engine.prefetch.take_stats()
        assert (stats["prefetched"] > 0) == (pipeline == "on")
        s.engine.close()


@pytest.mark.parametrize("model_name", ["tgcn_x", "mpnn_lstm"], indirect=True)
def test_reuse_skips_the_first_aggregation_and_its_feed(store, model_name):
    """Epoch 0 aggregates each training snapshot's X once; epoch 1 none (without reuse: every window,
    every epoch). With a device too small to keep every partition, epoch 1 feeds T-GCN "x" nothing
    (it reads only ÂX), while MPNN-LSTM is fed its partitions for layer 2 as without reuse."""
    kw = {"strategy": "frames", "frame_size": 4, "epochs": 2, "patience": 2, "frame_memory_mb": 0.1}
    tr = trainer(store, model_name, **kw)
    metrics, _ = tr.fit()
    first = metrics["first_layer_aggregations"].tolist()
    trained = {t for e in tr.split.train for t in range(e - WINDOW + 1, e + 1)}
    assert first == [len(trained), 0]
    m_off, _ = trainer(store, model_name, frame_reuse="off", **kw).fit()
    assert m_off["first_layer_aggregations"].tolist() == [len(tr.split.train) * WINDOW] * 2
    fed, fed_off = metrics["bytes_fed"].iloc[1], m_off["bytes_fed"].iloc[1]
    assert fed_off > 0
    assert fed == (0 if tr.model.frame_needs() == {"ax"} else fed_off)
    np.testing.assert_allclose(metrics["loss"], m_off["loss"], rtol=1e-5)



def test_the_engine_s_feeder_copies_every_snapshot_when_built_on_a_cpu(store):
    """As the sequential loop's (SnapshotFeeder._preload): a copy made by the step that first read
    it pinned a page among the step's temporaries, and the heap grew over the first epoch."""
    tr = trainer(store, "tgcn", strategy="frames", frame_size=2)
    feeder = tr.strategy.engine.feeder
    assert feeder.stats["full"] == tr.store.num_snapshots
    before = feeder.stats["full"]
    one_step(tr.run, tr.strategy)
    assert feeder.stats["full"] == before   # no copy made in a step


def test_the_pipeline_builds_the_partitions_the_inline_feed_builds(store):
    """With reuse, the producer prepares a frame before the frames ahead of it have stored their first
    aggregations: it builds a partition only where no earlier frame of the schedule covers every
    snapshot's entry, as the inline feed finds them missing. Pipelined or not, the epoch builds the
    same partitions and trains the same losses (it built one per frame, never read), and none is kept
    after the first epoch (no training frame reads one again)."""
    got = {}
    for pipeline in ("on", "off"):
        tr = trainer(store, "wdgcn", strategy="frames", frame_size=4, epochs=2, patience=2, pipeline=pipeline)
        engine, built = tr.strategy.engine, []
        host_part = engine._host_part

        def recorded(b, s, host_part=host_part, engine=engine, built=built):
            if (b, s) not in engine._host_parts:
                built.append((b, s))
            return host_part(b, s)
        engine._host_part = recorded
        metrics, _ = tr.fit()
        got[pipeline] = (built, metrics["loss"].to_numpy())
        assert not engine._host_parts   # none is read after the first epoch: none is kept
    assert sorted(got["on"][0]) == sorted(got["off"][0])
    frames = len({k for e in tr.split.train for k in tr.strategy.engine.frames_of(range(e - WINDOW + 1, e + 1))})
    assert 0 < len(got["off"][0]) < frames
    np.testing.assert_allclose(got["on"][1], got["off"][1], rtol=1e-5)

def test_tuner_freezes_after_a_profiling_epoch(store):
    """No --frame-size: epoch 0 runs one snapshot per frame, then the tuner times its candidates on
    real windows' whole training steps and keeps the fastest; the trials leave training as it was
    (the loss curve is sequential's). With timings injected (here: faster the larger S) the choice is
    the window, or what a small memory bound allows."""
    ref, _ = trainer(store, "evolvegcn_o", epochs=3, patience=3).fit()
    tr = trainer(store, "evolvegcn_o", strategy="frames", epochs=3, patience=3, pipeline="off")
    tuner = tr.strategy.engine.tuner
    tuner.bytes_available = 2.5 * tuner.snapshot_bytes     # S <= 2: three candidates keep the test short
    got, _ = tr.fit()
    assert set(tuner.timings) == set(candidates(2))   # EvolveGCN-O aggregates layer 2: S_per matters
    assert all(len(t) == 3 and len(t[0]) == 3 for t in tuner.timings.values())  # 3 rounds of 3 windows
    best = fastest(tuner.timings)
    assert got["frame_size"].tolist() == [best.frame_size] * 3 and tuner.max_s_per == best.max_s_per
    assert got["tuning_s"].iloc[0] > 0 and (got["tuning_s"].iloc[1:] == 0).all()
    np.testing.assert_allclose(got["loss"], ref["loss"], rtol=1e-5)
    for memory, want in ((None, WINDOW), (2.5, 2)):
        tr = trainer(store, "wdgcn", strategy="frames", epochs=2, patience=2, pipeline="off")
        engine = tr.strategy.engine
        engine._trial = lambda ranges, **kw: (lambda c: [1.0 / c.frame_size])
        if memory:
            engine.tuner.bytes_available = memory * engine.tuner.snapshot_bytes
        m, _ = tr.fit()
        assert m["frame_size"].tolist() == [want] * 2
        # WD-GCN reads only the reused ÂX: one candidate per S
        assert sorted(engine.tuner.timings) == [Candidate(s, s) for s in (1, 2, 4, 8) if s <= want]


def test_trials_time_the_whole_step_and_leave_the_gradients(store):
    """The trial's step is the epoch's: the head's loss and backward run (its parameters get a
    gradient during the trial), and every ``.grad`` is put back afterwards."""
    tr = trainer(store, "evolvegcn_o", strategy="frames", epochs=1, patience=1, pipeline="off")
    s, run = tr.strategy, tr.run
    seen = []
    step = s._trial_step

    def spy(ts):
        step(ts)
        seen.append([p.grad is not None and bool(p.grad.abs().sum() > 0) for p in run.head.parameters()])
    before = [torch.full_like(p, 7.0) for p in run.parameters()]
    for p, g in zip(run.parameters(), before):
        p.grad = g.clone()
    windows = s._epoch_windows()
    times = s.engine._trial(windows, step=spy, params=run.parameters())(Candidate(1, 1))
    assert len(times) == len(seen) == 3 and all(all(h) for h in seen)
    assert all(torch.equal(p.grad, g) for p, g in zip(run.parameters(), before))
    s.engine.close()


@pytest.mark.parametrize("spare", [True, False])
@pytest.mark.parametrize("faster", ["on", "off"])
def test_pipeline_auto_is_chosen_with_the_frame_size(store, faster, spare, monkeypatch):
    """pipeline auto: through the profiling epoch on where the producer has a core of its own, else
    off; then the candidates are timed with the pipeline off, and the winner and S = 1 are timed
    again with it off and on, the fastest kept (timings injected); pipeline on is never
    second-guessed. The loss curve is sequential's."""
    import dynagnn.train.frame_engine as frame_engine

    monkeypatch.setattr(frame_engine, "producer_has_core", lambda device, processes=1: spare)
    ref, _ = trainer(store, "wdgcn", epochs=2, patience=2).fit()
    tr = trainer(store, "wdgcn", strategy="frames", epochs=2, patience=2)
    engine = tr.strategy.engine
    assert engine.prefetch.enabled == spare and not engine.pipeline_decided

    def measure(c):
        return [(1.0 if c.pipeline == (faster == "off") else 0.5) / c.frame_size]
    engine._trial = lambda ranges, **kw: measure
    got, _ = tr.fit()
    assert got["pipeline_on"].tolist() == [float(faster == "on")] * 2
    assert got["frame_size"].tolist() == [WINDOW] * 2
    assert sorted(engine.tuner.finals) == [Candidate(s, s, p) for s in (1, WINDOW) for p in (False, True)]
    np.testing.assert_allclose(got["loss"], ref["loss"], rtol=1e-5)
    tr = trainer(store, "wdgcn", strategy="frames", epochs=2, patience=2, pipeline="on")
    tr.strategy.engine._trial = lambda ranges, **kw: (lambda c: [1.0 / c.frame_size])
    assert tr.fit()[0]["pipeline_on"].tolist() == [1.0, 1.0]
    assert not tr.strategy.engine.tuner.finals


def test_state_reading_models_get_no_reuse_and_stay_exact(store, caplog):
    tr = trainer(store, "tgcn")   # "xh": its first aggregation reads [X ‖ H]
    ref = one_step(tr.run, tr.strategy)
    with caplog.at_level(logging.INFO, logger="dynagnn.train.frame_engine"):
        s = frames_on(tr.run, frame_size=4)
    assert not s.engine.reuse and "not reused" in caplog.text
    assert_same(one_step(tr.run, s), ref)
    s.engine.close()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("model_name", ["tgcn", "evolvegcn_o"], indirect=True)
def test_sequential_with_the_pipeline_is_sequential(store, model_name, device):
    """PiPAD's -A: the producer feeds snapshot t+1 while t computes; the step is unchanged."""
    tr = trainer(store, model_name, device=device)
    ref = one_step(tr.run, tr.strategy)
    s = Sequential(tr.run.config, dataclasses.replace(tr.strategy.options, pipeline="on"))
    s.setup(tr.run)
    assert_same(one_step(tr.run, s), ref)
    assert s.prefetch.take_stats()["prefetched"] > 0
    s.prefetch.close()


def test_bounded_device_cache_keeps_the_frames_in_flight():
    """Fewer device slots than snapshots: entries move host -> device in the order asked, the least
    recently used one outside ``keep`` gives up its slot, and every view holds the host values (the
    two buffers kept apart on the CPU as on a GPU; by default a CPU's are one)."""
    T, N, F = 6, 3, 2
    d = ReuseCache(T, N, F, torch.device("cpu"), slots=3)
    assert d.dev is d.host and d.identity
    c = ReuseCache(T, N, F, torch.device("cpu"), slots=3, shared=False)
    vals = torch.arange(T * N * F, dtype=torch.float32).reshape(T, N, F)
    c.store([0, 1], vals[0:2], keep=set())
    c.store([2], vals[2:3], keep={0, 1})
    c.store([3, 4], vals[3:5], keep={3, 4})      # evicts 0 and 1 (2 was used last)
    assert c.missing(range(T)) == [5] and not c.resident[0] and c.resident[2]
    assert c.fetch([0], keep={3, 4}) == N * F * 4   # back from the host; 2 gives up its slot
    assert not c.resident[2] and c.resident[3] and c.resident[4]
    torch.testing.assert_close(c.view([3, 4, 0]), vals[[3, 4, 0]])


def test_frames_refuse_what_they_cannot_run(store):
    for kw, msg in [({"workers": 2}, "1 worker"), ({"checkpoint_blocks": 2}, "checkpoint_blocks 1"),
                    ({"transfer": "diff"}, "transfer full")]:
        with pytest.raises(ConfigError, match=msg):
            train(store, "unused", TrainConfig.of(model="wdgcn", strategy="frames", window=WINDOW, **kw))


def test_fused_tgcn_recurrence_gradients():
    """T-GCN "x"'s hand-written frame recurrence: every input's gradient (the incoming state's too,
    which BLAD's p2 hands back to p1) checked numerically in float64."""
    from dynagnn.models.tgcn import _GRURecurrence

    g = torch.Generator().manual_seed(0)
    S, N, H = 3, 4, 2
    args = [torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True)
            for shape in ((S, N, 2 * H), (S, N, H), (N, H), (H, 2 * H), (H, H))]
    assert torch.autograd.gradcheck(_GRURecurrence.apply, args)


def test_fused_gcrn_recurrence():
    """GCRN's hand-written frame recurrence: every input's gradient checked numerically in float64 on
    directed snapshots (the backward multiplies by Âᵀ), and its states equal to GCRN.step stepped S
    times from the same ``Â X W_x + b``."""
    from dynagnn.graph.csr import Adjacency, csr_matrix
    from dynagnn.models.gcrn import GCRN, _GCRNRecurrence
    from dynagnn.sortedkeys import row_offsets

    g = torch.Generator().manual_seed(0)
    S, N, F, H = 3, 5, 3, 2
    adjs = []
    for _ in range(S):
        a = (torch.rand(N, N, generator=g) < 0.4).double() * torch.rand(N, N, generator=g, dtype=torch.float64)
        a = a + torch.eye(N, dtype=torch.float64)
        m = a.to_sparse_coo().coalesce()
        r, c = m.indices()
        adjs.append(Adjacency(csr_matrix(row_offsets(r.numpy(), N), c, m.values(), N), symmetric=False))
    args = [torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True)
            for shape in ((S, N, 3 * H), (N, H), (H, 2 * H), (H, H))]
    assert torch.autograd.gradcheck(lambda px, h, wh, whh: _GCRNRecurrence.apply(px, h, wh, whh, adjs), args)
    model = GCRN(F, H).double()
    xs = torch.randn(S, N, F, generator=g, dtype=torch.float64)
    state, ref = (args[1].detach(),), []
    for adj, x in zip(adjs, xs):
        h, state = model.step(adj, x, state)
        ref.append(h)
    px = torch.stack([model.conv_x(adj, x) for adj, x in zip(adjs, xs)])
    got = _GCRNRecurrence.apply(px, args[1].detach(), model.conv_h.weight, model.conv_hh.weight, adjs)
    torch.testing.assert_close(got, torch.stack(ref))


def test_fused_evolvegcn_o_weight_chain():
    """EvolveGCN-O's frame path evolves a layer's S weights as one hand-fused chain: every input's
    gradient checked numerically in float64, and its weights equal to MatGRUCell stepped S times."""
    from dynagnn.models.evolvegcn import MatGRUCell, _MatGRUChain

    g = torch.Generator().manual_seed(0)
    F, H, S = 3, 2, 4
    args = [torch.randn(*shape, generator=g, dtype=torch.float64, requires_grad=True)
            for shape in ((3 * F, F), (F, F), (3 * F, H), (F, H))]
    assert torch.autograd.gradcheck(lambda m, u, b, q: _MatGRUChain.apply(m, u, b, q, S), args)
    cell = MatGRUCell(F, H).double()
    w, ref = args[3].detach(), []
    for _ in range(S):
        w = cell(w, w)
        ref.append(w)
    m = torch.cat([cell.W[0] + cell.U[0], cell.W[1] + cell.U[1], cell.W[2]])
    torch.testing.assert_close(_MatGRUChain.apply(m, cell.U[2], torch.cat(list(cell.B)), args[3].detach(), S),
                               torch.stack(ref))


def test_frame_lstm_equals_the_cell_loop():
    """WD-GCN's and MPNN-LSTM's frame path runs the LSTMCell's weights as one sequence LSTM: the same
    outputs, final state and gradients as the cell stepped W times."""
    from dynagnn.models.base import lstm_frame, lstm_over_time

    cell = torch.nn.LSTMCell(3, 2)
    ys = torch.randn(4, 5, 3, requires_grad=True)
    st = (torch.randn(5, 2, requires_grad=True), torch.randn(5, 2, requires_grad=True))
    outs = []
    for fn in (lstm_frame, lstm_over_time):
        hs, (h, c) = fn(cell, ys, st)
        loss = (hs ** 2).sum() + (c * 3).sum()
        outs.append((hs, c) + torch.autograd.grad(loss, [ys, *st, *cell.parameters()]))
    for a, b in zip(*outs):
        torch.testing.assert_close(a, b)
