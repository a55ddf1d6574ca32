"""The ``graph_input`` train option: T-GCN's variant from the config and the CLI, and what the
frames strategy makes of each ("x": Â_t X_t reused; "xh": no reuse, said in the log)."""

import logging

import pytest

from dynagnn.cli import TRAIN_FLAGS, _parser
from dynagnn.errors import ConfigError
from dynagnn.train.engine import TrainConfig, Trainer

from tests.testing.stores import small_store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return small_store(tmp_path_factory.mktemp("graph_input") / "regress.zarr", labels="regress", num_snapshots=6)


def config(**kw):
    return TrainConfig.from_dict({"model": "tgcn", "hidden": 4, "window": 3, "epochs": 1, **kw})


@pytest.mark.parametrize("given, expected", [({}, "xh"), ({"graph_input": "x"}, "x"), ({"graph_input": "xh"}, "xh")])
def test_graph_input_reaches_the_model(store, given, expected):
    tr = Trainer(store, config(**given), progress=False)
    assert tr.run.model.graph_input == expected
    # the variants' weights differ: "x" has a GCN per gate on X alone, "xh" two on [X ‖ H]
    names = {k.split(".")[0] for k, _ in tr.run.model.named_parameters()}
    assert names == ({"gcn_u", "gcn_r", "gcn_c", "lin_u", "lin_r", "lin_c"} if expected == "x" else {"gates", "cand"})


def test_graph_input_changes_the_checkpoint_fingerprint_of_tgcn_only():
    assert config().fingerprint("c", 3) == config(graph_input="xh").fingerprint("c", 3)
    assert config().fingerprint("c", 3) != config(graph_input="x").fingerprint("c", 3)
    gcrn = {"model": "gcrn"}
    assert config(**gcrn).fingerprint("c", 3) == config(**gcrn, graph_input="x").fingerprint("c", 3)


def test_graph_input_of_another_model_is_refused(store):
    with pytest.raises(ConfigError, match=r"graph_input 'x' is T-GCN's variant \(tgcn\); gcrn has none"):
        Trainer(store, config(model="gcrn", graph_input="x"), progress=False)


@pytest.mark.parametrize("model, strategy", [("tgn", "events"), ("jodie", "tgnn"), ("graphsage", "sampled")])
def test_graph_input_of_an_event_or_sampled_model_is_refused(model, strategy):
    from dynagnn.train.strategies import strategy_class

    cfg = config(model=model, strategy=strategy, graph_input="x")
    with pytest.raises(ConfigError, match=rf"graph_input 'x' is T-GCN's variant \(tgcn\); {model} has none"):
        strategy_class(strategy)(cfg).build_model(4)
    assert strategy_class(strategy)(config(model=model, strategy=strategy)).build_model(4) is not None


def test_graph_input_flag_and_bad_value():
    assert "graph_input" in TRAIN_FLAGS
    args = _parser().parse_args(["train", "s.zarr", "--out-dir", "out", "--graph-input", "x"])
    assert args.graph_input == "x"
    with pytest.raises(ConfigError, match=r"graph_input.*'xy' is not one of \['xh', 'x'\]"):
        config(graph_input="xy")


@pytest.mark.parametrize("graph_input, reused", [("x", True), ("xh", False)])
def test_frames_reuse_only_for_x(store, caplog, graph_input, reused):
    with caplog.at_level(logging.INFO, logger="dynagnn.train.frame_engine"):
        tr = Trainer(store, config(graph_input=graph_input, strategy="frames", frame_size=2, pipeline="off"),
                     progress=False)
    assert tr.strategy.engine.reuse is reused
    assert ("is not reused" in caplog.text) is not reused
    metrics, _ = tr.fit()
    # "x": the training windows [0, 2] and [1, 3] aggregate each of snapshots 0-3 once, then read
    # the cache; "xh" aggregates inside its gates (none counted as reusable first aggregations)
    assert metrics["first_layer_aggregations"].tolist() == [4.0 if reused else 0.0]
    tr.strategy.engine.close()
