"""Config validation: defaults filled in, unknown keys and missing cross-field values refused."""

import pytest
import yaml

from dynagnn.api.runs import load_config, validate
from dynagnn.config import dataset_spec
from dynagnn.errors import ConfigError

MIN = {"datasets": {"a": {"format": "snap-edgelist", "path": "x.txt", "snapshots": {"by": "count", "size": 10}}}}


def test_defaults_filled():
    cfg = validate(MIN)
    spec = cfg["datasets"]["a"]
    assert cfg["dask"] == {"scheduler_address": None, "workers": 2, "processes": True}
    assert cfg["results"] == "results" and cfg["ingest_threads"] == 2
    assert spec["self_loops"] == "auto" and spec["edge_weight"] == "auto"
    assert spec["edge_life"] == 1 and spec["empty_snapshots"] == "keep"
    assert spec["features"] == {"kind": "auto", "dim": 32, "seed": 0}
    assert spec["snapshots"] == {"by": "count", "size": 10, "start": None, "max_count": 100000}
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


@pytest.mark.parametrize("text, message", [
    ("a: 1\nb: 2\na: 3\n", r"c\.yaml, line 3: duplicate key 'a' \(first given at line 1\)"),
    ("train:\n  hidden: 8\n  lr: 0.1\n  hidden: 16\n", r"line 4: duplicate key 'hidden' \(first given at line 2\)"),
    ("x: [1, {k: 1, k: 2}]\n", r"line 1: duplicate key 'k'"),
    ("a: [\n", r"c\.yaml, line 2: not valid YAML \(expected the node content"),
])
def test_yaml_duplicate_keys_and_errors_name_the_line(text, message):
    from dynagnn.config import load_yaml

    with pytest.raises(ConfigError, match=message) as err:
        load_yaml(text, "c.yaml")
    assert "\n" not in str(err.value)


def test_yaml_loader_keeps_what_safe_load_reads():
    from dynagnn.config import load_yaml

    text = "base: &b {x: 1, y: [2, 3]}\nover:\n  <<: *b\n  x: 5\nn: null\nf: 1.5e-3\n"
    assert load_yaml(text) == yaml.safe_load(text) == {"base": {"x": 1, "y": [2, 3]}, "over": {"x": 5, "y": [2, 3]},
                                                      "n": None, "f": 1.5e-3}


def test_load_config_refuses_a_duplicate_key(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump(MIN) + "train:\n  epochs: 3\nseed: 1\ntrain:\n  epochs: 5\n")
    with pytest.raises(ConfigError, match=rf"{f}, line \d+: duplicate key 'train'"):
        load_config(f)


@pytest.mark.parametrize("train, message", [
    ({"model": "tgcm"}, r"train\.model: unknown model 'tgcm' \(did you mean 'tgcn'\?\); known: tgcn, "),
    ({"strategy": "vertx"}, r"train\.strategy: unknown strategy 'vertx' \(did you mean 'vertex'\?\)"),
    ({"runs": [{"dataset": "a", "strategies": ["sequential", "nope"]}]}, r"train\.runs\.0\.strategies\.1: unknown strategy 'nope'"),
    ({"runs": [{"dataset": "a", "models": ["wdgnc"]}]}, r"train\.runs\.0\.models\.0: 'wdgnc' is not one of .*did you mean 'wdgcn'"),
    ({"runs": [{"dataset": "a", "options": {"strategy": "x"}}]}, r"train\.runs\.0\.options\.strategy: unknown strategy 'x'"),
    ({"runs": [{"dataset": "a", "options": {"hidden": 0}}]}, r"train\.runs\.0\.options\.hidden: 0 is less than the minimum of 1"),
    ({"device": "gpu"}, r"train\.device: 'gpu' is not cpu, cuda or cuda:N"),
])
def test_train_names_are_checked_against_the_registries(train, message):
    with pytest.raises(ConfigError, match=message):
        validate({**MIN, "train": train})


def test_every_registered_strategy_and_model_is_accepted():
    from dynagnn.models import MODELS
    from dynagnn.train.strategies import STRATEGIES

    run = {"dataset": "a", "models": list(MODELS), "strategies": list(STRATEGIES)}
    cfg = validate({**MIN, "train": {"runs": [run], "model": list(MODELS)[-1], "strategy": list(STRATEGIES)[-1]}})
    assert cfg["train"]["runs"][0]["strategies"] == list(STRATEGIES)


