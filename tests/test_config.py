"""Config validation: defaults filled in, unknown keys and missing cross-field values refused."""

import pytest
import yaml

from dynagnn.config import dataset_spec, load_config, validate
from dynagnn.errors import ConfigError

MIN = {"datasets": {"a": {"format": "snap-edgelist", "path": "x.txt", "snapshots": {"by": "count", "size": 10}}}}


def test_defaults_filled():
    cfg = validate(MIN)
    spec = cfg["datasets"]["a"]
    assert cfg["dask"] == {"scheduler_address": None, "workers": 2, "processes": True}
    assert cfg["results"] == "results" and cfg["ingest_threads"] == 2
    assert spec["self_loops"] == "drop" and spec["edge_life"] == 1 and spec["empty_snapshots"] == "keep"
    assert spec["features"] == {"kind": "auto", "dim": 32, "seed": 0}
    assert spec["snapshots"] == {"by": "count", "size": 10, "start": None}
    assert "dask" not in MIN  # the input is not modified


def test_unknown_key_named_with_suggestion():
    bad = {"datasets": {"a": {**MIN["datasets"]["a"], "edge_lief": 3}}}
    with pytest.raises(ConfigError, match=r"datasets\.a: unknown key 'edge_lief' \(did you mean 'edge_life'\?\)"):
        validate(bad)
    with pytest.raises(ConfigError, match=r"\(top level\): unknown key 'datsets'"):
        validate({**MIN, "datsets": {}})


@pytest.mark.parametrize("change, message", [
    ({"format": "csv"}, r"datasets\.a\.format: 'csv' is not one of"),
    ({"snapshots": {"by": "time"}}, "by time needs a width"),
    ({"snapshots": {"by": "count"}}, "by count needs a size"),
    ({"snapshots": {}}, "say how to cut the events"),
    ({"edge_life": 0}, r"datasets\.a\.edge_life: 0 is less than the minimum of 1"),
    ({"path": ""}, "needs a path"),
])
def test_bad_values(change, message):
    with pytest.raises(ConfigError, match=message):
        validate({"datasets": {"a": {**MIN["datasets"]["a"], **change}}})


def test_synthetic_needs_generator():
    with pytest.raises(ConfigError, match="needs a generator"):
        validate({"datasets": {"s": {"format": "synthetic"}}})


def test_load_config_file_and_overrides(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(MIN))
    cfg = load_config(f, {"seed": 5})
    assert cfg["seed"] == 5 and dataset_spec(cfg, "a")["path"] == "x.txt"
    with pytest.raises(ConfigError, match="no dataset 'b' in the config; it has: a"):
        dataset_spec(cfg, "b")
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "missing.yaml")
    f.write_text("datasets: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(f)


def test_embedded_default_config_is_valid():
    from pathlib import Path

    cfg = load_config(Path(__file__).resolve().parents[1] / "config.yaml")
    assert {"collegemsg", "pubmed", "blad_small"} <= set(cfg["datasets"])
