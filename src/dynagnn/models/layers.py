"""The GCN layer, with its graph operator and its NN operator kept apart.

Kipf and Welling's layer is ``Y = Â X W + b`` with ``Â = D^-1/2 (A + I) D^-1/2`` (computed once per
snapshot by :func:`dynagnn.graph.csr.normalize`), ``X`` [N, F_in], ``W`` [F_in, F_out], ``b`` [F_out].
It is two operators:

- the graph operator ``aggregate``: ``Â·Z`` (sparse [N, N] times dense [N, F]), cost ~ nnz·F;
- the NN operator ``update``: ``Z·W`` (dense GEMM), cost ~ N·F_in·F_out.

Matrix products associate, so ``(ÂX)W == Â(XW)`` and the order is free. Aggregating the narrower
matrix is cheaper: aggregate first when ``F_in <= F_out``, update first when ``F_out < F_in``. That is
what ``order="auto"`` does; BLAD's operator-order manager overrides it per layer by setting
``layer.order`` (it measures, where "auto" only counts columns). The bias is added after both, so it
is outside the choice.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import torch
from torch import nn

from dynagnn.graph import csr
from dynagnn.graph.csr import Adjacency
from dynagnn.timing import section

ORDERS = ("auto", "aggregate_first", "update_first")


def glorot_(t: torch.Tensor) -> torch.Tensor:
    """Glorot/Xavier uniform init of a [fan_in, fan_out] matrix, as Kipf and Welling (and PyG) do."""
    bound = math.sqrt(6.0 / (t.shape[-2] + t.shape[-1]))
    with torch.no_grad():
        return t.uniform_(-bound, bound)


class GCNLayer(nn.Module):
    """One GCN layer ``Y = Â X W + b`` with a swappable operator order.

    ``in_dim`` F_in, ``out_dim`` F_out; ``weight`` [F_in, F_out] (Glorot), ``bias`` [F_out] (zeros) or
    None. ``order``: "aggregate_first" computes ``(ÂX)W``, "update_first" ``Â(XW)``, "auto" picks
    update-first exactly when the output is narrower than the input. Settable after construction.
    """

    def __init__(self, in_dim: int, out_dim: int, bias: bool = True, order: str = "auto"):
        super().__init__()
        self.in_dim = int(in_dim)
        self.out_dim = int(out_dim)
        self.weight = nn.Parameter(glorot_(torch.empty(self.in_dim, self.out_dim)))
        self.bias = nn.Parameter(torch.zeros(self.out_dim)) if bias else None
        self.order = order

    @property
    def order(self) -> str:
        return self._order

    @order.setter
    def order(self, value: str) -> None:
        if value not in ORDERS:
            raise ValueError(f"GCNLayer order must be one of {', '.join(ORDERS)}, got {value!r}")
        self._order = value

    def resolved_order(self, in_dim: int | None = None, out_dim: int | None = None) -> str:
        """The order that will run: "aggregate_first" or "update_first" (resolves "auto")."""
        if self._order != "auto":
            return self._order
        fi = self.in_dim if in_dim is None else in_dim
        fo = self.out_dim if out_dim is None else out_dim
        return "update_first" if fo < fi else "aggregate_first"

    @staticmethod
    def aggregate(adj: Adjacency | torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """Graph operator: ``Â·X`` [N, F] -> [N, F] (sparse-dense product)."""
        with section("graph_op"):
            return csr.aggregate(adj, x)

    @staticmethod
    def update(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """NN operator: ``X·W`` [N, F_in] x [F_in, F_out] -> [N, F_out]."""
        with section("nn_op"):
            return x @ weight

    def forward(self, adj: Adjacency | torch.Tensor, x: torch.Tensor,
                weight: torch.Tensor | None = None) -> torch.Tensor:
        """``Â X W + b``: ``x`` [N, F_in] -> [N, F_out].

        ``weight`` [F_in, F_out], when given, replaces ``self.weight`` for this call (EvolveGCN passes
        the weight its RNN evolved for this snapshot); the bias, if any, is still this layer's.
        """
        w = self.weight if weight is None else weight
        if self.resolved_order(w.shape[0], w.shape[1]) == "aggregate_first":
            y = self.update(self.aggregate(adj, x), w)
        else:
            y = self.aggregate(adj, self.update(x, w))
        return y if self.bias is None else y + self.bias

    def stacked_update(self, az: torch.Tensor, weight: torch.Tensor | None = None) -> torch.Tensor:
        """``(ÂZ)W + b`` for a frame's already aggregated features ``az`` [S, N, F_in] -> [S, N, F_out]:
        one GEMM on the row-stacked features (PiPAD's parallel update; the weight is read once for the
        S snapshots). The frame path always aggregates first, the order that lets ``ÂX`` be reused."""
        s, n, f = az.shape
        w = self.weight if weight is None else weight
        with section("nn_op"):
            flat = az.reshape(s * n, f)
            y = flat @ w if self.bias is None else torch.addmm(self.bias, flat, w)
        return y.view(s, n, -1)

    def extra_repr(self) -> str:
        return f"{self.in_dim}, {self.out_dim}, bias={self.bias is not None}, order={self._order!r}"


class GCN(nn.Module):
    """A stack of GCN layers with an activation between them (and after the last if ``last_act``).

    ``dims`` = [F_0, F_1, ..., F_L]: layer l maps F_{l-1} -> F_l. Used for static baselines and as the
    spatial part of stacked models (WD-GCN, MPNN-LSTM build their own to keep intermediate outputs).
    """

    def __init__(self, dims: Sequence[int], act: Callable[[torch.Tensor], torch.Tensor] = torch.relu,
                 last_act: bool = False, bias: bool = True, order: str = "auto"):
        super().__init__()
        if len(dims) < 2:
            raise ValueError(f"GCN needs at least an input and an output width, got dims={list(dims)}")
        self.layers = nn.ModuleList(GCNLayer(a, b, bias=bias, order=order) for a, b in zip(dims[:-1], dims[1:]))
        self.act = act
        self.last_act = last_act

    def gcn_layers(self) -> list[GCNLayer]:
        return list(self.layers)

    def forward(self, adj: Adjacency | torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(adj, x)
            if i < len(self.layers) - 1 or self.last_act:
                x = self.act(x)
        return x


def find_gcn_layers(module: nn.Module) -> list[GCNLayer]:
    """Every :class:`GCNLayer` inside ``module``, in registration order (for the operator-order manager)."""
    return [m for m in module.modules() if isinstance(m, GCNLayer)]
