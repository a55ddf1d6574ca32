"""A run that names the chooser (``strategy: auto``): its keys, routed.

A run's keys arrive as one flat dict (the YAML's shape). :func:`request_of` is where a run that names
:data:`AUTO` parts from one that names a registered strategy: the latter is a
:class:`~dynagnn.train.run_config.TrainConfig` (its router), the former a :class:`Request`, routed
here by the same rules:

- the keys every run shares (:class:`~dynagnn.train.run_config.RunKeys`), checked against the schema;
- the chooser's own options (:class:`ChooserOptions`: the memory budget, the trials' share, the cores,
  the predictor), typed fields with their schema, as a strategy's ``Options`` are;
- every other key is carried to the candidates: it must be an option of a strategy the chooser
  considers (a paper's baseline is never chosen), its value is checked against that option's schema,
  and a candidate whose strategy does not take it is refused with that reason
  (:func:`dynagnn.choose.candidates.run_refusal`). A key given at its default is no request: it is not
  carried (the workflow passes a section's every key).

Workers and threads are the chooser's to pick (``cores`` bounds them): a request that sets them is
refused in one line.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from dynagnn import catalog
from dynagnn.config import check_options, check_schema, provide, provide_train_keys
from dynagnn.errors import ConfigError
from dynagnn.train.options import Options, option
from dynagnn.train.run_config import RunKeys, TrainConfig, key_label, option_schema, refusal, run_keys, takers

# The name a run gives the chooser, and the strategy of a run that names none (``dynagnn train``, a
# config's run, ``dynagnn.fit``). TrainConfig's own default stays ``sequential``: a program that builds
# a config trains what it names, and the engine trains one registered strategy.
AUTO = "auto"
DEFAULT_STRATEGY = AUTO
# the file of the chooser's report, beside a run's outputs (:class:`dynagnn.train.engine.Record`)
REPORT_FILE = "auto.json"

_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 10**3, "kib": 2**10, "m": 2**20, "mb": 10**6, "mib": 2**20,
          "g": 2**30, "gb": 10**9, "gib": 2**30, "t": 2**40, "tb": 10**12, "tib": 2**40}


@dataclass(frozen=True)
class ChooserOptions(Options):
    """The chooser's own options (config keys of the train section, flags of ``dynagnn train``)."""

    memory_budget: str | int | None = option(
        None, "auto: the peak memory a training process may take, in bytes or as a size (512MiB, 4GB); null = "
        "the device's free memory (the host's available memory on a CPU)", type=["string", "integer", "null"])
    trial_share: float = option(
        0.1, "auto: the choice's time as a share of the expected training time (the best predicted epoch times the "
        "epochs), a bound on its measurements and trials together: a run too short to pay for measuring is chosen "
        "from one snapshot's step timed, and the best predicted candidates are timed while the share lasts (above "
        "1: a choice longer than the training, for a comparison)", type="number", exclusiveMinimum=0)
    choose_again: bool = option(
        False, "auto: choose anew, ignoring the choice remembered for the same store, run and machine (the choices "
        "folder: $DYNAGNN_CHOICES, else ~/.cache/dynagnn/choices); the new choice replaces it", type="boolean")
    cores: int | None = option(
        None, "auto: the CPU cores its candidates may fill with processes x threads (null = the cores this "
        "process may run on)", type=["integer", "null"], minimum=1)
    predictor: str | None = option(
        None, "auto: the profile stage's predictor.json for this device (results/cost/<device>/): its operator "
        "model gives a step's aggregation share and its measured channel costs the communication's (null = the "
        "share measured at start, this machine's channel figures)", type=["string", "null"])


