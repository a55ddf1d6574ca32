"""T-GCN (Zhao et al., "T-GCN: A Temporal Graph Convolutional Network for Traffic Prediction", T-ITS 2019).

A GRU whose matrix products are graph convolutions. Two variants, picked by ``graph_input``:

``"xh"`` (default; the authors' reference code, ``tgcn.py``): each gate convolves the concatenation
``[X_t ‖ H_{t-1}]`` [N, F+H]:

    [r_t ‖ u_t] = σ(Â_t [X_t ‖ H_{t-1}] W_g + b_g)           W_g [F+H, 2H], b_g [2H] (init 1.0)
    c_t         = tanh(Â_t [X_t ‖ r_t ⊙ H_{t-1}] W_c + b_c)  W_c [F+H, H],  b_c [H]
    H_t         = u_t ⊙ H_{t-1} + (1 − u_t) ⊙ c_t            [N, H]

``"x"`` (the paper's Eq. 3-6 read literally, as PyTorch Geometric Temporal's ``TGCN`` does): the
graph convolution sees only X_t, and a dense layer mixes it with the hidden state:

    u_t = σ(W_u [GCN_u(X_t) ‖ H_{t-1}] + b_u),   r_t = σ(W_r [GCN_r(X_t) ‖ H_{t-1}] + b_r)
    c_t = tanh(W_c [GCN_c(X_t) ‖ r_t ⊙ H_{t-1}] + b_c),   H_t = u_t ⊙ H_{t-1} + (1 − u_t) ⊙ c_t
    with GCN_*(X) = Â_t X W_* + b_* ([N, H]).

Only ``"x"`` lets PiPAD reuse ``Â_t X_t`` across frames (no aggregation depends on H). State ``(H,)``
[N, H], zeros at the start; the step returns H_t.
"""

from __future__ import annotations

import torch
from torch import nn

from dynagnn.graph import csr
from dynagnn.timing import section

from .base import DynamicGNN, State
from .layers import GCNLayer


