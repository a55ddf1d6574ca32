"""The contract check a snapshot model passes before it trains, and what it tells the strategies.

A model implements :class:`~dynagnn.models.base.DynamicGNN` (``initial_state`` and one ``step`` per
snapshot: served by sequential, group, frames through the default ``frame_forward``, and vertex when
its step is row-local) or :class:`~dynagnn.models.base.StackedGNN` (``spatial`` and ``temporal``:
also ESDG's snapshot split and PiPAD's batched spatial parts). :func:`check_contract` builds the
class at a small width and runs steps on a 7-vertex graph, on the CPU:

- refused, in one line naming the class: a class that implements neither contract, that cannot be
  built as ``cls(in_dim, hidden_dim)``, a state that is not a tuple of tensors (checkpointing and the
  group strategy's hand-over carry it), a step output that is not ``[N, out_dim]``, a state whose
  shapes change from step to step, a step or its backward that raises, and non-determinism: two
  builds under one seed with other weights, or one step run twice under one seed with other outputs
  (every strategy is tested equal to sequential; that needs the same numbers twice);
- recorded (:class:`Contract`), for the strategies to refuse by name: whether the step is
  *row-local*, reading other vertices only through ``adj.spmm`` (the vertex split feeds a worker the
  halo rows there, and nowhere else): on a graph without edges, changing one vertex's features and
  state must leave every other vertex's output as it was, and the step must not read
  ``adj.edge_index`` or ``adj.adj_t`` (a PyTorch Geometric layer's input, which holds no halo); and, for a stacked
  model, whether its temporal part is row-independent (ESDG's split hands each worker a slice of
  the vertices there).

The result is cached per class: the built-in models are checked the same way when a strategy asks.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch

from dynagnn.errors import ConfigError
from dynagnn.graph import csr
from dynagnn.graph.csr import Adjacency

from .base import DynamicGNN, StackedGNN

NODES, IN_DIM, HIDDEN = 7, 5, 6   # the defaults; a run's check builds the model at its own widths
PROBE = 3        # the vertex whose features and state the row-locality probe changes
TOLERANCE = 1e-5


@dataclass(frozen=True)
class Contract:
    """What :func:`check_contract` found. ``kind``: ``stacked`` or ``snapshot`` (a plain DynamicGNN);
    ``row_local``: the step reads other vertices through ``adj.spmm`` alone; ``reads_edge_index``: it
    reads the PyTorch Geometric view of the adjacency; ``temporal_row_local``: a stacked model's
    temporal part is row-independent (None for a plain one); ``why_not_row_local``: the reason, in
    words, when ``row_local`` is False."""

    kind: str
    row_local: bool
    reads_edge_index: bool
    temporal_row_local: bool | None
    why_not_row_local: str = ""

    def refusal(self, needs: str) -> str | None:
        """Why a strategy that needs ``needs`` (``row_local`` or ``stacked``) cannot serve this model,
        None where it can."""
        if needs == "row_local" and not self.row_local:
            return self.why_not_row_local
        if needs == "stacked":
            if self.kind != "stacked":
                return ("it is a DynamicGNN with one step per snapshot, not a StackedGNN (spatial and temporal "
                        "parts), so the snapshots cannot be split between its GCN and its recurrence")
            if not self.temporal_row_local:
                return "its temporal part mixes vertices (row i of its output reads other rows of its input)"
        return None


class _WatchedAdjacency(Adjacency):
    """An adjacency that notes whether the model read its PyTorch Geometric view."""

    read_edges = False

    @property
    def edge_index(self) -> torch.Tensor:
        type(self).read_edges = True
        return super().edge_index

    @property
    def edge_weight(self) -> torch.Tensor:
        type(self).read_edges = True
        return super().edge_weight

    @property
    def adj_t(self) -> torch.Tensor:
        type(self).read_edges = True
        return super().adj_t


def _graph(with_edges: bool) -> _WatchedAdjacency:
    rng = np.random.default_rng(0)
    if with_edges:
        row, col = rng.integers(0, NODES, 16), rng.integers(0, NODES, 16)
        keep = row != col
        keys = np.unique(row[keep] * NODES + col[keep])
        row, col = keys // NODES, keys % NODES
    else:
        row = col = np.zeros(0, np.int64)
    adj = csr.normalize(row, col, None, NODES)
    return _WatchedAdjacency(adj.matrix, adj.symmetric)


def _fail(where: str, what: str) -> ConfigError:
    return ConfigError(f"model {where} fails dynagnn's model contract: {what}")


def _is_state(state) -> bool:
    return isinstance(state, tuple) and all(isinstance(s, torch.Tensor) for s in state)


def _build(cls, where: str, in_dim: int, hidden: int, seed: int = 0):
    torch.manual_seed(seed)
    try:
        model = cls(in_dim, hidden)
    except Exception as exc:   # a user's constructor may raise anything
        raise _fail(where, f"{cls.__qualname__}(in_dim, hidden_dim) raised {type(exc).__name__}: "
                           f"{' '.join(str(exc).split())[:160]}; the constructor must take (in_dim, hidden_dim)") from None
    return model


def _run(model: DynamicGNN, adj: Adjacency, x: torch.Tensor, state, where: str, seed: int = 1):
    torch.manual_seed(seed)
    try:
        out = model.step(adj, x, state)
    except Exception as exc:
        raise _fail(where, f"step raised {type(exc).__name__}: {' '.join(str(exc).split())[:160]}") from None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise _fail(where, f"step returns {type(out).__name__}; it must return (h [N, out_dim], state)")
    h, new = out
    if not isinstance(h, torch.Tensor) or tuple(h.shape) != (NODES, model.out_dim):
        shape = list(h.shape) if isinstance(h, torch.Tensor) else type(h).__name__
        raise _fail(where, f"step's output is {shape}, expected [N, out_dim] = [{NODES}, {model.out_dim}] "
                           f"for a {NODES}-vertex snapshot")
    if not _is_state(new):
        raise _fail(where, f"step's state is a {type(new).__name__} ({_describe(new)}), not a tuple of tensors: "
                           "checkpointing and the group strategy carry it between steps and processes")
    if [tuple(s.shape) for s in new] != [tuple(s.shape) for s in state]:
        raise _fail(where, f"step changes the state's shapes from {[list(s.shape) for s in state]} to "
                           f"{[list(s.shape) for s in new]}")
    return h, new


def _describe(state) -> str:
    if isinstance(state, (tuple, list)):
        return ", ".join(type(s).__name__ for s in state)
    return type(state).__name__


def _differs(a: torch.Tensor, b: torch.Tensor) -> bool:
    return not torch.allclose(a, b, rtol=0, atol=TOLERANCE)


def check_class(cls, where: str) -> None:
    """ConfigError, in one line, unless ``cls`` is a DynamicGNN (or StackedGNN) subclass: what a name
    can be checked for before the run's widths are known (the config's check, the registry's load)."""
    if not (isinstance(cls, type) and issubclass(cls, DynamicGNN)):
        raise _fail(where, f"{getattr(cls, '__qualname__', cls)} implements neither contract: subclass "
                           "dynagnn.models.DynamicGNN (initial_state, one step per snapshot) or StackedGNN "
                           "(spatial and temporal parts)")


