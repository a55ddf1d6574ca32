"""The TGNN pieces against independent computations: time encoding, the GRU/RNN updaters against
torch.nn cells row by row, APAN's mailbox attention and TGN's temporal attention against loops over
mails and neighbours, the "most recent" aggregation against a loop."""

import math

import numpy as np
import pytest
import torch

from dynagnn.models.tgnn.embedding import TemporalAttention, TimeProjection
from dynagnn.models.tgnn.memory import MemoryRows, NodeMemory, latest_per_node
from dynagnn.models.tgnn.time_encoding import TimeEncoding, time_delta
from dynagnn.models.tgnn.updaters import AttentionUpdater, GRUUpdater, RNNUpdater


def test_time_encoding_is_cos_of_affine():
    enc = TimeEncoding(5)
    torch.nn.init.normal_(enc.w.weight)
    torch.nn.init.normal_(enc.w.bias)
    dt = torch.tensor([[0.0, 1.5], [3.0, -2.0]])
    w, b = enc.w.weight[:, 0].detach().numpy(), enc.w.bias.detach().numpy()
    want = np.cos(dt.numpy()[..., None] * w + b)
    assert np.allclose(enc(dt).detach().numpy(), want, atol=1e-6)
    fresh = TimeEncoding(4)  # ω from 1 down to 1e-9, φ = 0
    assert np.allclose(fresh.w.weight[:, 0].detach().numpy(), [1, 1e-3, 1e-6, 1e-9])


def test_time_delta_keeps_seconds_of_large_times():
    t = torch.tensor([1_098_777_120.0], dtype=torch.float64)
    assert time_delta(t, t - 1).item() == 1.0


def rows_of(mem, mem_ts, mail, mail_ts, valid):
    return MemoryRows(mem, mem_ts, mail, mail_ts, valid)


@pytest.mark.parametrize("cls, cell", [(GRUUpdater, torch.nn.GRUCell), (RNNUpdater, torch.nn.RNNCell)])
def test_cell_updaters_equal_torch_cells_row_by_row(cls, cell):
    """The updater's cell, its input projected by blocks, against torch's cell on [mail ‖ Φ] row by
    row: the same new memory and the same gradients of the cell's weights and of ω and φ."""
    torch.manual_seed(0)
    enc = TimeEncoding(3)
    upd = cls(4, 6, enc)
    ref = cell(4 + 3, 6)
    ref.load_state_dict(upd.cell.state_dict())
    u = 5
    mem = torch.randn(u, 6)
    mem_ts = torch.tensor([0.0, 1, 2, 3, 4], dtype=torch.float64)
    mail = torch.randn(u, 1, 4)
    mail_ts = torch.tensor([[5.0], [6], [7], [8], [9]], dtype=torch.float64)
    valid = torch.tensor([[True], [False], [True], [True], [False]])
    new, ts = upd(rows_of(mem, mem_ts, mail, mail_ts, valid))
    weight = torch.randn(u, 6)
    want_loss = 0.0
    for i in range(u):
        if valid[i, 0]:
            x = torch.cat([mail[i, 0], enc(torch.tensor(float(mail_ts[i, 0] - mem_ts[i])))])
            want = ref(x[None], mem[i:i + 1])[0]
            want_loss = want_loss + (want * weight[i]).sum()
            assert torch.allclose(new[i], want, atol=1e-6)
            assert ts[i] == mail_ts[i, 0]
        else:  # no mail: the memory and its time stay
            assert torch.equal(new[i], mem[i]) and ts[i] == mem_ts[i]
    params = [*upd.cell.parameters(), *enc.parameters()]
    got = torch.autograd.grad((new * weight).sum(), params)
    want = torch.autograd.grad(want_loss, [*ref.parameters(), *enc.parameters()])
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=1e-6, rtol=1e-5)


def test_apan_attention_equals_a_loop_over_mails():
    torch.manual_seed(1)
    enc = TimeEncoding(3)
    upd = AttentionUpdater(5, 4, enc, heads=2, dropout=0.0).eval()
    u, m = 4, 3
    mem = torch.randn(u, 4)
    mail = torch.randn(u, m, 5)
    mail_ts = torch.rand(u, m, dtype=torch.float64) * 10
    valid = torch.tensor([[True, True, False], [False, False, False], [True, False, True], [True, True, True]])
    t = torch.full((u,), 12.0, dtype=torch.float64)
    new, _ = upd(rows_of(mem, torch.zeros(u, dtype=torch.float64), mail, mail_ts, valid), t)
    for i in range(u):
        if not valid[i].any():
            assert torch.equal(new[i], mem[i])
            continue
        q = upd.w_q(mem[i]).reshape(2, 2)
        heads = []
        for h in range(2):
            scores, vals = [], []
            for j in range(m):
                if valid[i, j]:
                    x = torch.cat([mail[i, j], enc(torch.tensor(float(t[i] - mail_ts[i, j])))])
                    k = upd.w_k(x).reshape(2, 2)[h]
                    scores.append(torch.nn.functional.leaky_relu(q[h] @ k, 0.2))
                    vals.append(upd.w_v(x).reshape(2, 2)[h])
            a = torch.softmax(torch.stack(scores), 0)
            heads.append(sum(ai * vi for ai, vi in zip(a, vals)))
        want = torch.relu(upd.w_o(upd.norm(torch.cat(heads) + mem[i])))
        assert torch.allclose(new[i], want, atol=1e-5)


