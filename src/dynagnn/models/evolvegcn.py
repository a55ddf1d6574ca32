"""EvolveGCN (Pareja et al., "EvolveGCN: Evolving Graph Convolutional Networks for Dynamic Graphs",
AAAI 2020), both variants, two layers (F -> H -> H), as in the paper's experiments.

Each layer l keeps a GCN weight matrix W^l_t [F_l, H] that an RNN evolves from one snapshot to the
next; the nodes carry no recurrent state. Per snapshot t and layer l, with X^0_t = X_t:

    W^l_t = GRU(input_t, W^l_{t-1})                        (Eq. 3 / Eq. 5, matrix GRU below)
    X^l_t = ReLU(Â_t X^{l-1}_t W^l_t)                      (Eq. 1, no bias, as the reference code)

The matrix GRU is the reference code's ``mat_GRU_cell`` (the paper's Eq. 4 cell, applied column-wise:
the F_l x H matrix is a batch of H column vectors of size F_l):

    Z = σ(W_Z I + U_Z Q + B_Z),   R = σ(W_R I + U_R Q + B_R)
    Q̃ = tanh(W_H I + U_H (R ⊙ Q) + B_H),   W^l_t = (1 − Z) ⊙ Q + Z ⊙ Q̃
    with Q = W^l_{t-1}, W_*, U_* [F_l, F_l], B_* [F_l, H].

- EvolveGCN-O: ``input_t = W^l_{t-1}`` (the weight is both input and hidden state, Eq. 5).
- EvolveGCN-H: ``input_t = summarize(X^{l-1}_t, H)`` (Eq. 6-7): scores ``y = X p / ‖p‖`` [N]; the
  top-H rows by score, each scaled by ``tanh(y_i)``, transposed to [F_l, H]. Fewer than H nodes: the
  last chosen row is repeated, as the reference code pads.

ReLU replaces the reference code's RReLU, whose random slopes would make a recomputed (checkpointed)
step differ from the first pass. The learnable initial weight W^l_0 is the layer's own
``GCNLayer.weight``; :meth:`initial_state` returns those parameters, so the state carries gradient
into them and must not be detached at the start of a sequence. State tensors are weight matrices
([F, H] and [H, H]), not node-indexed: they are the same on every worker and never split by node.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from dynagnn.timing import section

from .base import DynamicGNN, State
from .layers import GCNLayer


class MatGRUCell(nn.Module):
    """The matrix GRU over a [rows, cols] weight: gates are ``act(W x + U h + B)`` with W, U [rows, rows]."""

    def __init__(self, rows: int, cols: int):
        super().__init__()
        self.rows, self.cols = rows, cols
        stdv = 1.0 / math.sqrt(rows)
        def mat(*shape):
            return nn.Parameter(torch.empty(*shape).uniform_(-stdv, stdv))
        self.W = nn.ParameterList([mat(rows, rows) for _ in range(3)])   # update Z, reset R, candidate
        self.U = nn.ParameterList([mat(rows, rows) for _ in range(3)])
        self.B = nn.ParameterList([nn.Parameter(torch.zeros(rows, cols)) for _ in range(3)])

    def forward(self, inp: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """``inp``, ``q`` [rows, cols] -> the next ``q`` [rows, cols]."""
        z = torch.sigmoid(self.W[0] @ inp + self.U[0] @ q + self.B[0])
        r = torch.sigmoid(self.W[1] @ inp + self.U[1] @ q + self.B[1])
        q_tilde = torch.tanh(self.W[2] @ inp + self.U[2] @ (r * q) + self.B[2])
        return (1 - z) * q + z * q_tilde


class TopK(nn.Module):
    """EvolveGCN-H's summary of X [N, F] into [F, k]: top-k rows by ``X p / ‖p‖``, scaled by tanh(score)."""

    def __init__(self, feats: int, k: int):
        super().__init__()
        self.k = k
        self.scorer = nn.Parameter(torch.empty(feats, 1).uniform_(-1 / math.sqrt(feats), 1 / math.sqrt(feats)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = (x @ self.scorer).view(-1) / self.scorer.norm()
        k = min(self.k, scores.shape[0])
        idx = scores.topk(k).indices
        if k < self.k:  # too few nodes: repeat the last chosen one
            idx = torch.cat([idx, idx[-1:].expand(self.k - k)])
        return (x[idx] * torch.tanh(scores[idx]).unsqueeze(1)).t()


class _EvolveGCN(DynamicGNN):
    """Shared body of the two variants: two GCN layers whose weights a matrix GRU evolves."""

    def __init__(self, in_dim: int, hidden_dim: int, order: str = "auto"):
        super().__init__(in_dim, hidden_dim)
        dims = [(in_dim, hidden_dim), (hidden_dim, hidden_dim)]
        # the layer's own weight is the learnable W_0; per-step weights are passed in explicitly
        self.layers = nn.ModuleList(GCNLayer(a, b, bias=False, order=order) for a, b in dims)
        self.cells = nn.ModuleList(MatGRUCell(a, b) for a, b in dims)

    def initial_state(self, num_nodes: int, device: torch.device | str = "cpu") -> State:
        return tuple(layer.weight.to(device) for layer in self.layers)

    def _rnn_input(self, l: int, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def step(self, adj, x: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        new_state = []
        for l, (layer, cell) in enumerate(zip(self.layers, self.cells)):
            w = cell(self._rnn_input(l, x, state[l]), state[l])
            x = torch.relu(layer(adj, x, weight=w))
            new_state.append(w)
        return x, tuple(new_state)

    @property
    def first_aggregation_reads_x(self) -> bool:
        return True

    def frame_needs(self) -> set[str]:
        return {"ax", "parts"}

    def frame_forward(self, frame, state: State):
        """Per layer: the S evolved weights (the recurrence: a chain of small matrices), then the S
        convolutions (:meth:`_convolve_frame`; PiPAD: no weight reuse for EvolveGCN)."""
        z, new_state = None, []
        for l, (layer, cell) in enumerate(zip(self.layers, self.cells)):
            w, ws = state[l], []
            with section("rnn"):
                layer_in = frame.x if z is None else z     # None for -O, whose GRU reads only W
                ins = [None] * frame.size if layer_in is None else list(layer_in)
                for i in range(frame.size):
                    w = cell(self._rnn_input(l, ins[i], w), w)
                    ws.append(w)
            z = self._convolve_frame(frame, z, ws)
            new_state.append(w)
        return z, tuple(new_state)

    @staticmethod
    def _convolve_frame(frame, z, ws) -> list[torch.Tensor]:
        """``ReLU(Â_t X_t W_t)`` of the S snapshots (``z``: the previous layer's S outputs [N, F], None
        for the first layer, whose ``Â X`` is the frame's reused ``ax``; ``ws``: the S weights [F, H]),
        each snapshot its own product and its own aggregation per partition: X^l_t reads only W^l_t
        and snapshots <= t, so a backward from some of the S embeddings (a window's loss reads its
        last) runs through theirs alone. One [S, N, H] batched product measured no faster forward,
        and its backward ran all S (S − 1 of them on zeros)."""
        az = frame.ax.unbind(0) if z is None else frame.aggregate_each(z)
        with section("nn_op"):
            # in place: mm's backward reads only its inputs
            return [torch.mm(a, w).relu_() for a, w in zip(az, ws)]


class EvolveGCNO(_EvolveGCN):
    """EvolveGCN-O: the weight is the GRU's input as well as its hidden state (Eq. 5)."""

    name = "evolvegcn_o"

    def _rnn_input(self, l, x, w):
        return w

    def evolve(self, state: State) -> State:
        """The weights of the next snapshot from this one's, with no graph or feature input: ESDG's
        snapshot strategy lets every worker run this chain itself (ESDG Sec. 5.5)."""
        return tuple(cell(w, w) for cell, w in zip(self.cells, state))

    def convolve(self, adj, x: torch.Tensor, weights: State) -> torch.Tensor:
        """The GCN layers of one snapshot with already evolved weights: ``step`` is
        ``convolve(adj, x, evolve(state))`` (the same values, the weights evolved first)."""
        for layer, w in zip(self.layers, weights):
            x = torch.relu(layer(adj, x, weight=w))
        return x

    def frame_forward(self, frame, state: State):
        """The frame with each layer's weight chain evolved at once: -O's recurrence reads no graph
        and no feature, so the S weights of a layer are one fused matrix-GRU chain
        (:class:`_MatGRUChain`: two GEMMs and the gate arithmetic per step, one autograd node per
        frame), then the S convolutions as in :meth:`_EvolveGCN.frame_forward`. A frame of one runs the
        cells themselves: the chain's hand-written backward pays only over several steps."""
        if frame.size == 1:
            return super().frame_forward(frame, state)
        z, new_state = None, []
        for layer, cell in zip(self.layers, self.cells):
            with section("rnn"):
                # I = Q for -O: W I + U Q = (W + U) Q for the update and reset gates
                m = torch.cat([cell.W[0] + cell.U[0], cell.W[1] + cell.U[1], cell.W[2]])     # [3F, F]
                ws = _MatGRUChain.apply(m, cell.U[2], torch.cat(list(cell.B)), state[len(new_state)],
                                        frame.size)                                         # [S, F, H]
            z = self._convolve_frame(frame, z, ws.unbind(0))
            new_state.append(ws[-1])
        return z, tuple(new_state)


class _MatGRUChain(torch.autograd.Function):
    """EvolveGCN-O's matrix GRU run S steps from ``q0`` [F, H], its gate arithmetic fused by hand:
    one autograd node per frame instead of ~20 per step, the weight gradients one GEMM each.

    Inputs: ``m`` [3F, F] (rows: W_Z + U_Z, W_R + U_R, W_H), ``uh`` [F, F] (U_H), ``b`` [3F, H]
    (B_Z, B_R, B_H), ``q0`` [F, H], the step count. Per step: ``G = m q + b``, ``[z ‖ r] = σ(G[:2F])``,
    ``c = tanh(G[2F:] + U_H (r ⊙ q))``, ``q = q + z ⊙ (c − q)`` (:class:`MatGRUCell` with I = Q).
    Output: the S weights [S, F, H]. The backward is the chain rule of those lines, last step first
    (tested against autograd in float64)."""

    @staticmethod
    def forward(ctx, m, uh, b, q0, steps):
        f = q0.shape[0]
        qs, zrs, cs, q = [q0], [], [], q0
        for _ in range(int(steps)):
            g = torch.addmm(b, m, q)
            zr = g[:2 * f].sigmoid()
            c = torch.addmm(g[2 * f:], uh, zr[f:] * q).tanh_()
            q = torch.lerp(q, c, zr[:f])
            qs.append(q)
            zrs.append(zr)
            cs.append(c)
        qs = torch.stack(qs)
        ctx.save_for_backward(m, uh, qs, torch.stack(zrs), torch.stack(cs))
        return qs[1:]

    @staticmethod
    def backward(ctx, gout):
        m, uh, qs, zrs, cs = ctx.saved_tensors
        s, f = cs.shape[0], cs.shape[1]
        prev = qs[:-1]
        # every factor that reads no upstream gradient, for all steps at once: the loop is then
        # 8 small kernels per step (each one a dispatch on a CPU: the chain's cost)
        dzr = zrs * (1 - zrs)                                          # σ'  [S, 2F, H]
        zt = zrs[:, :f] * (1 - cs * cs)                                # z ⊙ tanh'
        zc = dzr[:, :f] * (cs - prev)                                  # σ'(z) ⊙ (c − q)
        rq = dzr[:, f:] * prev                                         # σ'(r) ⊙ q
        keep = 1 - zrs[:, :f]
        r = zrs[:, f:]
        mt, uht = m.t(), uh.t()
        d_g = torch.empty(s, 3 * f, cs.shape[2], dtype=cs.dtype, device=cs.device)
        dq = gout[s - 1].clone()
        for i in range(s - 1, -1, -1):
            if i < s - 1:
                dq = dq + gout[i]
            dac = torch.mul(dq, zt[i], out=d_g[i, 2 * f:])              # d(pre-tanh)
            d_rq = torch.mm(uht, dac)
            torch.mul(dq, zc[i], out=d_g[i, :f])
            torch.mul(d_rq, rq[i], out=d_g[i, f:2 * f])
            dq = torch.addmm(torch.addcmul(dq * keep[i], d_rq, r[i]), mt, d_g[i])
        flat = prev.transpose(1, 2).reshape(-1, f)                      # [S·H, F]: q_iᵀ stacked
        d_m = d_g.permute(1, 0, 2).reshape(3 * f, -1) @ flat
        rqt = (r * prev).transpose(1, 2).reshape(-1, f)
        d_uh = d_g[:, 2 * f:].permute(1, 0, 2).reshape(f, -1) @ rqt
        return d_m, d_uh, d_g.sum(0), dq, None


class EvolveGCNH(_EvolveGCN):
    """EvolveGCN-H: the GRU's input is the top-k summary of the layer's input embeddings (Eq. 3, 6-7)."""

    name = "evolvegcn_h"

    def __init__(self, in_dim: int, hidden_dim: int, order: str = "auto"):
        super().__init__(in_dim, hidden_dim, order=order)
        self.topk = nn.ModuleList([TopK(in_dim, hidden_dim), TopK(hidden_dim, hidden_dim)])

    def _rnn_input(self, l, x, w):
        return self.topk[l](x)

    def frame_needs(self) -> set[str]:
        return {"ax", "parts", "x"}
