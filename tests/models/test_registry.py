import pytest
import torch

from dynagnn.errors import ConfigError
from dynagnn.models import MODELS, LinkPredictor, NodeClassifier, NodeRegressor, build_model


def test_registry_keys_are_model_names():
    built_in = set(MODELS)
    assert built_in == {"tgcn", "evolvegcn_o", "evolvegcn_h", "wdgcn", "mpnn_lstm", "gcrn", "cdgcn", "tmgcn"}
    for key in built_in:
        cls = MODELS[key]
        assert cls.name == key
        m = build_model(key, 3, 4)
        assert isinstance(m, cls) and m.in_dim == 3 and m.hidden_dim == 4


def test_unknown_model_did_you_mean():
    with pytest.raises(ConfigError, match=r"unknown model 'tgnc' \(did you mean 'tgcn'\?\)") as e:
        build_model("tgnc", 3, 4)
    assert "known: tgcn" in str(e.value)
    with pytest.raises(ConfigError, match="unknown model 'zzz'; known:"):
        build_model("zzz", 3, 4)


def test_model_options_pass_through():
    assert build_model("mpnn_lstm", 3, 4, embedding="last").out_dim == 4
    assert build_model("mpnn_lstm", 3, 4).out_dim == 2 * 4 + 3
    assert build_model("tgcn", 3, 4, order="update_first").gates.order == "update_first"
    with pytest.raises(ValueError):
        build_model("tgcn", 3, 4, graph_input="h")


def test_heads_shapes():
    torch.manual_seed(0)
    h = torch.randn(10, 6)
    pairs = torch.tensor([[0, 1, 2], [3, 4, 5]])
    lp = LinkPredictor(6)
    s = lp(h, pairs)
    assert s.shape == (3,)
    # the score of (u, v) depends on the embeddings of u and v only, in order
    torch.testing.assert_close(s[1], lp(h, pairs[:, 1:2])[0])
    assert NodeClassifier(6, 3)(h).shape == (10, 3)
    assert NodeClassifier(6, 3)(h, torch.tensor([1, 2])).shape == (2, 3)
    assert NodeRegressor(6)(h).shape == (10,)
