"""ESDG's time-block checkpointing gives the gradients of the plain run."""

import pytest
import torch

from dynagnn.data.store import open_store
from dynagnn.models import build_model
from dynagnn.train.checkpoint import blocks, run_blocks
from dynagnn.train.transfer import load_host_snapshots
from dynagnn.train.transfer import SnapshotFeeder
from tests.testing.devices import DEVICES


def test_blocks_cover_in_order():
    assert blocks(range(7), 3) == [[0, 1, 2], [3, 4], [5, 6]]
    assert blocks(range(2), 5) == [[0], [1]]
    assert blocks(range(4), 1) == [[0, 1, 2, 3]]


def grads(model_name, store, nb, tbptt=None, capacity=None, device="cpu"):
    torch.manual_seed(0)
    model = build_model(model_name, store.features().shape[1], 5).to(device)
    feeder = SnapshotFeeder(load_host_snapshots(store), store.features(), store.num_nodes, device, "full", capacity)

    def step(t, st):
        adj, x = feeder.get(t)
        return model.step(adj, x, st)

    h, _ = run_blocks(step, range(store.num_snapshots), model.initial_state(store.num_nodes, device), nb, tbptt)
    (h.square().sum()).backward()
    return h.detach(), {k: p.grad.clone() for k, p in model.named_parameters() if p.grad is not None}, feeder


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("model_name", ["tgcn", "evolvegcn_o", "wdgcn", "gcrn"])
@pytest.mark.parametrize("nb", [2, 3, 8])
def test_checkpointed_gradients_equal_plain(link_store, model_name, nb, device):
    store = open_store(link_store)
    h0, g0, _ = grads(model_name, store, 1, device=device)
    h1, g1, _ = grads(model_name, store, nb, device=device)
    torch.testing.assert_close(h1, h0)
    assert g0.keys() == g1.keys() and g0
    for k in g0:
        torch.testing.assert_close(g1[k], g0[k], rtol=1e-5, atol=1e-6)


def test_rerun_fetches_block_again(link_store):
    """With room for one block only, the backward re-run sends the block's snapshots a second time."""
    store = open_store(link_store)
    T = store.num_snapshots
    _, _, plain = grads("tgcn", store, 1, capacity=T)
    _, _, ckpt = grads("tgcn", store, 2, capacity=T // 2)
    assert plain.stats["full"] == T
    assert ckpt.stats["full"] > T  # the re-run of an evicted block crosses again


def test_truncated_bptt_cuts_gradient(link_store):
    """With tbptt=k the gradient of the loss at the end reaches only the last k steps: a model
    whose parameters act only through the state gets the gradient of the truncated run."""
    store = open_store(link_store)
    _, g_full, _ = grads("tgcn", store, 1)
    _, g_tb, _ = grads("tgcn", store, 1, tbptt=2)
    assert any(not torch.allclose(g_full[k], g_tb[k]) for k in g_full)
    _, g_tb_ck, _ = grads("tgcn", store, 4, tbptt=2)
    for k in g_tb:
        torch.testing.assert_close(g_tb_ck[k], g_tb[k], rtol=1e-5, atol=1e-6)
