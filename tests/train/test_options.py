"""Each strategy owns its options (issue 26): the router sends every key of a run to TrainConfig or to
the run's strategy's Options, refuses a key the strategy does not take (naming who does), and a
strategy registered from outside (here, one defined in this file) gets its flag, its schema check and
its workflow family with no edit to the CLI, the schema file or the rules."""

from __future__ import annotations

import copy
import dataclasses
import json
import re

import pytest

from dynagnn.cli import _parser, main
from dynagnn.api.runs import validate
from dynagnn.errors import ConfigError
from dynagnn.train.options import Options, option
from dynagnn.train.run_config import TrainConfig, shared_fields
from dynagnn.train.strategies import STRATEGIES, register, workflow_family
from dynagnn.train.strategies.sequential import Sequential

from tests.testing.stores import small_store

ALL_OPTIONS = sorted({k for c in STRATEGIES.values() for k in c.Options.declared()})


def _value(cls, key):
    """A valid value of option ``key`` other than nothing: its default."""
    return cls.Options.json_schema(key)["default"]


def _routed_or_refused(strategy: str, key: str) -> str | None:
    """What the router does with ``key`` (at its default) on a run of ``strategy``: None where the
    strategy takes it and its options hold it, else the one-line refusal, checked against who takes it."""
    cls = STRATEGIES[strategy]
    takers = sorted(s for s, c in STRATEGIES.items() if key in c.settable())
    owner = next(c for c in STRATEGIES.values() if key in c.Options.declared())
    keys = {"strategy": strategy, key: _value(owner, key)}
    if key in cls.settable():
        config = TrainConfig.from_dict(keys)
        assert getattr(config.options, key) == keys[key] and type(config.options) is cls.Options
        return None
    with pytest.raises(ConfigError) as err:
        TrainConfig.from_dict(keys, "--options")
    message = str(err.value)
    if key in cls.refuses:
        assert message == f"--options {key}: {cls.refuses[key]}"
    elif takers:
        assert message == f"--options {key}: an option of {', '.join(takers)}; this run trains {strategy}"
    else:  # every strategy that declares it fixes it
        assert message.startswith(f"--options {key}: ") and "fix it" in message and strategy in message
    return message


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_every_option_reaches_only_the_strategies_that_take_it(strategy):
    """One row per option of any strategy: taken where the strategy declares it, else refused naming who
    takes it (a table per strategy, not an item per pair)."""
    refused = {key: _routed_or_refused(strategy, key) for key in ALL_OPTIONS}
    taken = {key for key, why in refused.items() if why is None}
    assert taken == STRATEGIES[strategy].settable() & set(ALL_OPTIONS)


def test_a_baseline_fixes_its_own_options():
    config = TrainConfig.from_dict({"strategy": "sampled_static", "model": "graphsage"})
    assert (config.options.cache_policy, config.options.order) == ("static", "random")
    assert TrainConfig.from_dict({"strategy": "tgnn_hash"}).options.memory_partitioner == "hash"
    with pytest.raises(ConfigError, match=r"^cache_policy: an option of sampled, sampled_random; "
                                          r"this run trains sampled_nocache$"):
        TrainConfig.of(strategy="sampled_nocache", cache_policy="fifo")


def test_shared_keys_and_options_are_disjoint_and_typed():
    assert not set(shared_fields()) & set(ALL_OPTIONS)
    for cls in STRATEGIES.values():
        assert dataclasses.is_dataclass(cls.Options) and cls.Options.__dataclass_params__.frozen
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(cls.make_options(), "x", 1)


def test_sequential_refuses_the_frame_size_flag(tmp_path, capfd):
    from tests.badinput.common import assert_refused

    store = small_store(tmp_path / "s.zarr")
    line = assert_refused(capfd, ["train", str(store), "--out-dir", str(tmp_path / "o"), "--strategy", "sequential",
                                  "--frame-size", "4"], tmp_path)
    assert line == ("dynagnn train: error: --frame-size: an option of frames, group_frames; this run trains "
                    "sequential")
    line = assert_refused(capfd, ["train", str(store), "--out-dir", str(tmp_path / "o"), "--strategy", "sequential",
                                  "--options", json.dumps({"partitioner": "hash"})], tmp_path)
    assert line == "dynagnn train: error: --options partitioner: an option of vertex; this run trains sequential"
    # a run that names no strategy is the chooser's: it carries a strategy's option, refuses one nobody takes
    line = assert_refused(capfd, ["train", str(store), "--out-dir", str(tmp_path / "o"), "--options",
                                  json.dumps({"frame_sise": 4})], tmp_path)
    assert line.startswith("dynagnn train: error: --options: unknown key 'frame_sise' (did you mean 'frame_size'?)")


