"""PyTorch Geometric layers inside a dynagnn model: ``Adjacency.edge_index``/``edge_weight`` are PyG's
view of Â (GCNConv without its own normalisation computes dynagnn's product), built once per snapshot;
examples/gconv_gru.py's GConvGRU on PyG's ChebConv equals the same cell on dynagnn's sparse operator,
trains under frames and group with sequential's loss and gradients, and the vertex split refuses it."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("torch_geometric", reason="PyTorch Geometric is the optional extra dynagnn[pyg]")

from dynagnn.data.store import open_store
from dynagnn.distributed.testing import run_on
from dynagnn.errors import ConfigError
from dynagnn.graph import csr
from dynagnn.schedule.plan import build_plan
from dynagnn.tasks.snapshot import training_ends
from dynagnn.train.engine import check_run

from tests.testing.stores import small_store
from tests.testing.steps import assert_same_loss_and_grads, assert_same_step, group_config, group_step, group_steps, one_step
from tests.testing.steps import strategy_config as config

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import gconv_gru  # noqa: E402  (examples/ is not a package: the path above)
from tests.testing.limits import PROCESS_HANG_S

MODEL = "gconv_gru:GConvGRU"
pytestmark = pytest.mark.usefixtures("clean_model_registry")


def _directed(n=9, m=30, seed=0):
    rng = np.random.default_rng(seed)
    keys = np.unique(rng.integers(0, n, m) * n + rng.integers(0, n, m))
    row, col = keys // n, keys % n
    w = rng.uniform(0.5, 2.0, row.size).astype(np.float32)
    return csr.normalize(row, col, w, n), row, col, w


def test_edge_index_is_pygs_view_of_the_operator_built_once():
    from torch_geometric.nn import GCNConv

    adj, row, col, w = _directed()
    assert adj.edge_index is adj.edge_index and adj.edge_weight is adj.edge_weight   # kept with the snapshot
    dense = csr.dense_normalized(row, col, w, adj.num_nodes).double()   # Â[target, source], computed apart
    src, dst = adj.edge_index
    rebuilt = torch.zeros(dense.shape, dtype=torch.float64)
    rebuilt[dst, src] = adj.edge_weight.double()
    torch.testing.assert_close(rebuilt, dense, rtol=1e-6, atol=1e-7)
    conv = GCNConv(4, 3, normalize=False, bias=False)
    x = torch.randn(adj.num_nodes, 4)
    torch.testing.assert_close(conv(x, adj.edge_index, adj.edge_weight), csr.aggregate(adj, conv.lin(x)),
                               rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(conv(x, adj.adj_t), csr.aggregate(adj, conv.lin(x)), rtol=1e-5, atol=1e-6)


def test_the_pyg_cell_equals_the_cell_on_dynagnns_operator():
    adj, *_ = _directed(seed=1)
    torch.manual_seed(0)
    pyg = gconv_gru.GConvGRU(4, 5)
    native = gconv_gru.NativeGConvGRU(4, 5)
    native.load_state_dict(pyg.state_dict())
    x = torch.randn(adj.num_nodes, 4)
    outs = []
    for model in (pyg, native):
        state = model.initial_state(adj.num_nodes)
        h1, s1 = model.step(adj, x, state)
        h2, _ = model.step(adj, x * 0.5, s1)
        h2.square().sum().backward()
        outs.append((h1.detach(), h2.detach(), {k: p.grad.clone() for k, p in model.named_parameters()}))
    torch.testing.assert_close(outs[0][0], outs[1][0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(outs[0][1], outs[1][1], rtol=1e-5, atol=1e-5)
    for k in outs[0][2]:
        torch.testing.assert_close(outs[0][2][k], outs[1][2][k], rtol=1e-5, atol=1e-5, msg=k)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return small_store(tmp_path_factory.mktemp("pyg_cell") / "link.zarr", num_snapshots=12)


def test_frames_and_group_equal_sequential(store, tmp_path):
    ref = one_step(store, config(MODEL, "sequential", 1))
    assert_same_step(one_step(store, config(MODEL, "frames", 1, frame_size=3, pipeline="off")), ref)
    st = open_store(store)
    ends, T = training_ends(st, 3), st.num_snapshots
    fwd = np.random.default_rng(0).uniform(1, 10, T)
    path = tmp_path / "plan.json"
    build_plan(fwd, 2 * fwd, group_len=3, num_workers=1, dataset=st.attrs["name"], model=MODEL,
               layer_times=tuple(np.zeros((T, 0)) for _ in range(3)), store_checksum=st.checksum, groups=ends).save(path)
    results = run_on(1, group_steps, store, {"g": (MODEL, "group", str(path), ends)}, procs_per_worker=2, timeout=PROCESS_HANG_S)
    gref = group_step(store, group_config(MODEL, "sequential", 1), ends)
    for res in results:
        assert_same_loss_and_grads(res["g"], gref)


def test_the_vertex_split_refuses_it_by_name(store):
    cfg = config(MODEL, "vertex", 2)
    with pytest.raises(ConfigError) as e:
        check_run(cfg.strategy_cls(cfg), open_store(store), 2)
    assert str(e.value).startswith("the vertex strategy cannot train model gconv_gru:GConvGRU: it reads adj.edge_index "
                                   "or adj.adj_t (a PyTorch Geometric layer)")
    assert "strategies that can: sequential, group" in str(e.value)
