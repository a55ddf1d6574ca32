"""The operator calls of one step of each of dynagnn's models, for the cost model.

:class:`ModelConfig` (below) describes a plain chain (GCN layers, then one vertex
RNN). dynagnn's own models are not all chains: T-GCN's gates and candidate are two GCN layers on
``[X ‖ H]``, GCRN convolves the input and the hidden state separately, MPNN-LSTM stacks two LSTMs.
:func:`model_calls` lists, for a registered model (:data:`dynagnn.models.MODELS`), exactly the
profiled operators its ``step`` runs, at the widths it runs them and in the order ``"auto"``
resolves to (:meth:`dynagnn.models.layers.GCNLayer.resolved_order`: update first exactly when the
output is narrower than the input). The result has the two methods a predictor reads (``calls()``
and ``required_operators()``), so it goes wherever a ModelConfig goes.

Element-wise work (bias adds, activations, gate arithmetic, concatenations) is listed op by op as
calls at the width of each op's output: ``sigmoid`` and ``tanh`` (profiled as such: 3-7x the
cost of a multiply per element on CPU) and ``elementwise`` for the rest (profiled as one ``a * b``
pass over ``[N, F]``): without it the predicted forward step of T-GCN was half the
measured one. A chunk is a view and costs nothing. What is not counted: EvolveGCN-H's top-k summary
(an ``[N, F] @ [F, 1]`` product and a top-k) and the element-wise ops of the matrix GRU, which act on
``[F_in, F_out]`` weights, not on N rows. EvolveGCN's matrix GRU is
costed as the profiled ``evolve`` operator (a ``GRUCell(F_out, F_out)`` over the F_in rows of the
weight); the model's matrix GRU multiplies ``[F_in, F_in]`` matrices into ``[F_in, F_out]``, the
same work when F_in = F_out and within a factor F_in / F_out otherwise. TM-GCN's M-transform is
listed at the model's default band width w (:data:`dynagnn.models.tmgcn.DEFAULT_W`): per layer and
step, the divisor min(w, t) (two ops of width 1), the sum of the w−1 kept outputs, the add of the
new one, the division, and the shift of the kept outputs (a concatenation of width (w−1)·H).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError, CostError
from ..models import model_class


Call = tuple[str, str, int, int, bool]  # (operator, role, F_in, F_out, has_backward)
ELEMENTWISE: tuple[str, ...] = ("elementwise", "sigmoid", "tanh")  # [N, F] -> [N, F] operators, one width


def _gcn(role: str, fi: int, fo: int, input_grad: bool, bias: bool = True) -> list[Call]:
    """A GCNLayer(fi, fo) with order "auto": update first when fo < fi, else aggregate first (the
    aggregation of an input that needs no gradient, the raw features, has no backward); then its
    bias add."""
    if fo < fi:
        ops = [("nn_op", f"{role}.update", fi, fo, True), ("graph_op", f"{role}.aggregate", fo, fo, True)]
    else:
        ops = [("graph_op", f"{role}.aggregate", fi, fi, input_grad), ("nn_op", f"{role}.update", fi, fo, True)]
    return ops + (_ew(f"{role}.bias", fo) if bias else [])


def _ew(role: str, *widths: int, op: str = "elementwise") -> list[Call]:
    """Element-wise ops (``op``: elementwise, sigmoid or tanh) with outputs of these widths, one call each."""
    if len(widths) == 1:
        return [(op, role, widths[0], widths[0], True)]
    return [(op, f"{role}{i}", w, w, True) for i, w in enumerate(widths)]


def _skip_gcn(role: str, fi: int, fo: int, input_grad: bool) -> list[Call]:
    """CD-GCN's GCN with skip ``ReLU([ÂZ ‖ ÂZ W + b])``: always aggregate first, then the update, the
    bias add, the concatenation and the activation (both of width fi + fo)."""
    return ([("graph_op", f"{role}.aggregate", fi, fi, input_grad), ("nn_op", f"{role}.update", fi, fo, True)]
            + _ew(f"{role}.bias", fo) + _ew(f"{role}.cat", fi + fo) + _ew(f"{role}.relu", fi + fo))


def _m_transform(role: str, h: int, w: int) -> list[Call]:
    """TM-GCN's M-transform step on [N, h] with band w (see the module docstring)."""
    count = _ew(f"{role}.count", 1, 1)  # count + 1, clamp at w
    if w == 1:
        return count
    return count + _ew(f"{role}.sum", h, h, h) + _ew(f"{role}.shift", (w - 1) * h)  # sum, + Y_t, / count