@functools.cache
def _check(cls: type, where: str, in_dim: int, hidden: int) -> Contract:
    check_class(cls, where)
    model, twin = _build(cls, where, in_dim, hidden), _build(cls, where, in_dim, hidden)
    for (name, p), (_, q) in zip(model.state_dict().items(), twin.state_dict().items()):
        if p.shape != q.shape or not torch.equal(p, q):
            raise _fail(where, f"two builds under one seed differ in {name}: draw every random weight from torch's "
                               "generator (torch.manual_seed fixes it)")
    model.train()
    try:
        state = model.initial_state(NODES, "cpu")
    except Exception as exc:
        raise _fail(where, f"initial_state raised {type(exc).__name__}: {' '.join(str(exc).split())[:160]}") from None
    if not _is_state(state):
        raise _fail(where, f"initial_state returns a {type(state).__name__} ({_describe(state)}), not a tuple of "
                           "tensors")
    adj = _graph(True)
    x = torch.randn(NODES, in_dim, generator=torch.Generator().manual_seed(2))
    _WatchedAdjacency.read_edges = False
    h1, s1 = _run(model, adj, x, state, where)
    h2, s2 = _run(model, adj, x, s1, where)       # a second step from the first one's state
    again, _ = _run(model, adj, x, state, where)
    if not torch.equal(h1, again):
        raise _fail(where, "one step run twice under one seed gives other outputs: a strategy's loss can then "
                           "not equal sequential training's (draw randomness from torch's generator, or none)")
    try:
        (h2.square().sum() + sum(s.float().square().sum() for s in s2)).backward()
    except Exception as exc:
        raise _fail(where, f"the backward of two steps raised {type(exc).__name__}: "
                           f"{' '.join(str(exc).split())[:160]}") from None
    reads_edges = _WatchedAdjacency.read_edges
    why = _row_locality(model, state, where, in_dim)
    if reads_edges:
        why = ("it reads adj.edge_index or adj.adj_t (a PyTorch Geometric layer), which hold a worker's own rows "
               "only, not the halo rows of remote vertices that adj.spmm fetches")
    temporal = _temporal_row_local(model, where, in_dim) if isinstance(model, StackedGNN) else None
    return Contract("stacked" if isinstance(model, StackedGNN) else "snapshot", not why, reads_edges, temporal, why)


