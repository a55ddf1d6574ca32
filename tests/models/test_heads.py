"""The link head's per-node first layer (used when there are more pairs than nodes) against the
per-pair MLP it reassociates."""

import torch

from dynagnn.models.heads import LinkPredictor


def _per_pair(head, h, pairs):
    return head.mlp(torch.cat([h[pairs[0]], h[pairs[1]]], dim=1)).squeeze(-1)


def test_link_head_per_node_first_layer_equals_per_pair():
    torch.manual_seed(0)
    head = LinkPredictor(6, hidden=5).double()
    h = torch.randn(7, 6, dtype=torch.float64, requires_grad=True)
    for num_pairs in (4, 7, 40):  # fewer, as many and more pairs than nodes
        pairs = torch.randint(0, 7, (2, num_pairs))
        got = head(h, pairs)
        want = _per_pair(head, h, pairs)
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
        g_got = torch.autograd.grad(got.square().sum(), [h, *head.parameters()])
        g_want = torch.autograd.grad(want.square().sum(), [h, *head.parameters()])
        for a, b in zip(g_got, g_want):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_scores_without_gradients_in_blocks_equal_the_whole_product(monkeypatch):
    """Evaluation's scores, a cache-sized block of pairs at a time, equal the whole [E, hidden] computed
    at once: at the real block size with a width that is no power of two (3 blocks of 13,056 pairs and a
    part), and at many blocks of the floor (1,024 pairs)."""
    from dynagnn.models import heads

    torch.manual_seed(1)
    head = LinkPredictor(24, hidden=20)
    h = torch.randn(500, 24)
    pairs = torch.randint(0, 500, (2, 45000))
    with torch.enable_grad():
        whole = head(h, pairs).detach()
    with torch.no_grad():
        real = head(h, pairs)
    monkeypatch.setattr(heads, "SCORE_BLOCK_BYTES", 1)
    with torch.no_grad():
        floor = head(h, pairs)
    assert torch.equal(real, whole) and torch.equal(floor, whole)
    torch.testing.assert_close(whole, _per_pair(head, h, pairs).detach())