def _sigmoid(role: str, *widths: int) -> list[Call]:
    return _ew(role, *widths, op="sigmoid")


def _tanh(role: str, *widths: int) -> list[Call]:
    return _ew(role, *widths, op="tanh")


@dataclass(frozen=True)
class ModelCalls:
    """The operator calls of one snapshot step of model ``name`` with input width ``in_dim`` (F) and
    hidden width ``hidden`` (H); see the module docstring."""

    name: str
    in_dim: int
    hidden: int

    def __post_init__(self):
        model_class(self.name)  # an unknown name: the registry's error
        if int(self.in_dim) <= 0 or int(self.hidden) <= 0:
            raise ConfigError(f"model {self.name}: in_dim and hidden must be positive, got {self.in_dim}, {self.hidden}")

    def calls(self) -> list[Call]:
        f, h = int(self.in_dim), int(self.hidden)
        if self.name == "tgcn":  # gates GCN(F+H -> 2H), candidate GCN(F+H -> H), both on [X ‖ H]
            return (_ew("gates.cat", f + h) + _gcn("gates", f + h, 2 * h, True) + _sigmoid("gates.sigmoid", 2 * h)
                    + _ew("cand.in", h, f + h) + _gcn("cand", f + h, h, True)  # r ⊙ H, cat
                    + _tanh("cand.tanh", h) + _ew("out", h, h, h, h))  # u ⊙ H, 1 - u, (1 - u) ⊙ c, sum
        if self.name in ("evolvegcn_o", "evolvegcn_h"):  # per layer: evolve the weight, the GCN, ReLU
            return ([("evolve", "layer0.evolve", f, h, True)] + _gcn("layer0", f, h, False, bias=False)
                    + _ew("layer0.relu", h)
                    + [("evolve", "layer1.evolve", h, h, True)] + _gcn("layer1", h, h, True, bias=False)
                    + _ew("layer1.relu", h))
        if self.name == "wdgcn":
            return _gcn("gcn", f, h, False) + _ew("gcn.relu", h) + [("lstm", "lstm", h, h, True)]
        if self.name == "mpnn_lstm":  # the embedding [a ‖ b ‖ X] is the default ("concat")
            # the spatial part's output [H1 ‖ H2 ‖ X] carries the skip through the StackedGNN seam
            return (_gcn("gcn1", f, h, False) + _ew("gcn1.relu", h) + _gcn("gcn2", h, h, True) + _ew("gcn2.relu", h)
                    + _ew("spatial.cat", 2 * h + f) + [("lstm", "lstm1", 2 * h, h, True), ("lstm", "lstm2", h, h, True)]
                    + _ew("embedding.cat", 2 * h + f))
        if self.name == "cdgcn":  # two layers: GCN with skip (F_l -> F_l + H), LSTM(F_l + H -> H)
            return (_skip_gcn("layer0", f, h, False) + [("lstm", "layer0.lstm", f + h, h, True)]
                    + _skip_gcn("layer1", h, h, True) + [("lstm", "layer1.lstm", 2 * h, h, True)])
        if self.name == "tmgcn":  # two layers: GCN (ReLU after the first only), M-transform
            from ..models.tmgcn import DEFAULT_W

            return (_gcn("layer0", f, h, False) + _ew("layer0.relu", h) + _m_transform("layer0.m", h, DEFAULT_W)
                    + _gcn("layer1", h, h, True) + _m_transform("layer1.m", h, DEFAULT_W))
        if self.name == "gcrn":  # input filters GCN(F -> 3H), hidden filters GCN(H -> 2H) and GCN(H -> H) on r ⊙ H
            return (_gcn("conv_x", f, 3 * h, False) + _gcn("conv_h", h, 2 * h, True, bias=False)
                    + _ew("z.sum", h) + _sigmoid("z.sigmoid", h) + _ew("r.sum", h) + _sigmoid("r.sigmoid", h)
                    + _ew("r.times_h", h) + _gcn("conv_hh", h, h, True, bias=False) + _ew("cand.sum", h)
                    + _tanh("cand.tanh", h) + _ew("out", h, h, h, h))  # z ⊙ H, 1 - z, (1 - z) ⊙ h~, sum
        raise CostError(f"model {self.name}: registered in dynagnn.models but has no operator call list here")

    def required_operators(self) -> set[str]:
        return {c[0] for c in self.calls()}

    def widths(self) -> set[int]:
        """Every feature width an operator of the step runs at (what a profile grid must span)."""
        return {w for c in self.calls() for w in c[2:4]}

    def to_dict(self) -> dict:
        return {"name": self.name, "in_dim": int(self.in_dim), "hidden": int(self.hidden),
                "calls": [list(c) for c in self.calls()]}