class _HaloProbe(Adjacency):
    """A graph without edges held as the vertex split holds a worker's rows: ``[N, N + 1]``, the last
    column a remote vertex whose row ``spmm`` fetches (zeros here). A step that reads the matrix other
    than through ``adj.spmm`` meets the shape a worker's rows have, as it would under the split."""

    def __init__(self, in_dim: int):
        eye = torch.arange(NODES + 1)
        super().__init__(csr.csr_matrix(eye, eye[:NODES], torch.ones(NODES), NODES, NODES + 1))

    def spmm(self, x: torch.Tensor) -> torch.Tensor:
        return csr.SpMM.apply(self, torch.cat([x, x.new_zeros(1, x.shape[1])]))

    @property
    def edge_index(self):
        raise RuntimeError("a worker's rows have no edge_index")

    edge_weight = adj_t = edge_index


def _perturbed(state, value: float = 1.0):
    """``state`` with vertex PROBE's entries moved along every axis of length N (an [L, N, H] state too)."""
    out = []
    for s in state:
        s = s.clone()
        if s.is_floating_point():
            for d, size in enumerate(s.shape):
                if size == NODES:
                    s.select(d, PROBE).add_(value)
        out.append(s)
    return tuple(out)


def _row_locality(model: DynamicGNN, state, where: str, in_dim: int) -> str:
    """Why the step is not row-local (module docstring), or "" when it is."""
    probe = _HaloProbe(in_dim)
    x = torch.randn(NODES, in_dim, generator=torch.Generator().manual_seed(3))
    x2 = x.clone()
    x2[PROBE] += 10.0
    torch.manual_seed(1)
    try:
        with torch.no_grad():
            base, _ = model.step(probe, x, state)
            torch.manual_seed(1)
            moved, _ = model.step(probe, x2, state)
            torch.manual_seed(1)
            moved_state, _ = model.step(probe, x, _perturbed(state))
    except Exception as exc:   # the probe's [N, N + 1] rows: a read of the matrix outside adj.spmm fails here
        return (f"its step reads the adjacency other than through adj.spmm ({type(exc).__name__} on a worker's "
                f"rows of Â, [N, N + halo]: {' '.join(str(exc).split())[:100]})")
    others = torch.arange(NODES) != PROBE
    if _differs(base[others], moved[others]):
        return ("its step mixes vertices outside adj.spmm (on a graph without edges, one vertex's features "
                "change other vertices' outputs), so a worker's rows would need every vertex")
    if _differs(base[others], moved_state[others]):
        return "its step mixes vertices' states outside adj.spmm (one vertex's state changes others' outputs)"
    return ""


def _temporal_row_local(model: StackedGNN, where: str, in_dim: int) -> bool:
    """Whether every layer's temporal part is row-independent (one vertex's input row changes only its
    own output row)."""
    empty = _graph(False)
    x = torch.randn(NODES, in_dim, generator=torch.Generator().manual_seed(4))
    others = torch.arange(NODES) != PROBE
    try:
        with torch.no_grad():
            z = x
            for layer, st in enumerate(model.split_state(model.initial_state(NODES, "cpu"))):
                y = model.spatial(layer, empty, z, x)
                zs, _ = model.temporal(layer, y[None], st)
                y2 = y.clone()
                y2[PROBE] += 10.0
                zs2, _ = model.temporal(layer, y2[None], st)
                if zs.dim() != 3 or tuple(zs.shape[:2]) != (1, NODES):
                    raise ValueError(f"layer {layer}'s temporal part returned {list(zs.shape)} for ys [1, {NODES}, "
                                     f"{y.shape[-1]}]; expected [W, n, H_l] = [1, {NODES}, H_l]")
                if _differs(zs[0][others], zs2[0][others]):
                    return False
                z = zs[0]
    except Exception as exc:   # a user's spatial or temporal part may raise anything
        raise _fail(where, f"the StackedGNN parts (spatial, temporal_state, temporal) raised {type(exc).__name__}: "
                           f"{' '.join(str(exc).split())[:160]}") from None
    return True


def check_contract(cls: type, where: str | None = None, in_dim: int = IN_DIM, hidden: int = HIDDEN) -> Contract:
    """Check ``cls`` against the model contract (module docstring), built as ``cls(in_dim, hidden)``
    (the run's widths: a model may need a hidden width its heads divide), and return what it serves;
    ConfigError, in one line naming ``where`` (the name or import path), where it fails. Cached per
    class and widths."""
    # the check seeds torch's generator; the run's stream must not depend on whether (or in which
    # process) a class was checked first
    with torch.random.fork_rng(devices=[]):
        return _check(cls, where or f"{cls.__module__}:{cls.__qualname__}", int(in_dim), int(hidden))