@pytest.mark.parametrize("key, value, message", [
    ("train.hidden", 0, r"^--x: 0 is less than the minimum of 1 \(config key train\.hidden\)$"),
    ("train.hidden", [16, 0], r"^--x: 0 is less than the minimum of 1"),  # a list for a one-value key: each item
    ("analysis.cache.fractions", [0.1, 2.5], r"^--x: 2\.5 is greater than the maximum of 1"),
    ("train.lr", -1.0, r"^--x: -1\.0 is less than or equal to the minimum of 0"),
    ("schedule.workers.items", 0, r"^--x: 0 is less than the minimum of 1 \(config key schedule\.workers\.items\)$"),
    ("cost.grid", "huge", r"^--x: 'huge' is not one of \['auto', 'quick', 'medium'\]"),
])
def test_check_value_is_the_schema_check_named_by_the_flag(key, value, message):
    from dynagnn.config import check_value

    with pytest.raises(ConfigError, match=message):
        check_value(key, value, "--x")
    check_value(key, [1] if isinstance(value, list) else {"train.lr": 0.5, "cost.grid": "quick"}.get(key, 1), "--x")


def test_check_options_names_where_the_options_came_from():
    from dynagnn.config import check_options

    check_options("train", {"hidden": 8, "tbptt": None, "plan": None}, "--options")
    with pytest.raises(ConfigError, match=r"^--options hidden: 0 is less than the minimum of 1$"):
        check_options("train", {"hidden": 0}, "--options")
    with pytest.raises(ConfigError, match=r"^--options: unknown key 'hiden' \(did you mean 'hidden'\?\)"):
        check_options("train", {"hiden": 8}, "--options")
    with pytest.raises(ConfigError, match=r"^--options: unknown key 'runs'"):  # a run's options hold no runs
        check_options("train", {"runs": []}, "--options")


def test_two_runs_into_one_folder_with_other_options_are_refused():
    one = {"dataset": "a", "models": ["wdgcn"], "strategies": ["sequential"], "options": {"batch_windows": 8}}
    two = {"dataset": "a", "models": ["tgcn", "wdgcn"], "strategies": ["sequential"]}
    with pytest.raises(ConfigError, match=r"train\.runs\.1: trains a/wdgcn/sequential-1 as train\.runs\.0 does, "
                                          r"with other batch_windows: one run would replace the other"):
        validate({**MIN, "train": {"runs": [one, two]}})
    # the same run twice, or the same folder name on another thread count, is no conflict
    validate({**MIN, "train": {"runs": [one, dict(one)]}})
    validate({**MIN, "train": {"runs": [one, {**one, "options": {"batch_windows": 8, "threads": 2}}]}})


def test_an_auto_run_is_one_job_of_the_cores_it_may_fill():
    """An auto run (issue 30) chooses its workers and threads: the workflow gives it cores (its option, else
    the run's workers x threads, the hardware of the strategies beside it), trains it in auto-1t<cores>/
    (its job's threads) and pairs it by them in the compare figure; its options name no workers or threads."""
    from dynagnn.api.runs import train_runs

    beside = {"dataset": "a", "models": ["wdgcn"], "strategies": ["sequential", "auto"],
              "options": {"batch_windows": 8, "threads": 2}}
    alone = {"dataset": "a", "models": ["wdgcn"], "strategies": ["auto"], "options": {"cores": 3}}
    plain = {"dataset": "a", "models": ["tgcn"], "strategies": ["auto"]}
    runs = train_runs(validate({**MIN, "train": {"runs": [beside, alone, plain]}}))
    got = [(r["model"], r["strategy"], r["slot"], r["cores"], r["workers"], r["threads"]) for r in runs]
    assert got == [("wdgcn", "sequential", "1t2", 2, 1, 2), ("wdgcn", "auto", "1t2", 2, 1, 2),
                   ("wdgcn", "auto", "1t3", 3, 1, 3), ("tgcn", "auto", "1", 1, 1, 1)]
    for r in runs[1:]:
        assert r["options"]["cores"] == r["cores"] and "workers" not in r["options"] and "threads" not in r["options"]
    assert runs[1]["options"]["batch_windows"] == 8


def test_a_run_with_seeds_and_one_without_into_one_folder_are_refused():
    one = {"dataset": "a", "models": ["tgcn"], "strategies": ["sequential"]}
    with pytest.raises(ConfigError, match=r"train\.runs\.1: trains a/tgcn/sequential-1 as train\.runs\.0 does, "
                                          r"with other seeds: one run would replace the other"):
        validate({**MIN, "train": {"runs": [one, {**one, "seeds": [0, 1]}]}})
    validate({**MIN, "train": {"runs": [{**one, "seeds": [0, 1]}, {**one, "seeds": [0, 1]}]}})


def test_edgebank_with_a_strategy_that_cannot_score_it_is_refused():
    run = {"dataset": "a", "models": ["tgcn", "edgebank"], "strategies": ["sequential", "frames"]}
    with pytest.raises(ConfigError, match=r"train\.runs\.0: edgebank trains nothing and is scored by the strategy "
                                          r"events or sequential, not frames"):
        validate({**MIN, "train": {"runs": [run]}})
    validate({**MIN, "train": {"runs": [{**run, "models": ["edgebank"], "strategies": ["sequential"]}]}})
