"""The StackedGNN seam: spatial/temporal parts compose to step, and temporal is row-independent
and runs a whole window at once (what ESDG's snapshot partitioning and PiPAD's frames rely on)."""

import pytest
import torch

from dynagnn.models import MODELS, build_model
from dynagnn.models.base import StackedGNN

from .graphs import N, window

F, H, T = 5, 4, 5

STACKED = sorted(k for k, cls in MODELS.items() if issubclass(cls, StackedGNN))
CASES = [(k, {}) for k in STACKED] + [("mpnn_lstm", {"embedding": "last"}), ("tmgcn", {"w": 2}), ("tmgcn", {"w": 1})]


def test_the_stacked_models():
    assert {"wdgcn", "mpnn_lstm", "cdgcn", "tmgcn"} <= set(STACKED)
    with pytest.raises(ValueError, match="w must be >= 1"):
        build_model("tmgcn", F, H, w=0)


def make(name, kw, seed=0):
    torch.manual_seed(seed)
    model = build_model(name, F, H, **kw)
    with torch.no_grad():
        for pname, prm in model.named_parameters():
            if "bias" in pname:
                prm.add_(0.1 * torch.randn_like(prm))
    return model


@pytest.mark.parametrize("name, kw", CASES)
def test_window_at_once_on_a_row_subset_equals_steps(name, kw):
    adjs, _, xs = window(T=T, n=N, f=F, seed=3)
    model = make(name, kw)
    with torch.no_grad():
        steps, state = [], model.initial_state(N)
        for adj, x in zip(adjs, xs):
            h, state = model.step(adj, x, state)
            steps.append(h)
        final = model.split_state(state)

        rows = torch.randperm(N, generator=torch.Generator().manual_seed(1))[: N // 2]
        zs = list(xs)
        for l in range(model.num_layers):
            init = model.temporal_state(l, N, "cpu")
            assert all(s.shape[0] == N for s in init)
            ys = torch.stack([model.spatial(l, adj, z, x) for adj, z, x in zip(adjs, zs, xs)])  # [T, N, S]
            full, st_full = model.temporal(l, ys, init)
            sub, st_sub = model.temporal(l, ys[:, rows], tuple(s[rows] for s in init))
            assert full.shape[:2] == (T, N)
            torch.testing.assert_close(sub, full[:, rows], rtol=0, atol=1e-6)
            for a, b, c in zip(st_sub, st_full, final[l]):
                torch.testing.assert_close(a, b[rows], rtol=0, atol=1e-6)
                torch.testing.assert_close(b, c, rtol=0, atol=1e-6)
            zs = list(full)
        for t in range(T):
            assert zs[t].shape == (N, model.out_dim)
            torch.testing.assert_close(zs[t], steps[t], rtol=0, atol=1e-6)
        # and a window cut in two runs, the second from the first's state
        ys = torch.stack([model.spatial(0, adj, x, x) for adj, x in zip(adjs, xs)]) if model.num_layers == 1 else None
        if ys is not None:
            a, st = model.temporal(0, ys[:2], model.temporal_state(0, N))
            b, _ = model.temporal(0, ys[2:], st)
            torch.testing.assert_close(torch.cat([a, b]), torch.stack(steps), rtol=0, atol=1e-6)


@pytest.mark.parametrize("name, kw", CASES)
def test_initial_state_is_the_layers_states(name, kw):
    model = make(name, kw)
    flat = model.initial_state(N)
    per_layer = [model.temporal_state(l, N) for l in range(model.num_layers)]
    assert len(flat) == sum(len(s) for s in per_layer) == sum(model.state_sizes())
    assert all(s.shape[0] == N for s in flat)
    with pytest.raises(ValueError):
        model.split_state(flat + flat[:1])
