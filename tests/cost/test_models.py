"""The cost model's operator calls of each model match the modules its step runs."""

from collections import Counter

import pytest
from torch import nn

from dynagnn.cost.models import ELEMENTWISE, model_calls, model_widths
from dynagnn.errors import ConfigError
from dynagnn.models import MODELS, build_model
from dynagnn.models.evolvegcn import MatGRUCell
from dynagnn.models.layers import GCNLayer


# aten ops that are no element-wise pass: profiled products, views, and in-place fills of new tensors
_NOT_ELEMENTWISE = {"mm", "addmm", "matmul", "bmm", "split", "split_with_sizes", "chunk", "view", "_unsafe_view",
                    "slice", "select", "unsqueeze", "expand", "alias", "detach", "transpose", "t", "zeros",
                    "zeros_like", "new_zeros", "empty", "empty_like", "fill_", "zero_"}


def traced_calls(model, in_dim: int, num_nodes: int = 11) -> list[tuple[str, int, int]]:
    """The operator calls one ``step`` runs, in order, as (operator, F_in, F_out), from the aten ops
    it dispatches: a profiled cell module (LSTM/GRU cell, the matrix GRU) is one call when entered
    (EvolveGCN-H's top-k is not costed and skipped); outside them a dense ``mm`` is an nn_op, a
    sparse product a graph_op, and any other op with an [N, w] output other than a view is an
    element-wise call ("sigmoid", "tanh" or "elementwise"). Widths of the products come from the
    modules (:func:`module_calls` checks them); here only their order counts, so they are (op, 0, 0)."""
    import numpy as np
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from dynagnn.graph.csr import normalize
    from dynagnn.models.evolvegcn import TopK

    inside = [0]
    out: list[tuple[str, int, int]] = []

    class Trace(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            res = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            if inside[0] or not (isinstance(res, torch.Tensor) and res.dim() == 2 and res.shape[0] == num_nodes):
                return res
            if name == "mm":
                out.append(("nn_op", 0, 0))
            elif "sparse" in name and "mm" in name:
                out.append(("graph_op", 0, 0))
            elif name not in _NOT_ELEMENTWISE and "sparse" not in name:
                op = name if name in ("sigmoid", "tanh") else "elementwise"
                out.append((op, res.shape[1], res.shape[1]))
            return res

    kinds = {nn.LSTMCell: "lstm", nn.GRUCell: "gru", MatGRUCell: "evolve", TopK: None}
    for m in model.modules():
        kind = next((k for cls, k in kinds.items() if isinstance(m, cls)), "")
        if kind != "":
            def enter(_m, _args, kind=kind):
                if kind and not inside[0]:
                    out.append((kind, 0, 0))
                inside[0] += 1
            m.register_forward_pre_hook(enter)
            m.register_forward_hook(lambda *_: inside.__setitem__(0, inside[0] - 1))
    rng = np.random.default_rng(0)
    row, col = rng.integers(0, num_nodes, 30), rng.integers(0, num_nodes, 30)
    adj = normalize(row, col, None, num_nodes)
    x = torch.randn(num_nodes, in_dim)
    state = model.initial_state(num_nodes)
    with Trace():
        model.step(adj, x, state)
    return out


def module_calls(model) -> Counter:
    """(operator, F_in, F_out) of every operator module of a model, as the cost model names them."""
    out = Counter()
    for m in model.modules():
        if isinstance(m, GCNLayer):
            out[("nn_op", m.in_dim, m.out_dim)] += 1
            w = m.out_dim if m.resolved_order() == "update_first" else m.in_dim
            out[("graph_op", w, w)] += 1
        elif isinstance(m, nn.LSTMCell):
            out[("lstm", m.input_size, m.hidden_size)] += 1
        elif isinstance(m, nn.GRUCell):
            out[("gru", m.input_size, m.hidden_size)] += 1
        elif isinstance(m, MatGRUCell):
            out[("evolve", m.rows, m.cols)] += 1
    return out


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("in_dim, hidden", [(5, 7), (40, 8), (8, 8)])
def test_calls_match_the_model_modules(name, in_dim, hidden):
    calls = model_calls(name, in_dim, hidden)
    model = build_model(name, in_dim, hidden)
    traced = traced_calls(model, in_dim)
    elementwise = Counter(c for c in traced if c[0] in ELEMENTWISE)
    assert Counter((op, fi, fo) for op, _, fi, fo, _ in calls.calls()) == module_calls(model) + elementwise
    # and in the order the step runs them (what the schedule stage's layer_times relies on)
    assert [c[0] for c in calls.calls()] == [c[0] for c in traced]
    assert calls.required_operators() == {c[0] for c in calls.calls()}


def test_registry_and_errors():
    for name in MODELS:  # every registered model has its own call list
        assert model_calls(name, 4, 8).calls()
    assert model_widths(["wdgcn"], [4], [8]) == [4, 8]
    assert set(model_widths(["tgcn"], [4], [8])) == {12, 16, 8}
    with pytest.raises(ConfigError, match="did you mean 'wdgcn'"):
        model_calls("wdgcm", 4, 8)
    with pytest.raises(ConfigError, match="positive"):
        model_calls("tgcn", 0, 8)