def has_call_list(name: str) -> bool:
    """Whether :class:`ModelCalls` lists model ``name``'s operators (dynagnn's own models); a user's
    model by import path has none and is planned from its measured steps (:mod:`.step_times`)."""
    try:
        ModelCalls(str(name), 1, 1).calls()
    except CostError:
        return False
    return True


def model_calls(name: str, in_dim: int, hidden: int) -> ModelCalls:
    """The operator calls of model ``name`` (a key of :data:`dynagnn.models.MODELS`)."""
    return ModelCalls(str(name), int(in_dim), int(hidden))


def model_widths(names, in_dims, hiddens) -> list[int]:
    """Sorted union of the operator widths of every (model, in_dim, hidden) combination."""
    out: set[int] = set()
    for n in names:
        for f in in_dims:
            for h in hiddens:
                out |= model_calls(n, f, h).widths()
    return sorted(out)


@dataclass(frozen=True)
class ModelConfig:
    """The shape of a GCN-RNN model, as far as its cost goes.

    in_dim: node-feature width F. hidden_dims: output width of each GCN layer (its length is the
    number of GCN layers). rnn: ``"gru"`` or ``"lstm"`` (a cell over the vertices' last GCN output,
    WD-GCN / T-GCN / MPNN-LSTM style), ``"evolve"`` (EvolveGCN-O: each GCN layer's weight
    ``[F_in, F_out]`` evolved by a GRU cell per snapshot) or ``"none"``. rnn_hidden: the vertex
    RNN's hidden width (default: the last GCN width). order: ``"update_first"`` (``Â(XW)``, PyG's
    GCNConv) or ``"aggregate_first"`` (``(ÂX)W``) for every layer, or a tuple of these per layer
    (BLAD's operator-order manager chooses per layer).
    """

    in_dim: int
    hidden_dims: tuple[int, ...] = (32, 32)
    rnn: str = "gru"
    rnn_hidden: int | None = None
    order: str | tuple[str, ...] = "update_first"

    def __post_init__(self):
        object.__setattr__(self, "hidden_dims", tuple(int(h) for h in self.hidden_dims))
        if int(self.in_dim) <= 0 or not self.hidden_dims or min(self.hidden_dims) <= 0:
            raise ConfigError(f"model config needs in_dim > 0 and at least one positive GCN width, got "
                              f"in_dim={self.in_dim}, hidden_dims={self.hidden_dims}")
        if self.rnn not in ("gru", "lstm", "evolve", "none"):
            raise ConfigError(f"model config: rnn must be one of gru, lstm, evolve, none, got {self.rnn!r}")
        orders = self.layer_orders()
        if len(orders) != len(self.hidden_dims) or any(o not in ("update_first", "aggregate_first") for o in orders):
            raise ConfigError(f"model config: order must be 'update_first' or 'aggregate_first' (or one per "
                              f"layer, {len(self.hidden_dims)} layers), got {self.order!r}")

    def layer_orders(self) -> tuple[str, ...]:
        return (self.order,) * len(self.hidden_dims) if isinstance(self.order, str) else tuple(self.order)

    def calls(self) -> list[tuple[str, str, int, int, bool]]:
        """The operator calls of one snapshot step: (operator, role, F_in, F_out, has_backward).

        A GCN layer is an update ``nn_op(F_in -> F_out)`` and an aggregation ``graph_op`` at the width
        it runs on (F_out after the update, F_in before it). The first layer's aggregation in
        aggregate-first order has no backward (Â·X of input features needs no gradient); the first
        update's backward is counted whole (dX and dW), an over-estimate of one small GEMM.
        """
        dims = (int(self.in_dim),) + self.hidden_dims
        out: list[tuple[str, str, int, int, bool]] = []
        for k, order in enumerate(self.layer_orders()):
            fi, fo = dims[k], dims[k + 1]
            if self.rnn == "evolve":
                out.append(("evolve", f"layer{k}.evolve", fi, fo, True))
            if order == "update_first":
                out.append(("nn_op", f"layer{k}.update", fi, fo, True))
                out.append(("graph_op", f"layer{k}.aggregate", fo, fo, True))
            else:
                out.append(("graph_op", f"layer{k}.aggregate", fi, fi, k > 0))
                out.append(("nn_op", f"layer{k}.update", fi, fo, True))
        if self.rnn in ("gru", "lstm"):
            h = int(self.rnn_hidden or dims[-1])
            out.append((self.rnn, "rnn", dims[-1], h, True))
        return out

    def required_operators(self) -> set[str]:
        return {c[0] for c in self.calls()}