class TGCN(DynamicGNN):
    name = "tgcn"

    def __init__(self, in_dim: int, hidden_dim: int, graph_input: str = "xh", order: str = "auto"):
        super().__init__(in_dim, hidden_dim)
        if graph_input not in ("xh", "x"):
            raise ValueError(f"T-GCN graph_input must be 'xh' or 'x', got {graph_input!r}")
        self.graph_input = graph_input
        f, h = in_dim, hidden_dim
        if graph_input == "xh":
            self.gates = GCNLayer(f + h, 2 * h, order=order)
            self.cand = GCNLayer(f + h, h, order=order)
            with torch.no_grad():
                self.gates.bias.fill_(1.0)  # as the reference code: gates start open (r ~ u ~ 0.73)
        else:
            self.gcn_u = GCNLayer(f, h, order=order)
            self.gcn_r = GCNLayer(f, h, order=order)
            self.gcn_c = GCNLayer(f, h, order=order)
            self.lin_u = nn.Linear(2 * h, h)
            self.lin_r = nn.Linear(2 * h, h)
            self.lin_c = nn.Linear(2 * h, h)

    def initial_state(self, num_nodes: int, device: torch.device | str = "cpu") -> State:
        return self.zero_state(num_nodes, device)

    def step(self, adj, x: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        (h,) = state
        if self.graph_input == "xh":
            g = torch.sigmoid(self.gates(adj, torch.cat([x, h], dim=1)))
            r, u = g.chunk(2, dim=1)
            c = torch.tanh(self.cand(adj, torch.cat([x, r * h], dim=1)))
        else:
            return self._x_step(self.gcn_u(adj, x), self.gcn_r(adj, x), self.gcn_c(adj, x), h)
        h = u * h + (1 - u) * c
        return h, (h,)

    def _x_step(self, gu: torch.Tensor, gr: torch.Tensor, gc: torch.Tensor, h: torch.Tensor):
        """``"x"``'s GRU from the three graph convolutions GCN_*(X_t) and H_{t-1}."""
        u = torch.sigmoid(self.lin_u(torch.cat([gu, h], dim=1)))
        r = torch.sigmoid(self.lin_r(torch.cat([gr, h], dim=1)))
        c = torch.tanh(self.lin_c(torch.cat([gc, r * h], dim=1)))
        h = u * h + (1 - u) * c
        return h, (h,)

    @property
    def first_aggregation_reads_x(self) -> bool:
        return self.graph_input == "x"

    def frame_needs(self) -> set[str]:
        return {"ax"} if self.graph_input == "x" else {"x", "adjs"}

    def frame_forward(self, frame, state: State):
        """The frame's S steps with everything that does not read H batched (PiPAD's parallel GNN):

        ``"x"``: the three graph convolutions and the X halves of the dense gate layers are one GEMM
        on ``Â X`` [S·N, F] (the two linear maps folded into one [F, 3H] matrix); a step is then one
        [N, H]x[H, 2H] product for u and r, one for c, and the gate arithmetic.
        ``"xh"``: ``Â [X ‖ H] W = Â (X W_x + H W_h)``: the X W_x of every snapshot is one GEMM, a step
        keeps its two aggregations of the state (no reuse: the first aggregation reads H).
        """
        (h,) = state
        s, n, hd = frame.size, frame.num_nodes, self.hidden_dim
        if self.graph_input == "xh":
            f = self.in_dim
            wg, wc = self.gates.weight, self.cand.weight
            x = frame.x.reshape(s * n, f)
            with section("nn_op"):
                # one tensor per step (unbind): a step's slice of a frame-wide tensor would cost a
                # frame-wide zero gradient in the backward pass, S times
                xg = (x @ wg[:f]).view(s, n, 2 * hd).unbind(0)
                xc = (x @ wc[:f]).view(s, n, hd).unbind(0)
            hs = []
            with section("rnn"):
                for i in range(s):
                    adj = frame.adjacency(i)
                    with section("graph_op"):
                        g = csr.aggregate(adj, torch.addmm(xg[i], h, wg[f:]))
                    r, u = torch.sigmoid(g + self.gates.bias).chunk(2, dim=1)
                    with section("graph_op"):
                        c = csr.aggregate(adj, torch.addmm(xc[i], r * h, wc[f:]))
                    h = torch.lerp(torch.tanh(c + self.cand.bias), h, u)
                    hs.append(h)
            return hs, (h,)
        lins = (self.lin_u, self.lin_r, self.lin_c)
        gcns = (self.gcn_u, self.gcn_r, self.gcn_c)
        if s == 1:
            # a frame of one: the step itself on the reused Â X (folding the weights and the fused
            # recurrence pay only over several steps; on one they cost more than they save)
            with section("nn_op"):
                g = [torch.addmm(gcn.bias, frame.ax[0], gcn.weight) for gcn in gcns]
            with section("rnn"):
                h, _ = self._x_step(*g, h)
            return [h], (h,)
        ax = frame.ax.reshape(s * n, -1)
        with section("nn_op"):
            # GCN_*(ÂX) followed by the X half of lin_*, folded into one [F, H] map per gate; u and r
            # share one GEMM. One tensor per step (unbind), not a slice of a frame-wide one per step
            # (whose backward would write a frame-wide zero gradient, S times)
            w, b = [], []
            for g, lin in zip(gcns, lins):
                wx = lin.weight[:, :hd].t()                                                # [H, H]
                w.append(g.weight @ wx)
                b.append(g.bias @ wx + lin.bias)
            p_ur = torch.addmm(torch.cat(b[:2]), ax, torch.cat(w[:2], 1)).view(s, n, 2 * hd)
            p_c = torch.addmm(b[2], ax, w[2]).view(s, n, hd)
        wh_ur = torch.cat([self.lin_u.weight[:, hd:].t(), self.lin_r.weight[:, hd:].t()], 1)  # [H, 2H]
        wh_c = self.lin_c.weight[:, hd:].t()
        with section("rnn"):
            hs = _GRURecurrence.apply(p_ur, p_c, h, wh_ur, wh_c)
        return hs, (hs[-1],)


class _GRURecurrence(torch.autograd.Function):
    """T-GCN "x"'s recurrence over a frame with its gate arithmetic fused by hand: one autograd node
    per frame instead of about ten per step, and the weight gradients as one GEMM over the frame.

    Inputs: the state-free pre-activations ``p_ur`` [S, N, 2H] (u, r) and ``p_c`` [S, N, H], the
    incoming ``h`` [N, H], the hidden halves ``wh_ur`` [H, 2H] and ``wh_c`` [H, H]. Per step:
    ``[u ‖ r] = σ(p_ur + h W_ur)``, ``c = tanh(p_c + (r ⊙ h) W_c)``, ``h = c + u ⊙ (h − c)``.
    Output: the S states [S, N, H]. The backward is the chain rule of those three lines, last step
    first (tested against autograd through the same lines)."""

    @staticmethod
    def forward(ctx, p_ur, p_c, h, wh_ur, wh_c):
        s, hd = p_c.shape[0], h.shape[1]
        hs, urs, cs = [h], [], []
        for i in range(s):
            ur = torch.addmm(p_ur[i], h, wh_ur).sigmoid_()
            c = torch.addmm(p_c[i], ur[:, hd:] * h, wh_c).tanh_()
            h = torch.lerp(c, h, ur[:, :hd])
            hs.append(h)
            urs.append(ur)
            cs.append(c)
        hs = torch.stack(hs)
        ctx.save_for_backward(hs, torch.stack(urs), torch.stack(cs), wh_ur, wh_c)
        return hs[1:]

    @staticmethod
    def backward(ctx, g):
        hs, urs, cs, wh_ur, wh_c = ctx.saved_tensors
        s, hd = cs.shape[0], cs.shape[2]
        d_ur, d_c = torch.empty_like(urs), torch.empty_like(cs)
        dh = torch.zeros_like(hs[0])
        for i in range(s - 1, -1, -1):
            dh = dh + g[i]
            h, ur, c = hs[i], urs[i], cs[i]
            u, r = ur[:, :hd], ur[:, hd:]
            dc = dh * (1 - u) * (1 - c * c)
            d_c[i] = dc
            dq = dc @ wh_c.t()
            da = torch.cat([dh * (h - c), dq * h], 1) * ur * (1 - ur)
            d_ur[i] = da
            dh = dh * u + dq * r + da @ wh_ur.t()
        prev = hs[:-1].reshape(-1, hd)
        d_wh_c = (urs[:, :, hd:].reshape(-1, hd) * prev).t() @ d_c.reshape(-1, hd)
        d_wh_ur = prev.t() @ d_ur.reshape(-1, 2 * hd)
        return d_ur, d_c, dh, d_wh_ur, d_wh_c
