"""Every model's step against an independent dense re-implementation (dense Â, plain torch ops).

The dense versions read the model's parameters by name and redo each paper's equations from scratch,
so a wrong gate order, a missing bias or a sparse-operator bug shows up as a mismatch.
"""

import pytest
import torch
from torch.utils.checkpoint import checkpoint

from dynagnn.models import MODELS, GCNLayer, build_model
from tests.testing.devices import DEVICES

from .graphs import N, window

F, H = 5, 4


def lstm(x, h, c, W_ih, W_hh, b_ih, b_hh):
    i, f, g, o = (x @ W_ih.t() + b_ih + h @ W_hh.t() + b_hh).chunk(4, dim=1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def dense_wdgcn(p, As, Xs):
    h = c = torch.zeros(N, H)
    for A, X in zip(As, Xs):
        z = torch.relu(A @ X @ p["gcn.weight"] + p["gcn.bias"])
        h, c = lstm(z, h, c, p["lstm.weight_ih"], p["lstm.weight_hh"], p["lstm.bias_ih"], p["lstm.bias_hh"])
    return h


def dense_tgcn_xh(p, As, Xs):
    h = torch.zeros(N, H)
    Wg, bg, Wc, bc = p["gates.weight"], p["gates.bias"], p["cand.weight"], p["cand.bias"]
    for A, X in zip(As, Xs):
        # Â [X ‖ H] W = Â X W[:F] + Â H W[F:]
        g = torch.sigmoid(A @ X @ Wg[:F] + A @ h @ Wg[F:] + bg)
        r, u = g[:, :H], g[:, H:]
        c = torch.tanh(A @ X @ Wc[:F] + A @ (r * h) @ Wc[F:] + bc)
        h = u * h + (1 - u) * c
    return h


def dense_tgcn_x(p, As, Xs):
    h = torch.zeros(N, H)
    for A, X in zip(As, Xs):
        gc = {k: A @ X @ p[f"gcn_{k}.weight"] + p[f"gcn_{k}.bias"] for k in "urc"}
        lin = lambda k, z: z @ p[f"lin_{k}.weight"].t() + p[f"lin_{k}.bias"]
        u = torch.sigmoid(lin("u", torch.cat([gc["u"], h], 1)))
        r = torch.sigmoid(lin("r", torch.cat([gc["r"], h], 1)))
        c = torch.tanh(lin("c", torch.cat([gc["c"], r * h], 1)))
        h = u * h + (1 - u) * c
    return h


def dense_gcrn(p, As, Xs):
    h = torch.zeros(N, H)
    Wx, bx, Wh, Whh = p["conv_x.weight"], p["conv_x.bias"], p["conv_h.weight"], p["conv_hh.weight"]
    for A, X in zip(As, Xs):
        z = torch.sigmoid(A @ X @ Wx[:, :H] + bx[:H] + A @ h @ Wh[:, :H])
        r = torch.sigmoid(A @ X @ Wx[:, H:2 * H] + bx[H:2 * H] + A @ h @ Wh[:, H:])
        ht = torch.tanh(A @ X @ Wx[:, 2 * H:] + bx[2 * H:] + A @ (r * h) @ Whh)
        h = z * h + (1 - z) * ht
    return h


def mat_gru(p, l, inp, q):
    W = [p[f"cells.{l}.W.{i}"] for i in range(3)]
    U = [p[f"cells.{l}.U.{i}"] for i in range(3)]
    B = [p[f"cells.{l}.B.{i}"] for i in range(3)]
    z = torch.sigmoid(W[0] @ inp + U[0] @ q + B[0])
    r = torch.sigmoid(W[1] @ inp + U[1] @ q + B[1])
    qt = torch.tanh(W[2] @ inp + U[2] @ (r * q) + B[2])
    return (1 - z) * q + z * qt


def topk_summary(p, l, x, k):
    s = p[f"topk.{l}.scorer"]
    y = (x @ s).squeeze(1) / torch.sqrt((s * s).sum())
    idx = torch.argsort(y, descending=True, stable=True)[:k]
    return (x[idx] * torch.tanh(y[idx])[:, None]).t()


def dense_evolvegcn(p, As, Xs, variant):
    Ws = [p["layers.0.weight"], p["layers.1.weight"]]
    for A, X in zip(As, Xs):
        x = X
        for l in range(2):
            inp = Ws[l] if variant == "o" else topk_summary(p, l, x, H)
            Ws[l] = mat_gru(p, l, inp, Ws[l])
            x = torch.relu(A @ x @ Ws[l])
    return x


def dense_mpnn_lstm(p, As, Xs):
    a = c1 = b = c2 = torch.zeros(N, H)
    for A, X in zip(As, Xs):
        h1 = torch.relu(A @ X @ p["gcn1.weight"] + p["gcn1.bias"])
        h2 = torch.relu(A @ h1 @ p["gcn2.weight"] + p["gcn2.bias"])
        a, c1 = lstm(torch.cat([h1, h2], 1), a, c1, *(p[f"lstm1.{k}"] for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")))
        b, c2 = lstm(a, b, c2, *(p[f"lstm2.{k}"] for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")))
    return torch.cat([a, b, X], 1)


def dense_cdgcn(p, As, Xs):
    """ESDG §5.1, two layers: Y = ReLU(ÂZ ‖ ÂZ W + b), then an LSTM per vertex."""
    states = [(torch.zeros(N, H), torch.zeros(N, H)) for _ in range(2)]
    for A, X in zip(As, Xs):
        z = X
        for l in range(2):
            y0 = A @ z
            y = torch.relu(torch.cat([y0, y0 @ p[f"gcn.{l}.weight"] + p[f"gcn.{l}.bias"]], 1))
            h, c = lstm(y, *states[l], *(p[f"lstm.{l}.{k}"] for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")))
            states[l] = (h, c)
            z = h
    return z


def m_matrix(T, w):
    """M [T, T]: M_tk = 1/min(w, t) for max(1, t-w+1) <= k <= t (1-based), else 0."""
    M = torch.zeros(T, T)
    for t in range(1, T + 1):
        for k in range(max(1, t - w + 1), t + 1):
            M[t - 1, k - 1] = 1.0 / min(w, t)
    return M


def dense_tmgcn(p, As, Xs, w=4):
    """Tensor form: per layer 𝒴 = GCN on every snapshot, then 𝒵 = 𝒴 ×_1 M."""
    M = m_matrix(len(As), w)
    Z = torch.stack(Xs)
    for l in range(2):
        Y = torch.stack([A @ z @ p[f"gcn.{l}.weight"] + p[f"gcn.{l}.bias"] for A, z in zip(As, Z)])
        Y = torch.relu(Y) if l == 0 else Y
        Z = torch.einsum("tk,knf->tnf", M, Y)
    return Z[-1]


CASES = {
    "wdgcn": ({}, dense_wdgcn),
    "tgcn": ({}, dense_tgcn_xh),
    "tgcn_x": ({"graph_input": "x"}, dense_tgcn_x),
    "gcrn": ({}, dense_gcrn),
    "evolvegcn_o": ({}, lambda p, A, X: dense_evolvegcn(p, A, X, "o")),
    "evolvegcn_h": ({}, lambda p, A, X: dense_evolvegcn(p, A, X, "h")),
    "mpnn_lstm": ({}, dense_mpnn_lstm),
    "cdgcn": ({}, dense_cdgcn),
    "tmgcn": ({}, dense_tmgcn),
    "tmgcn_w2": ({"w": 2}, lambda p, A, X: dense_tmgcn(p, A, X, w=2)),
}


def make(case, seed=0):
    torch.manual_seed(seed)
    kw, dense = CASES[case]
    model = build_model(case.removesuffix("_x").removesuffix("_w2"), F, H, **kw)
    with torch.no_grad():  # nonzero biases, so a dropped bias cannot hide
        for name, prm in model.named_parameters():
            if "bias" in name or ".B." in name:
                prm.add_(0.1 * torch.randn_like(prm))
    return model, dense


@pytest.fixture(scope="module")
def data():
    return window(T=3, n=N, f=F, seed=7)


def on(data, device):
    adjs, As, Xs = data
    return [a.to(device) for a in adjs], [a.to(device) for a in As], [x.to(device) for x in Xs]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", list(CASES))
def test_step_matches_dense(case, data, device):
    """On cuda the sparse path is cuSPARSE's; the dense computation runs on the same device."""
    adjs, As, Xs = on(data, device)
    model, dense = make(case)
    model.to(device)
    p = dict(model.named_parameters())
    h, state = model(adjs, Xs)
    with torch.device(device):  # the dense references make their zero states where the data is
        expect = dense(p, As, Xs)
    assert h.shape == (N, model.out_dim) == expect.shape
    torch.testing.assert_close(h, expect, rtol=1e-4, atol=1e-5)
    assert isinstance(state, tuple) and all(isinstance(s, torch.Tensor) for s in state)

    # gradients of one loss, sparse path vs dense path, with respect to every parameter
    target = torch.randn(h.shape, generator=torch.Generator().manual_seed(1)).to(device)
    names = list(p)
    g_model = torch.autograd.grad(((h - target) ** 2).mean(), [p[k] for k in names], allow_unused=True)
    with torch.device(device):
        g_dense = torch.autograd.grad(((dense(p, As, Xs) - target) ** 2).mean(), [p[k] for k in names],
                                      allow_unused=True)
    for name, a, b in zip(names, g_model, g_dense):
        assert (a is None) == (b is None), name
        if a is not None:
            assert torch.isfinite(a).all(), name
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("case", list(CASES))
def test_every_parameter_gets_gradient(case, data):
    adjs, _, Xs = data
    model, _ = make(case)
    h, _ = model(adjs, Xs)
    h.square().mean().backward()
    missing = [n for n, prm in model.named_parameters() if prm.grad is None]
    assert not missing, f"unused parameters (DDP would fail): {missing}"


@pytest.mark.parametrize("case", list(CASES))
def test_operator_order_is_swappable(case, data):
    adjs, _, Xs = data
    model, _ = make(case)
    layers = model.gcn_layers()
    assert layers and all(isinstance(l, GCNLayer) for l in layers)
    assert len(layers) == sum(isinstance(m, GCNLayer) for m in model.modules())
    outs = []
    for order in ("aggregate_first", "update_first"):
        for l in layers:
            l.order = order
        outs.append(model(adjs, Xs)[0])
    torch.testing.assert_close(outs[0], outs[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", list(CASES))
def test_checkpointed_blocks_equal_plain(case, data, device):
    """The engine's use: state tuples carried across checkpointed time blocks give the same gradients."""
    adjs, _, Xs = on(data, device)
    model, _ = make(case)
    model.to(device)
    params = list(model.parameters())

    def run(ckpt):
        state = model.initial_state(N, device)
        loss = 0.0
        for t in range(len(adjs)):
            if ckpt:
                h, *state = checkpoint(lambda a, x, *s: (lambda o: (o[0], *o[1]))(model.step(a, x, tuple(s))),
                                       adjs[t], Xs[t], *state, use_reentrant=False)
                state = tuple(state)
            else:
                h, state = model.step(adjs[t], Xs[t], state)
            loss = loss + h.square().mean()
        return torch.autograd.grad(loss, params)

    for a, b in zip(run(False), run(True)):
        torch.testing.assert_close(a, b)


def test_deterministic_construction():
    for name in MODELS:
        a, b = make(name, seed=5)[0], make(name, seed=5)[0]
        for (n1, p1), (_, p2) in zip(a.named_parameters(), b.named_parameters()):
            assert torch.equal(p1, p2), (name, n1)


def test_evolvegcn_h_fewer_nodes_than_k():
    torch.manual_seed(0)
    adjs, _, xs = window(T=2, n=3, f=F, seed=1)
    model = build_model("evolvegcn_h", F, 6)
    h, (w1, w2) = model(adjs, xs)
    assert h.shape == (3, 6) and w1.shape == (F, 6) and w2.shape == (6, 6)
    assert torch.isfinite(h).all()
