"""Issue 32's faster event models against the code they replaced, kept here as the reference: roots
embedded once per distinct (node, time), projections applied by input blocks, the time encoding
once per distinct gap, against every root and neighbour gathered and every layer applied to a
concatenation. Three training batches of a minute-resolution stream (many events share a time, so
roots repeat), dropout on: the same embeddings, loss, gradients, memory and mailbox."""

import types

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from dynagnn.graph.sample import TemporalNeighbors
from dynagnn.models.heads import LinkPredictor
from dynagnn.models.tgnn import apply_writes, build_tgnn, make_batch
from dynagnn.models.tgnn.time_encoding import TimeEncoding, time_delta
from tests.testing.devices import DEVICES


def concatenated_cell(self, rows, t=None):
    """CellUpdater.forward before issue 32: the cell applied to ``[mail ‖ Φ]``."""
    mail, mail_ts, valid = rows.mail[:, -1], rows.mail_ts[:, -1], rows.mail_valid[:, -1]
    idx = valid.nonzero().squeeze(1)
    if idx.numel() == 0:
        return rows.memory, rows.memory_ts
    x = torch.cat([mail[idx], self.time_enc(time_delta(mail_ts[idx], rows.memory_ts[idx]))], dim=1)
    memory = rows.memory.index_put((idx,), self.cell(x, rows.memory[idx]))
    return memory, rows.memory_ts.index_put((idx,), mail_ts[idx])


def concatenated_mailbox_attention(self, rows, t, expand=None):
    """AttentionUpdater.forward before issue 32: keys and values of ``[mail ‖ Φ]`` for every row."""
    assert expand is None or torch.equal(expand, torch.arange(expand.numel(), device=expand.device))  # no repeats made
    valid = rows.mail_valid
    idx = valid.any(dim=1).nonzero().squeeze(1)
    if idx.numel() == 0:
        return rows.memory, t.to(torch.float64)
    s, mail, mail_ts, valid = rows.memory[idx], rows.mail[idx], rows.mail_ts[idx], valid[idx]
    u, m = mail.shape[:2]
    h = self.heads
    x = torch.cat([mail, self.time_enc(time_delta(t[idx].unsqueeze(1), mail_ts))], dim=2)
    q = self.w_q(s).reshape(u, 1, h, -1)
    k, v = self.w_k(x).reshape(u, m, h, -1), self.w_v(x).reshape(u, m, h, -1)
    score = F.leaky_relu((q * k).sum(-1), 0.2).masked_fill(~valid.unsqueeze(-1), float("-inf"))
    out = (torch.softmax(score, dim=1).unsqueeze(-1) * v).sum(1).reshape(u, -1)
    new = F.relu(self.dropout(self.w_o(self.norm(out + s))))
    return rows.memory.index_put((idx,), new), t.to(torch.float64)