def test_a_config_key_reaches_only_the_runs_that_take_it():
    cfg = {"datasets": {"d": {"format": "synthetic", "generator": "churn"}},
           "train": {"frame_size": 2, "runs": [{"dataset": "d", "strategies": ["sequential", "frames"],
                                                 "options": {"frame_reuse": "off"}}]}}
    from dynagnn.api.runs import train_runs

    runs = {r["strategy"]: r["options"] for r in train_runs(validate(cfg))}
    assert "frame_size" not in runs["sequential"] and "frame_reuse" not in runs["sequential"]
    assert (runs["frames"]["frame_size"], runs["frames"]["frame_reuse"]) == (2, "off")
    for routed in runs.values():
        TrainConfig.from_dict(routed)  # what the workflow passes through --options is accepted
    bad = copy.deepcopy(cfg)
    bad["train"]["runs"][0]["options"] = {"partitioner": "hash"}
    with pytest.raises(ConfigError, match=r"^config key train.runs.0.options.partitioner: an option of vertex; "
                                          r"this run trains sequential, frames$"):
        validate(bad)


# ---- a strategy from outside the library: the registry is all it touches


@dataclasses.dataclass(frozen=True)
class ToyOptions(Options):
    toy_knob: int = option(3, "toy strategy: how far the knob is turned", type="integer", minimum=1)


class Toy(Sequential):
    """Sequential training under another name, with one option of its own."""

    name = "toy"
    Options = ToyOptions
    family = "toys"
    figure = "toybox"

    def setup(self, run):
        self.knob = self.options.toy_knob
        super().setup(run)


@pytest.fixture
def toy():
    from dynagnn.train.options import WindowOptions

    # Sequential.setup reads the window options: the toy's own carry them too (before it is registered:
    # the registry takes a class's facts when it is registered)
    Toy.Options = dataclasses.make_dataclass("ToyWindowOptions", [], bases=(ToyOptions, WindowOptions), frozen=True)
    register(Toy)
    try:
        yield Toy
    finally:
        STRATEGIES.pop("toy")
        Toy.Options = ToyOptions


def test_a_toy_strategy_gets_its_flag_schema_check_and_family(toy, tmp_path):
    # the flag, generated from its Options, with its help
    train = _parser()._subparsers._group_actions[0].choices["train"]
    action = next(a for a in train._actions if "--toy-knob" in a.option_strings)
    assert action.type is int and "how far the knob is turned" in action.help and "toy" in action.help
    # the schema check: config.yaml's keys and values, with no edit to the schema file
    cfg = {"datasets": {"d": {"format": "synthetic", "generator": "churn"}},
           "train": {"runs": [{"dataset": "d", "strategies": ["toy"], "options": {"toy_knob": 5}}]}}
    validate(cfg)
    cfg["train"]["runs"][0]["options"]["toy_knob"] = 0
    with pytest.raises(ConfigError, match=r"toy_knob: 0 is less than the minimum of 1"):
        validate(cfg)
    cfg["train"]["runs"][0]["strategies"] = ["sequential"]
    cfg["train"]["runs"][0]["options"]["toy_knob"] = 5
    with pytest.raises(ConfigError, match=r"toy_knob: an option of toy; this run trains sequential$"):
        validate(cfg)
    # the workflow's family (what rules/common.smk asks)
    assert workflow_family("toy") == {"family": "toys", "procs_per_worker": 1, "needs_plan": False,
                                      "figure": "toybox", "models": ["snapshot"], "chooses": False}
    # and it trains, reading its option through the CLI's flag
    store = small_store(tmp_path / "s.zarr")
    assert main(["-q", "train", str(store), "--out-dir", str(tmp_path / "o"), "--strategy", "toy", "--toy-knob", "7",
                 "--epochs", "1", "--window", "2", "--hidden", "4"]) == 0
    import pyarrow.parquet as pq

    meta = json.loads(pq.read_schema(tmp_path / "o" / "metrics.parquet").metadata[b"dynagnn.config"])
    assert meta["toy_knob"] == 7 and meta["strategy"] == "toy"


def test_no_strategy_reads_an_untyped_option():
    from pathlib import Path

    import dynagnn.train

    root = Path(dynagnn.train.__file__).parent
    reads = [f"{p.relative_to(root)}:{i}" for p in root.rglob("*.py")
             for i, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"options\.get\(|options\[", line)]
    assert not reads, f"untyped option reads: {reads}"
