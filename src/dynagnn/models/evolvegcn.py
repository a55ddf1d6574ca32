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
        convolutions at once: ``Â X`` reused for layer 1, the parallel aggregation for layer 2, one
        batched GEMM with the S weights (PiPAD: no weight reuse for EvolveGCN)."""
        z, new_state = None, []
        for l, (layer, cell) in enumerate(zip(self.layers, self.cells)):
            w, ws = state[l], []
            with section("rnn"):
                layer_in = frame.x if z is None else z     # None for -O, whose GRU reads only W
                ins = [None] * frame.size if layer_in is None else layer_in.unbind(0)
                for i in range(frame.size):
                    w = cell(self._rnn_input(l, ins[i], w), w)
                    ws.append(w)
            az = frame.ax if z is None else frame.aggregate(z)
            with section("nn_op"):
                z = torch.relu(torch.bmm(az, torch.stack(ws)))
            new_state.append(w)
        return z, tuple(new_state)


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
