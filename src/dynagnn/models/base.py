"""The interface every snapshot-based dynamic GNN of dynagnn implements.

A model is a recurrence over snapshots: ``h_t, state_t = step(Â_t, X_t, state_{t-1})``. A training
strategy runs the steps of a window (cut into checkpointed time blocks, frames, or per-worker
ranges) and the engine owns the epochs; a model owns one step. ``state`` is a tuple of tensors (RNN hidden/cell
states ``[N, H]``, or EvolveGCN's evolving weight matrices), so that
``torch.utils.checkpoint`` can carry it across block boundaries.

:class:`StackedGNN` is the seam of the models whose every layer is a spatial (GCN) part on one
snapshot followed by a per-vertex temporal part along time (WD-GCN, MPNN-LSTM, CD-GCN, TM-GCN): ESDG's
snapshot partitioning redistributes between the two, PiPAD batches a frame's spatial parts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

import torch
from torch import nn

from dynagnn.graph import csr
from dynagnn.graph.csr import Adjacency
from dynagnn.graph.overlap import PartitionGraph
from dynagnn.timing import section

State = tuple[torch.Tensor, ...]

# what a model's frame path reads (DynamicGNN.frame_needs): raw features X [S, N, F], the first-layer
# aggregation ÂX [S, N, F], the partitions' matrices (parallel aggregation of any [S, N, F'] input) and
# each snapshot's Â (per-step aggregation of a state-dependent input)
FRAME_INPUTS = ("x", "ax", "parts", "adjs")


@dataclass
class Frame:
    """S consecutive snapshots on the device, as a model's :meth:`DynamicGNN.frame_forward` reads them
    (PiPAD's frame). Only what the model's :meth:`~DynamicGNN.frame_needs` names is filled in.

    ``x``: X_t stacked [S, N, F]; ``ax``: ``Â_t X_t`` [S, N, F] (from PiPAD's reuse cache or the
    parallel aggregation; no gradient, it is data); ``parts``: :class:`PartitionGraph` s covering the S
    snapshots in order; ``adjs``: the S normalised adjacencies ``Â_t``.
    """

    size: int
    num_nodes: int
    x: torch.Tensor | None = None
    ax: torch.Tensor | None = None
    parts: list[PartitionGraph] | None = None
    adjs: list[Adjacency] | None = None

    def aggregate(self, z: torch.Tensor) -> torch.Tensor:
        """``Â_t Z_t`` for every snapshot: [S, N, F'] -> [S, N, F'] (differentiable in z): PiPAD's
        parallel aggregation over the partitions, else one product per snapshot."""
        with section("graph_op"):
            if self.parts is not None:
                if len(self.parts) == 1:
                    return self.parts[0].aggregate(z)
                # split, not z[a:b] per partition (see PartitionGraph.aggregate)
                zs = torch.split(z, [p.size for p in self.parts])
                return torch.cat([p.aggregate(zi) for p, zi in zip(self.parts, zs)])
            if self.size == 1:   # views, not a stack of an unbind: a frame of one costs one product
                return csr.aggregate(self.adjs[0], z.squeeze(0)).unsqueeze(0)
            return torch.stack([csr.aggregate(adj, zi) for adj, zi in zip(self.adjs, z.unbind(0))])

    def aggregate_each(self, zs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """``Â_t Z_t`` of each snapshot (``zs``: S tensors [N, F']) as S tensors, one autograd path
        per partition: :meth:`aggregate`'s values without its concatenation, whose backward would
        feed every partition a gradient, zeros where no output is read."""
        with section("graph_op"):
            if self.parts is None:
                return [csr.aggregate(adj, zi) for adj, zi in zip(self.adjs, zs)]
            out, b = [], 0
            for p in self.parts:
                blk = zs[b].unsqueeze(0) if p.size == 1 else torch.stack(list(zs[b:b + p.size]))
                out.extend(p.aggregate(blk).unbind(0))
                b += p.size
            return out

    def adjacency(self, i: int) -> Adjacency:
        return self.adjs[i]


class DynamicGNN(nn.Module):
    """Base class: subclasses set ``name`` and implement :meth:`initial_state` and :meth:`step`.

    ``in_dim``: node-feature width F; ``hidden_dim``: width H of the embedding each step returns.
    """

    name: ClassVar[str] = ""

    def __init__(self, in_dim: int, hidden_dim: int):
        super().__init__()
        self.in_dim = int(in_dim)
        self.hidden_dim = int(hidden_dim)

    @property
    def out_dim(self) -> int:
        return self.hidden_dim

    def initial_state(self, num_nodes: int, device: torch.device | str = "cpu") -> State:
        raise NotImplementedError

    def zero_state(self, num_nodes: int, device: torch.device | str = "cpu", count: int = 1) -> State:
        """``count`` zero tensors [N, H]: the initial hidden (and cell) states of an RNN."""
        return tuple(torch.zeros(num_nodes, self.hidden_dim, device=device) for _ in range(count))

    def gcn_layers(self) -> list:
        """Every GCNLayer of the model, in registration order (BLAD's operator-order manager sets
        their order)."""
        from dynagnn.models.layers import find_gcn_layers
        return find_gcn_layers(self)

    def step(self, adj: Adjacency, x: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """One snapshot: ``adj`` is Â_t [N, N], ``x`` is X_t [N, F]; returns (h_t [N, H], state_t)."""
        raise NotImplementedError

    @property
    def first_aggregation_reads_x(self) -> bool:
        """Whether the model's first aggregation is ``Â_t X_t`` alone (no parameter, no state), so that
        PiPAD can compute it once and reuse it across frames and epochs. False unless a model says so."""
        return False

    def frame_needs(self) -> set[str]:
        """Which of :data:`FRAME_INPUTS` :meth:`frame_forward` reads; the frame engine feeds only those."""
        return {"x", "adjs"}

    def frame_forward(self, frame: Frame, state: State) -> tuple[Sequence[torch.Tensor], State]:
        """The S steps of ``frame`` from ``state``: (S embeddings [N, H] (a list or an [S, N, H]
        tensor), the state after the last). Equal to S calls of :meth:`step`; a model overrides it to
        batch what does not depend on the state (PiPAD's parallel GNN). This default is those calls."""
        hs = []
        for i in range(frame.size):
            h, state = self.step(frame.adjacency(i), frame.x[i], state)
            hs.append(h)
        return hs, state

    def forward(self, adjs: Sequence[Adjacency], xs: Sequence[torch.Tensor],
                state: State | None = None) -> tuple[torch.Tensor, State]:
        """Run the recurrence over a window; returns the last embedding and the final state."""
        if len(adjs) != len(xs) or not adjs:
            raise ValueError(f"a window needs as many feature matrices as snapshots (got {len(adjs)} and {len(xs)})")
        if state is None:
            state = self.initial_state(adjs[0].num_nodes, xs[0].device)
        h = None
        for adj, x in zip(adjs, xs):
            h, state = self.step(adj, x, state)
        return h, state


class StackedGNN(DynamicGNN):
    """A model of ``num_layers`` (spatial, temporal) layers; :meth:`step` is generic.

    Subclasses set :attr:`num_layers` and implement:

    - ``spatial(layer, adj, z, x) -> y``: the graph part of layer ``layer`` on one snapshot. ``z``
      [N, F_l] is the layer's input (``x`` itself for layer 0), ``x`` [N, F] the snapshot's raw
      features (for skip connections), ``y`` [N, S_l].
    - ``temporal_state(layer, num_nodes, device) -> state``: the layer's initial per-vertex state, a
      tuple of tensors that ALL have the vertex axis first (dim 0), so that any subset of rows of
      each is the state of that subset of vertices.
    - ``temporal(layer, ys, state) -> (zs, state)``: the per-vertex part over W consecutive snapshots
      of n vertices, ``ys`` [W, n, S_l] -> ``zs`` [W, n, H_l], ``state`` with the same n rows in the
      same order. Row-independent: row i of every output depends only on row i of the inputs.

    The per-snapshot recurrence is then, with ``state`` the flat concatenation of every layer's
    temporal state (layer 0's tensors first)::

        z = x
        for l in range(num_layers):
            y = spatial(l, adj, z, x)                   # [N, S_l]
            zs, state_l = temporal(l, y[None], state_l)  # [1, N, H_l]
            z = zs[0]
        return z, state                                 # the last layer's output is the embedding
    """

    num_layers: int = 1

    def spatial(self, layer: int, adj: Adjacency, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def temporal_state(self, layer: int, num_nodes: int, device: torch.device | str = "cpu") -> State:
        raise NotImplementedError

    def temporal(self, layer: int, ys: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        raise NotImplementedError

    def state_sizes(self) -> list[int]:
        """How many tensors each layer's temporal state holds (to split the flat state)."""
        sizes = self.__dict__.get("_state_sizes")
        if sizes is None:
            sizes = [len(self.temporal_state(l, 0, "meta")) for l in range(self.num_layers)]
            self.__dict__["_state_sizes"] = sizes
        return list(sizes)

    def split_state(self, state: State) -> list[State]:
        """The flat state of :meth:`initial_state`/:meth:`step` cut into one tuple per layer."""
        out, i = [], 0
        for k in self.state_sizes():
            out.append(tuple(state[i:i + k]))
            i += k
        if i != len(state):
            raise ValueError(f"{type(self).__name__}: a state of {len(state)} tensors, expected {i}")
        return out

    def initial_state(self, num_nodes: int, device: torch.device | str = "cpu") -> State:
        return tuple(s for l in range(self.num_layers) for s in self.temporal_state(l, num_nodes, device))

    def step(self, adj: Adjacency, x: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        z, new = x, []
        for l, st in enumerate(self.split_state(state)):
            y = self.spatial(l, adj, z, x)
            zs, st = self.temporal(l, y[None], st)
            z = zs[0]
            new.extend(st)
        return z, tuple(new)

    def spatial_frame(self, layer: int, frame: Frame, z: torch.Tensor | None) -> torch.Tensor:
        """:meth:`spatial` of every snapshot of ``frame``: ``z`` [S, N, F_l] (None for layer 0: the
        raw features) -> [S, N, S_l]. This default calls :meth:`spatial` per snapshot; a model whose
        spatial part it can batch overrides it (one GEMM on the row-stacked features, the parallel
        aggregation, ``Â X`` from the reuse cache)."""
        xs = frame.x.unbind(0)
        zs = xs if z is None else z.unbind(0)      # unbind: one gradient for the frame, not S slices
        return torch.stack([self.spatial(layer, frame.adjacency(i), zs[i], xs[i]) for i in range(frame.size)])

    def frame_forward(self, frame: Frame, state: State) -> tuple[Sequence[torch.Tensor], State]:
        """Each layer's spatial part over the whole frame, then its temporal part along the frame:
        the ESDG seam, which PiPAD batches."""
        z, new = None, []
        for l, st in enumerate(self.split_state(state)):
            ys = self.spatial_frame(l, frame, z)
            with section("rnn"):
                z, st = self.temporal_frame(l, ys, st)
            new.extend(st)
        return z, tuple(new)

    def temporal_frame(self, layer: int, ys: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """:meth:`temporal` over a frame (the same values); a model may batch its input projections
        here (:func:`lstm_frame`)."""
        return self.temporal(layer, ys, state)


def lstm_over_time(cell: nn.LSTMCell, ys: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
    """Run a per-vertex :class:`torch.nn.LSTMCell` over ``ys`` [W, n, S] from ``state`` = (h, c),
    each [n, H]; returns (hs [W, n, H], (h, c)). The n vertices are the cell's batch."""
    h, c = state
    hs = []
    for y in ys:
        h, c = cell(y, (h, c))
        hs.append(h)
    return torch.stack(hs), (h, c)


def lstm_frame(cell: nn.LSTMCell, ys: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
    """:func:`lstm_over_time` as one call of ATen's sequence LSTM with the cell's weights: the input
    projection of all W steps is one GEMM and the per-step loop and its backward run in C++ (cuDNN on
    a GPU), not one Python-level cell per step. The same values. ``ys`` [W, n, S], ``state`` (h, c)
    [n, H] -> (hs [W, n, H], (h, c))."""
    h, c = state
    params = [cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh]
    hs, hn, cn = torch.lstm(ys, (h[None], c[None]), params, True, 1, 0.0, cell.training, False, False)
    return hs, (hn[0], cn[0])
