"""The cost model's operator calls of each model match the modules its step runs."""

from collections import Counter

import pytest
from torch import nn

from dynagnn.cost.models import MODEL_NAMES, model_calls, model_widths
from dynagnn.errors import ConfigError
from dynagnn.models import MODELS, build_model
from dynagnn.models.evolvegcn import MatGRUCell
from dynagnn.models.layers import GCNLayer


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
    assert Counter((op, fi, fo) for op, _, fi, fo, _ in calls.calls()) == module_calls(build_model(name, in_dim, hidden))
    assert calls.required_operators() == {c[0] for c in calls.calls()}


def test_registry_and_errors():
    assert set(MODEL_NAMES) == set(MODELS)
    assert model_widths(["wdgcn"], [4], [8]) == [4, 8]
    assert set(model_widths(["tgcn"], [4], [8])) == {12, 16, 8}
    with pytest.raises(ConfigError, match="did you mean 'wdgcn'"):
        model_calls("wdgcm", 4, 8)
    with pytest.raises(ConfigError, match="positive"):
        model_calls("tgcn", 0, 8)
