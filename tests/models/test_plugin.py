"""A user's model named by import path: the registry loads it, the contract check refuses what would
break a strategy in one line, and records what it can serve (the built-in models are checked the
same way: EvolveGCN-H's top-k summary is what rules out the vertex split, found by the check)."""

import pytest

from dynagnn.config import check_value
from dynagnn.errors import ConfigError
from dynagnn.models import ALL_MODELS, MODELS, build_model, check_contract, model_class, resolve_model
from dynagnn.train.strategies import serving_strategies

from . import plugin_cells as cells

pytestmark = pytest.mark.usefixtures("clean_model_registry")

P = "tests.models.plugin_cells"


def test_an_import_path_loads_registers_and_builds():
    name = f"{P}:GRUCell"
    cls = model_class(name)
    assert cls is cells.GRUCell and MODELS[name] is cls and ALL_MODELS[name] is cls
    assert resolve_model(name) is cls            # once registered, a lookup is a lookup
    m = build_model(name, 3, 4)
    assert isinstance(m, cells.GRUCell) and (m.in_dim, m.hidden_dim) == (3, 4)


def test_contracts_and_what_they_serve():
    plain = check_contract(cells.GRUCell)
    assert (plain.kind, plain.row_local, plain.reads_edge_index, plain.temporal_row_local) == ("snapshot", True, False, None)
    stacked = check_contract(cells.StackedCell)
    assert (stacked.kind, stacked.row_local, stacked.temporal_row_local) == ("stacked", True, True)
    mixing = check_contract(cells.GlobalMeanCell)
    assert not mixing.row_local and "mixes vertices" in mixing.why_not_row_local
    assert check_contract(cells.StackedMixingCell).temporal_row_local is False
    adj_t = check_contract(cells.AdjTCell)
    assert adj_t.reads_edge_index and not adj_t.row_local and "adj.edge_index" in adj_t.why_not_row_local
    served = {c: serving_strategies(c, check_contract(c)) for c in (cells.GRUCell, cells.StackedCell,
                                                                  cells.GlobalMeanCell, cells.StackedMixingCell)}
    window = ["sequential", "vertex", "group", "blad_nm", "blad_even", "group_frames", "frames"]
    # auto is not among them: it trains none itself (its candidates are the strategies listed)
    assert served[cells.GRUCell] == window
    assert served[cells.StackedCell] == ["sequential", "vertex", "snapshot"] + window[2:]
    assert "vertex" not in served[cells.GlobalMeanCell] and "snapshot" not in served[cells.GlobalMeanCell]
    # its temporal part mixes vertices: neither split serves it, the whole-snapshot strategies do
    assert served[cells.StackedMixingCell] == window[:1] + window[2:]


def test_the_built_in_models_pass_the_same_check():
    for name, cls in MODELS.items():
        if ":" in name:
            continue
        c = check_contract(cls, name)
        assert c.row_local == (name != "evolvegcn_h"), name
        assert c.kind == ("stacked" if name in ("wdgcn", "mpnn_lstm", "cdgcn", "tmgcn") else "snapshot"), name
        assert not c.reads_edge_index


@pytest.mark.parametrize("path,message", [
    ("no_such_pkg.cells:Cell", "module no_such_pkg.cells does not import (ModuleNotFoundError"),
    (f"{P}:Missing", f"module {P} has no Missing; name a class defined in it"),
    (f"{P}:not_a_class", "is a function, not a class"),
    (f"{P}:NotAModel", "implements neither contract: subclass dynagnn.models.DynamicGNN"),
])
def test_a_path_that_names_no_model_is_one_line(path, message):
    with pytest.raises(ConfigError) as e:
        model_class(path)
    text = str(e.value)
    assert message in text and path in text and "\n" not in text
    assert path not in ALL_MODELS                  # nothing half-registered
    # the config and the CLI's --model refuse it alike, through the schema's registry keyword
    with pytest.raises(ConfigError) as e:
        check_value("train.model", path, "--model")
    assert message in str(e.value) and str(e.value).startswith("--model: ")


@pytest.mark.parametrize("cls,message", [
    (cells.WrongShapeCell, "step's output is [7, 7], expected [N, out_dim] = [7, 6]"),
    (cells.ListStateCell, "step's state is a list (Tensor), not a tuple of tensors"),
    (cells.NumpyNoiseCell, "one step run twice under one seed gives other outputs"),
    (cells.NoArgsCell, "the constructor must take (in_dim, hidden_dim)"),
    (cells.BadTemporalCell, "step's output is [6], expected [N, out_dim] = [7, 6]"),
])
def test_a_model_that_breaks_the_contract_is_one_line(cls, message):
    path = f"{P}:{cls.__name__}"
    with pytest.raises(ConfigError) as e:
        check_contract(cls, path)
    assert message in str(e.value) and path in str(e.value) and "\n" not in str(e.value)


def test_the_check_runs_at_the_runs_widths():
    # 4 heads need a width they divide: refused at 6, served at the run's 8
    with pytest.raises(ConfigError, match="raised AssertionError: embed_dim must be divisible by num_heads"):
        check_contract(cells.HeadsCell, "heads", 5, 6)
    assert check_contract(cells.HeadsCell, "heads", 5, 8).kind == "snapshot"


def test_a_broken_model_stops_train_before_anything_is_written(tmp_path, capsys):
    from dynagnn.cli import main
    from tests.testing.stores import small_store

    store = small_store(tmp_path / "s.zarr")
    rc = main(["-q", "train", str(store), "--out-dir", str(tmp_path / "o"), "--epochs", "1", "--model",
               f"{P}:WrongShapeCell"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "fails dynagnn's model contract: step's output is" in err
    assert not (tmp_path / "o").exists()


def test_reading_the_matrix_outside_spmm_is_not_row_local():
    c = check_contract(cells.DenseReadCell)
    assert not c.row_local and "reads the adjacency other than through adj.spmm" in c.why_not_row_local
    assert check_contract(cells.LayeredStateCell).row_local is False   # mixes through an [L, N, H] state


def test_a_config_names_a_model_by_import_path():
    check_value("train.model", f"{P}:StackedCell", "--model")
    assert f"{P}:StackedCell" in MODELS


def test_the_check_leaves_torchs_generator_as_it_was():
    class Fresh(cells.GRUCell):   # a class not checked yet
        pass

    import torch

    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    check_contract(Fresh)
    assert torch.equal(torch.random.get_rng_state(), before)
