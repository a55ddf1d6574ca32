"""GCRN-GRU (Seo et al., "Structured Sequence Modeling with Graph Convolutional Recurrent Networks",
ICONIP 2018), with the GCN operator in place of the Chebyshev filter ``*G``.

Seo et al.'s Model 2 replaces every product of a GRU/LSTM by a graph convolution; this is the GRU form
(PyTorch Geometric Temporal's ``GConvGRU``), with separate filters for the input and the hidden state:

    z_t = σ(Â_t X_t W_xz + Â_t H_{t-1} W_hz + b_z)
    r_t = σ(Â_t X_t W_xr + Â_t H_{t-1} W_hr + b_r)
    H̃_t = tanh(Â_t X_t W_xh + Â_t (r_t ⊙ H_{t-1}) W_hh + b_h)
    H_t = z_t ⊙ H_{t-1} + (1 − z_t) ⊙ H̃_t

X_t [N, F], H [N, H], W_x* [F, H], W_h* [H, H]. The three input filters are one GCNLayer [F, 3H]
(and z, r's hidden filters one [H, 2H]) so that Â_t X_t is aggregated once, not three times; the bias
lives on the input side. State ``(H,)`` [N, H], zeros at the start; the step returns H_t.
"""

from __future__ import annotations

import torch

from dynagnn.graph import csr
from dynagnn.timing import section

from .base import DynamicGNN, State
from .layers import GCNLayer