def test_temporal_attention_equals_a_loop_over_neighbours():
    torch.manual_seed(2)
    enc = TimeEncoding(3)
    att = TemporalAttention(4, 2, enc, 6, heads=2, dropout=0.0).eval()
    r, k = 3, 4
    h_root, h_nbr, e_nbr = torch.randn(r, 4), torch.randn(r, k, 4), torch.randn(r, k, 2)
    dt = torch.rand(r, k) * 5
    valid = torch.tensor([[True, True, True, False], [False] * 4, [True, False, False, False]])
    z = att(h_root, h_nbr, e_nbr, dt, valid)
    for i in range(r):
        q = att.w_q(torch.cat([h_root[i], enc(torch.tensor(0.0))])).reshape(2, 3)
        heads = []
        for h in range(2):
            scores, vals = [], []
            for j in range(k):
                if valid[i, j]:
                    x = torch.cat([h_nbr[i, j], e_nbr[i, j], enc(dt[i, j])])
                    scores.append(torch.nn.functional.leaky_relu(q[h] @ att.w_k(x).reshape(2, 3)[h], 0.2))
                    vals.append(att.w_v(x).reshape(2, 3)[h])
            if scores:
                a = torch.softmax(torch.stack(scores), 0)
                heads.append(sum(ai * vi for ai, vi in zip(a, vals)))
            else:  # no neighbour: the attended part is zero
                heads.append(torch.zeros(3))
        want = att.norm(torch.relu(att.w_o(torch.cat([torch.cat(heads), h_root[i]]))))
        assert torch.allclose(z[i], want, atol=1e-5)


def test_time_projection():
    proj = TimeProjection(3, shift=2.0, scale=4.0, dropout=0.0)
    s, dt = torch.randn(2, 3), torch.tensor([6.0, 2.0])
    w, b = proj.w.weight[:, 0], proj.w.bias
    want = torch.stack([s[0] * (1 + w * 1.0 + b), s[1] * (1 + b)])
    assert torch.allclose(proj(s, dt), want, atol=1e-6)


def test_latest_per_node_against_a_loop():
    rng = np.random.default_rng(0)
    nodes = rng.integers(0, 6, 40)
    key = rng.integers(0, 5, 40)
    for k in (None, key):
        uniq, pos = latest_per_node(nodes, k)
        assert list(uniq) == sorted(set(nodes.tolist()))
        for v, p in zip(uniq, pos):
            occ = [i for i in range(40) if nodes[i] == v]
            want = occ[-1] if k is None else max(occ, key=lambda i: (key[i], i))
            assert p == want


def test_mailbox_ring_and_snapshot():
    mem = NodeMemory(3, 2, 2, mailbox_size=2)
    ids = torch.tensor([1])
    for i in range(3):
        mem.write_mail(ids, torch.full((1, 2), float(i)), torch.tensor([float(i)]))
    assert mem.mail[1, :, 0].tolist() == [2.0, 1.0] and mem.mail_valid[1].all() and not mem.mail_valid[0].any()
    snap = mem.snapshot()
    mem.write_memory(ids, torch.ones(1, 2), torch.tensor([5.0]))
    mem.restore(snap)
    assert mem.memory.abs().sum() == 0 and mem.memory_ts[1] == 0
    mem.write_memory(ids, torch.ones(1, 2), torch.tensor([5.0]))
    mem.reset()
    assert mem.memory.abs().sum() == 0 and not mem.mail_valid.any() and math.isclose(mem.mail.abs().sum(), 0)


@pytest.mark.parametrize("edge_dim", [0, 2])
def test_indexed_attention_equals_the_gathered_one_with_its_gradients(edge_dim):
    """forward_indexed (distinct roots embedded once and copied to their repeats, node blocks once per
    distinct root and neighbour, time once per distinct Δt) against forward on the gathered rows of
    every root: the same output and the same gradients of the table and every weight."""
    torch.manual_seed(3)
    att = TemporalAttention(5, edge_dim, TimeEncoding(4), 6, heads=2, dropout=0.0)
    u, r, k = 7, 9, 4
    table = torch.randn(u, 5, requires_grad=True)
    root_idx, nbr_idx = torch.randint(0, u, (r,)), torch.randint(0, u, (r, k))
    e_nbr = torch.randn(r, k, edge_dim) if edge_dim else None
    dt = torch.randint(0, 3, (r, k)).float() * 60.0          # repeated gaps, as minute timestamps give
    valid = torch.rand(r, k) < 0.7
    valid[0] = False                                          # a root without neighbours
    expand = torch.tensor([0, 1, 2, 1, 3, 4, 5, 6, 7, 8, 8, 0])  # 12 roots, 3 of them repeats
    weight = torch.randn(expand.numel(), 6)

    def grads(z):
        params = [table, *att.parameters()]
        return torch.autograd.grad((z * weight).sum(), params, allow_unused=True)

    z_ref = att(table[root_idx[expand]], table[nbr_idx[expand]], None if e_nbr is None else e_nbr[expand],
                dt[expand], valid[expand])
    nbr_rows, nbr_pos = torch.unique(torch.where(valid, nbr_idx, 0), return_inverse=True)
    gaps, gap_idx = torch.unique(dt, return_inverse=True)
    z_idx = att.forward_indexed(table, root_idx, nbr_rows, nbr_pos, e_nbr, gaps, gap_idx, valid, expand)
    torch.testing.assert_close(z_idx, z_ref, atol=1e-5, rtol=1e-5)
    for got, want in zip(grads(z_idx), grads(z_ref)):
        if want is None:
            assert got is None or not got.any()
        else:
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