@dataclass
class Request(RunKeys):
    """A run that names the chooser: the keys every run shares, the chooser's ``options`` and the keys
    ``carried`` to every candidate ({key: value}, each given other than its default)."""

    options: ChooserOptions = field(default_factory=ChooserOptions)
    carried: dict = field(default_factory=dict)

    # the chooser's options tune how the run is chosen, not which run it is
    tuning_keys = RunKeys.tuning_keys + tuple(ChooserOptions.declared())

    @property
    def strategy(self) -> str:
        return AUTO

    @classmethod
    def of(cls, **keys) -> "Request":
        """The keys routed as :func:`request_of` routes them, their values taken as given (as
        ``TrainConfig.of`` takes them): ``Request.of(model="wdgcn", memory_budget="1GiB")``."""
        return request_of({**keys, "strategy": AUTO}, where="Request", validate=False)

    def check(self) -> None:
        """What the chooser refuses before anything runs, in one line: workers or threads (it picks
        them; ``cores`` bounds them), a malformed memory budget."""
        for key, value, default in (("workers", self.workers, 1), ("threads", self.threads, None)):
            if value != default:
                raise ConfigError(f"{key} {value} with --strategy auto (the default): auto chooses the workers and "
                                  f"threads itself; give --cores (the cores it may fill), or name a strategy to set "
                                  f"{key}")
        parse_budget(self.options.memory_budget)

    def as_dict(self) -> dict[str, Any]:
        """The flat keys of this run, as a config writes them (the run's identity in its out-dir)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(RunKeys)}
        return {**out, "strategy": AUTO, **dataclasses.asdict(self.options), **self.carried}


def candidate_strategies() -> dict[str, type]:
    """The registered strategies the chooser considers: every one that is not a paper's baseline."""
    from dynagnn.train.strategies import STRATEGIES

    return {name: cls for name, cls in STRATEGIES.items() if cls.baseline_of is None}


def request_keys() -> set[str]:
    """Every key a request takes: every run's, the chooser's own, and each option of a strategy it
    considers (carried to the candidates that take it; from the catalog: no strategy is imported)."""
    from dynagnn.train.run_config import shared_fields

    return (set(shared_fields()) | set(ChooserOptions.declared())
            | {k for facts in catalog.strategies().values() if facts["baseline_of"] is None for k in facts["settable"]})


def request_of(keys: dict, where: str = "train", names: dict[str, str] | None = None,
               validate: bool = True) -> TrainConfig | Request:
    """The run of the flat ``keys``: a :class:`Request` where its strategy is :data:`AUTO`, else the
    :class:`TrainConfig` its router makes (module docstring). ``where``, ``names`` and ``validate``
    as :meth:`TrainConfig.from_dict` takes them."""
    if keys.get("strategy", DEFAULT_STRATEGY) != AUTO:
        return TrainConfig.from_dict({**keys, "strategy": keys.get("strategy", DEFAULT_STRATEGY)}, where, names,
                                     validate)
    keys = {k: v for k, v in keys.items() if k != "strategy"}
    label = lambda key: (names or {}).get(key) or key_label(where, key)   # noqa: E731
    shared = {k: v for k, v in keys.items() if k in run_keys()}
    if validate:
        check_options("train", shared, where)
    own, carried = {}, {}
    taken = request_keys()
    for key, value in keys.items():
        if key in shared:
            continue
        if key in ChooserOptions.declared():
            if validate:
                check_schema(ChooserOptions.json_schema(key), value, label(key))
            own[key] = value
            continue
        fragment = option_schema(key)
        if validate and fragment is not None:
            check_schema(fragment, value, label(key))
        if key not in taken:
            who = takers(key)
            if who:
                raise ConfigError(f"{label(key)}: an option of {', '.join(who)} only, which auto never chooses (a "
                                  "paper's baseline, or a value it fixes): name that strategy to set it")
            raise ConfigError(refusal(key, [AUTO], label(key), where))
        if fragment is None or value != fragment.get("default"):
            carried[key] = value
    request = Request(**shared, options=ChooserOptions(**own), carried=carried)
    if validate:
        request.check()
    return request


def parse_budget(value, where: str = "memory_budget") -> float | None:
    """Bytes of a memory budget: an integer, or a number with a unit (512MiB, 4GB, 1.5g); None stays
    None. ConfigError in one line for zero, a negative or a malformed size."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigError(f"{where} {value!r}: expected bytes or a size such as 512MiB or 4GB")
    if isinstance(value, (int, float)):
        n = float(value)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(value))
        if not m or m.group(2).lower() not in _UNITS:
            raise ConfigError(f"{where} {value!r}: expected bytes or a size such as 512MiB or 4GB")
        n = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not n > 0:
        raise ConfigError(f"{where} {value!r}: a budget must be more than 0 bytes")
    return n


def strategy_names() -> list[str]:
    """What a run may name as its strategy: the chooser, then every registered strategy."""
    return [AUTO, *catalog.strategies()]


provide("strategies", lambda: [AUTO])
provide_train_keys(lambda: {key: ChooserOptions.json_schema(key) for key in ChooserOptions.declared()})
