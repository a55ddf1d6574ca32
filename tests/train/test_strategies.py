"""Every strategy computes the sequential strategy's step: same loss and gradients with the same B,
on 2 processes and on 1; its counted bytes equal the closed forms of analysis/commvolume/.

Each equivalence runs on cpu (2 gloo processes) and, where a GPU is present, on cuda: sequential on
the GPU is the reference, and the two workers share that GPU through gloo with host staging (nccl
refuses two ranks on one device)."""

import pytest

from dynagnn.analysis.commvolume import count_vertex_volume, snapshot_redistribution_volume
from dynagnn.data.store import open_store
from dynagnn.distributed.testing import run_on
from dynagnn.train.engine import Trainer
from dynagnn.train.strategies.vertex import vertex_parts

from tests.testing.devices import DEVICES
from tests.testing.steps import ENDS, HIDDEN, assert_same_step, one_step, strategy_steps
from tests.testing.steps import strategy_config as config

from tests.testing.stores import small_store
from tests.testing.limits import PROCESS_HANG_S

VERTEX_MODELS = ["tgcn", "evolvegcn_o", "wdgcn", "mpnn_lstm", "gcrn", "cdgcn", "tmgcn"]
SNAPSHOT_MODELS = ["wdgcn", "mpnn_lstm", "cdgcn", "tmgcn", "evolvegcn_o"]


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    d = tmp_path_factory.mktemp("strategies")
    return {"link": small_store(d / "link.zarr"),
            "class": small_store(d / "class.zarr", labels="class"),
            "directed": small_store(d / "directed.zarr", directed=True, seed=3)}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("strategy,models,extra", [
    ("vertex", VERTEX_MODELS, {"partitioner": "metis"}),
    ("snapshot", SNAPSHOT_MODELS, {}),
])
def test_two_workers_equal_sequential(stores, strategy, models, extra, device):
    extra = {**extra, "device": device}
    for kind in ("link", "class"):
        store = stores[kind]
        ref = {m: one_step(store, config(m, "sequential", 1, device=device)) for m in models}
        r0, r1 = run_on(2, strategy_steps, store, models, strategy, extra, timeout=PROCESS_HANG_S, device=device)
        for m in models:
            assert_same_step(r0[m], ref[m])
            assert_same_step(r1[m], ref[m][:2] + (None, None))
            assert (r1[m][2] is None) == (strategy == "snapshot")  # embeddings go to rank 0


def test_vertex_hash_partition_on_a_directed_store(stores):
    store = stores["directed"]
    ref = {m: one_step(store, config(m, "sequential", 1)) for m in ("tgcn", "evolvegcn_o")}
    r0, r1 = run_on(2, strategy_steps, store, ["tgcn", "evolvegcn_o"], "vertex", {"partitioner": "hash"}, timeout=PROCESS_HANG_S)
    for m in ref:
        assert_same_step(r0[m], ref[m])
        assert_same_step(r1[m], ref[m][:2] + (None, None))


@pytest.mark.parametrize("device", DEVICES)
def test_snapshot_worker_without_items(stores, device):
    """Windows of one snapshot: the step's 2 items give each worker one, the evaluation window's
    single item leaves rank 1 with none; it still joins every all-to-all."""
    ref = one_step(stores["link"], config("wdgcn", "sequential", 1, window=1, device=device))
    r0, r1 = run_on(2, strategy_steps, stores["link"], ["wdgcn"], "snapshot", {"window": 1, "device": device}, timeout=PROCESS_HANG_S,
                    device=device)
    assert_same_step(r0["wdgcn"], ref)
    assert_same_step(r1["wdgcn"], ref[:2] + (None, None))


@pytest.mark.parametrize("strategy,model", [("vertex", "gcrn"), ("vertex", "mpnn_lstm"),
                                            ("snapshot", "wdgcn"), ("snapshot", "evolvegcn_o")])
@pytest.mark.parametrize("device", DEVICES)
def test_one_worker_is_sequential(stores, strategy, model, device):
    ref = one_step(stores["link"], config(model, "sequential", 1, device=device))
    assert_same_step(one_step(stores["link"], config(model, strategy, 1, device=device)), ref)


def test_vertex_halo_bytes_equal_the_closed_form(stores):
    """WD-GCN aggregates once per snapshot; F = 6 > H = 5, so it updates first and aggregates H
    columns. Each halo moves Σ_v λ_t(v) rows, commvolume's count on the transposed edges (the owner
    of column v sends to the parts of the rows that read it), forward and again backward."""
    store_path = stores["directed"]
    r0, r1 = run_on(2, strategy_steps, store_path, ["wdgcn"], "vertex", {"partitioner": "hash"}, timeout=PROCESS_HANG_S)
    host = Trainer(store_path, config("wdgcn", "sequential", 1), progress=False).run.host
    N = open_store(store_path).num_nodes
    parts = vertex_parts("hash", host, N, 2, 0)
    windows = [range(e - 2, e + 1) for e in ENDS]
    rows = sum(count_vertex_volume([(host[t].keys % N, host[t].keys // N)], N, parts, 2)
               for w in windows for t in w)
    counts = [r0["wdgcn"][3], r1["wdgcn"][3]]   # the training step only
    assert sum(c["halo"][0] for c in counts) == rows * HIDDEN * 4
    assert sum(c["halo.backward"][0] for c in counts) == rows * HIDDEN * 4


def test_snapshot_redistribution_bytes_equal_esdg_exact_form(stores):
    r0, r1 = run_on(2, strategy_steps, stores["link"], ["mpnn_lstm"], "snapshot", {}, timeout=PROCESS_HANG_S)
    N = open_store(stores["link"]).num_nodes
    T = len(ENDS) * 3
    S, H = 2 * HIDDEN + 6, 2 * HIDDEN + 6   # MPNN-LSTM: spatial [H1 ‖ H2 ‖ X], temporal [a ‖ b ‖ X]
    rows = snapshot_redistribution_volume(T, N, 2).units
    c = [r0["mpnn_lstm"][3], r1["mpnn_lstm"][3]]
    assert sum(x["redistribute1"][0] for x in c) == rows * S * 4
    assert sum(x["redistribute2"][0] for x in c) == rows * H * 4
    assert sum(x["redistribute1.backward"][0] for x in c) == rows * S * 4
    assert sum(x["redistribute2.backward"][0] for x in c) == rows * H * 4