def minute_stream(n_nodes=14, n_events=120, seed=7):
    """Events at whole minutes, about six per minute, between few nodes: (node, time) roots repeat."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(0, 20, n_events)) * 60
    return rng.integers(0, n_nodes, n_events), rng.integers(0, n_nodes, n_events), t


def build(name, reference, device="cpu"):
    torch.manual_seed(0)
    # JODIE's gaps standardised as the engine does (memory_age_stats), not raw seconds
    extra = {"dt_shift": 300.0, "dt_scale": 400.0} if name == "jodie" else {}
    model = build_tgnn(name, 14, 2, memory_dim=8, time_dim=6, neighbors=4, dropout=0.3, **extra)
    model.to(device)
    head = LinkPredictor(model.out_dim).to(device)
    if reference:
        model.updater.forward = types.MethodType(
            concatenated_mailbox_attention if name == "apan" else concatenated_cell, model.updater)
        if name == "tgn":
            model.indexed = False
    return model, head, torch.optim.Adam([*model.parameters(), *head.parameters()], lr=1e-2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["tgn", "jodie", "apan"])
def test_deduplicated_models_train_as_the_concatenated_ones(name, device):
    src, dst, t = minute_stream()
    efeat = torch.randn(src.size, 2, generator=torch.Generator().manual_seed(1)).to(device)
    sampler = TemporalNeighbors(src, dst, t, 14)
    neg = np.random.default_rng(2).integers(0, 14, (src.size, 2))
    runs = {ref: (*build(name, ref, device), None) for ref in (False, True)}
    memories = {ref: runs[ref][0].new_memory(device) for ref in runs}
    repeats = 0
    for a in range(0, 120, 40):
        sl = slice(a, a + 40)
        got = {}
        for ref, (model, head, opt, _) in runs.items():
            b = make_batch(src[sl], dst[sl], t[sl], np.arange(a, a + 40), neg[sl], sampler, model.neighbors,
                           model.sample, dedup=not ref)
            repeats += (not ref) * (b.roots.size - b.emb_rows.size)
            torch.manual_seed(100 + a)  # the same dropout masks
            out = model(b, memories[ref].read(torch.from_numpy(b.nodes).to(device)), efeat)
            n = b.size
            pairs = torch.cat([torch.stack([torch.arange(n), n + torch.arange(n)]),   # (source, destination)
                               torch.stack([torch.arange(n).repeat_interleave(2), 2 * n + torch.arange(2 * n)])], 1)
            logits = head(out.z, pairs.to(device))
            labels = torch.cat([torch.ones(n), torch.zeros(2 * n)]).to(device)
            loss = F.binary_cross_entropy_with_logits(logits, labels)
            opt.zero_grad()
            loss.backward()
            got[ref] = (out.z.detach(), loss.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None])
            opt.step()
            apply_writes(memories[ref], out)
        (z, loss, grads), (z_ref, loss_ref, grads_ref) = got[False], got[True]
        torch.testing.assert_close(z, z_ref, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(loss, loss_ref, atol=1e-5, rtol=1e-5)
        assert len(grads) == len(grads_ref)
        for g, g_ref in zip(grads, grads_ref):
            torch.testing.assert_close(g, g_ref, atol=1e-5, rtol=1e-5)
        for buf in ("memory", "memory_ts", "mail", "mail_ts", "mail_valid"):
            torch.testing.assert_close(getattr(memories[False], buf), getattr(memories[True], buf), atol=1e-5, rtol=1e-5)
    assert repeats > 20  # the stream exercises the deduplication


def test_time_encoding_memo_answers_as_the_encoding_and_forgets_changed_weights():
    """Outside autograd, of_distinct answers repeated gaps from its memo (no new encoding), equal to
    the encoding; once ω changes in place (an optimiser step), it encodes again."""
    torch.manual_seed(0)
    enc = TimeEncoding(8)
    calls = []
    forward = enc.forward
    enc.forward = lambda dt: calls.append(dt.numel()) or forward(dt)
    first, second = torch.tensor([0.0, 60.0, 120.0]), torch.tensor([60.0, 180.0])
    with torch.no_grad():
        torch.testing.assert_close(enc.of_distinct(first), forward(first), atol=1e-7, rtol=0)
        torch.testing.assert_close(enc.of_distinct(second), forward(second), atol=1e-7, rtol=0)
        assert calls == [3, 1]  # only 180 was new
        enc.of_distinct(torch.tensor([0.0, 180.0]))
        assert calls == [3, 1]
        enc.w.weight.mul_(1.5)
        torch.testing.assert_close(enc.of_distinct(second), forward(second), atol=1e-7, rtol=0)
        assert calls == [3, 1, 2]
    # with autograd on, every call encodes (ω and φ move every step) and the gradient flows
    enc.of_distinct(first).sum().backward()
    assert calls[-1] == 3 and enc.w.weight.grad is not None and enc.w.weight.grad.abs().sum() > 0
    # a fused optimiser step changes ω and φ without bumping their version: the memo still notices
    with torch.no_grad():
        enc.of_distinct(second)
    torch.optim.Adam(enc.parameters(), lr=0.1, fused=True).step()
    with torch.no_grad():
        torch.testing.assert_close(enc.of_distinct(second), forward(second), atol=1e-7, rtol=0)