class GCRN(DynamicGNN):
    name = "gcrn"

    def __init__(self, in_dim: int, hidden_dim: int, order: str = "auto"):
        super().__init__(in_dim, hidden_dim)
        h = hidden_dim
        self.conv_x = GCNLayer(in_dim, 3 * h, bias=True, order=order)   # [W_xz ‖ W_xr ‖ W_xh]
        self.conv_h = GCNLayer(h, 2 * h, bias=False, order=order)       # [W_hz ‖ W_hr]
        self.conv_hh = GCNLayer(h, h, bias=False, order=order)          # W_hh, on r ⊙ H

    def initial_state(self, num_nodes: int, device: torch.device | str = "cpu") -> State:
        return self.zero_state(num_nodes, device)

    @property
    def first_aggregation_reads_x(self) -> bool:
        return True   # conv_x aggregates X_t alone: Â_t X_t is PiPAD's to reuse

    def frame_needs(self) -> set[str]:
        return {"ax", "adjs"}

    def frame_forward(self, frame, state: State):
        """The frame's S steps with the X convolutions batched (PiPAD's parallel GNN): ``Â X W_x + b``
        of every snapshot is one GEMM on the (reused) ``Â X`` [S·N, F]; a step keeps its two
        aggregations of the state (``Â H [W_hz ‖ W_hr]`` and ``Â (r ⊙ H) W_hh``), and the S steps are
        one fused recurrence (:class:`_GCRNRecurrence`: one autograd node per frame, the hidden
        weights' gradients one GEMM each over the frame), which aggregates first. A frame of one,
        snapshots whose aggregation is not the plain product, or a hidden filter set to update first
        (BLAD's planned operator order) run the steps one by one."""
        (h,) = state
        s, n, hd = frame.size, frame.num_nodes, self.hidden_dim
        adjs = [frame.adjacency(i) for i in range(s)] if frame.adjs is not None else None
        fused = (s > 1 and adjs is not None and all(type(a) is csr.Adjacency for a in adjs)
                 and all(c.resolved_order() == "aggregate_first" for c in (self.conv_h, self.conv_hh)))
        with section("nn_op"):
            px = torch.addmm(self.conv_x.bias, frame.ax.reshape(s * n, -1), self.conv_x.weight)
            px = px.view(s, n, 3 * hd)
        if fused:
            with section("rnn"):
                hs = _GCRNRecurrence.apply(px, h, self.conv_h.weight, self.conv_hh.weight, adjs)
            return hs, (hs[-1],)
        # one tensor per step (unbind): a step's slice of a frame-wide tensor would cost a frame-wide
        # zero gradient in the backward pass, S times
        px = px.unbind(0)
        hs = []
        with section("rnn"):
            for i in range(s):
                h = self._gates(frame.adjacency(i), px[i], h)
                hs.append(h)
        return hs, (h,)

    def _gates(self, adj, px: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """The GRU of one step from ``px`` = Â X W_x + b [N, 3H] and the state H."""
        xz, xr, xh = px.chunk(3, dim=1)
        hz, hr = self.conv_h(adj, h).chunk(2, dim=1)
        z = torch.sigmoid(xz + hz)
        r = torch.sigmoid(xr + hr)
        h_tilde = torch.tanh(xh + self.conv_hh(adj, r * h))
        return z * h + (1 - z) * h_tilde

    def step(self, adj, x: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        (h,) = state
        h = self._gates(adj, self.conv_x(adj, x), h)
        return h, (h,)


class _GCRNRecurrence(torch.autograd.Function):
    """GCRN's recurrence over a frame with the gate arithmetic and the state's aggregations fused by
    hand: one autograd node per frame instead of about fifteen per step.

    Inputs: the state-free pre-activations ``px`` [S, N, 3H] (``Â X W_x + b``: z, r, candidate), the
    incoming ``h`` [N, H], ``wh`` [H, 2H] (W_hz ‖ W_hr), ``whh`` [H, H], the S adjacencies. Per step,
    aggregating first: ``[z ‖ r] = σ(px_zr + (Â h) wh)``, ``c = tanh(px_c + (Â (r ⊙ h)) whh)``,
    ``h = c + z ⊙ (h − c)``. Output: the S states [S, N, H]. The backward is the chain rule of those
    lines, last step first, with ``Âᵀ`` for the aggregations' gradients (tested against autograd
    through :meth:`GCRN.step`)."""

    @staticmethod
    def forward(ctx, px, h, wh, whh, adjs):
        s, hd = px.shape[0], h.shape[1]
        hs, zrs, cs, ahs, arhs = [h], [], [], [], []
        for i in range(s):
            a = adjs[i].matrix
            ah = torch.sparse.mm(a, h)
            zr = torch.addmm(px[i, :, :2 * hd], ah, wh).sigmoid_()
            arh = torch.sparse.mm(a, zr[:, hd:] * h)
            c = torch.addmm(px[i, :, 2 * hd:], arh, whh).tanh_()
            h = torch.lerp(c, h, zr[:, :hd])
            hs.append(h)
            zrs.append(zr)
            cs.append(c)
            ahs.append(ah)
            arhs.append(arh)
        hs = torch.stack(hs)
        ctx.adjs = adjs
        ctx.save_for_backward(hs, torch.stack(zrs), torch.stack(cs), torch.stack(ahs), torch.stack(arhs), wh, whh)
        return hs[1:]

    @staticmethod
    def backward(ctx, g):
        hs, zrs, cs, ahs, arhs, wh, whh = ctx.saved_tensors
        s, hd = cs.shape[0], cs.shape[2]
        d_px = torch.empty(s, cs.shape[1], 3 * hd, dtype=cs.dtype, device=cs.device)
        dh = torch.zeros_like(hs[0])
        wht, whht = wh.t(), whh.t()
        for i in range(s - 1, -1, -1):
            dh = dh + g[i]
            h, zr, c = hs[i], zrs[i], cs[i]
            z, r = zr[:, :hd], zr[:, hd:]
            at = ctx.adjs[i].transposed
            dc = torch.mul(dh * (1 - z), 1 - c * c, out=d_px[i, :, 2 * hd:])    # d(pre-tanh)
            d_rh = torch.sparse.mm(at, (dc @ whht).contiguous())
            dzr = torch.cat([dh * (h - c), d_rh * h], 1) * zr * (1 - zr)       # d(pre-sigmoid)
            d_px[i, :, :2 * hd] = dzr
            dh = dh * z + d_rh * r + torch.sparse.mm(at, (dzr @ wht).contiguous())
        d_wh = ahs.reshape(-1, hd).t() @ d_px[:, :, :2 * hd].reshape(-1, 2 * hd)
        d_whh = arhs.reshape(-1, hd).t() @ d_px[:, :, 2 * hd:].reshape(-1, hd)
        return d_px, dh, d_wh, d_whh, None
