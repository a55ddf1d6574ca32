"""A training run's configuration: the keys every run shares, and its strategy's own options.

:class:`TrainConfig` holds what every run shares (model, strategy, task, widths, the optimiser, early
stopping, the link task's negatives, device, threads, seed, workers) and ``options``, the typed
:class:`~dynagnn.train.options.Options` of its strategy. :meth:`TrainConfig.from_dict` is the one
router of a run's keys: the train section of a config, a run's options, ``--options`` and the CLI's
flags all arrive as one flat dict of keys (the YAML's shape), and each key goes to ``TrainConfig`` or
to the run's strategy's ``Options``. A key that neither takes is refused in one line naming the
strategies that take it (``frame_size: an option of frames, group_frames; this run trains
sequential``), so an option is never silently ignored.

The strategy's name is looked up in the registry once, here; the engine makes its one strategy
object from ``strategy_cls``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from dynagnn import catalog
from dynagnn.config import check_options, check_schema
from dynagnn.errors import ConfigError, did_you_mean
from dynagnn.train.options import Options
from dynagnn.train.strategies import strategy_class

# the strategies whose task a baseline that trains nothing (EdgeBank) is scored on: the event
# stream's, the snapshot link task's (dynagnn.train.edgebank_run)
SCORED_BY = ("events", "sequential")


@dataclass
class RunKeys:
    """The keys every run shares but its strategy (each a key of the config's ``train`` section): what
    a :class:`TrainConfig` trains and what a request of the chooser (:mod:`dynagnn.choose`) asks for."""

    model: str = "tgcn"
    task: str = "auto"
    hidden: int = 32
    window: int = 4
    batch_windows: int = 1
    epochs: int = 20
    lr: float = 0.01
    weight_decay: float = 0.0
    patience: int = 5
    warmup_epochs: int = 1
    neg_ratio: int = 1
    eval_negatives: int = 20
    max_edges: int | None = None
    device: str = "cpu"
    threads: int | None = None
    seed: int = 0
    workers: int = 1
    graph_input: str = "xh"

    # what a finished run in the out-dir may differ by and still be this run, replaced with a warning
    # naming them (the plan is a path: a temporary one for a plan made at start)
    tuning_keys = ("lr", "weight_decay", "epochs", "patience", "warmup_epochs", "seed", "device", "threads", "plan")

    def as_dict(self) -> dict[str, Any]:
        """The flat keys of this run (shared, the strategy's name and its options), as a config writes them."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "options"}
        return {**out, **dataclasses.asdict(self.options)}


@dataclass
class TrainConfig(RunKeys):
    """The keys every run shares, its strategy (a registered one: the engine trains it) and the
    strategy's ``options`` (None: its defaults). A program that builds one trains what it names
    (``sequential`` by default); a run that names the chooser is resolved above the engine."""

    strategy: str = "sequential"
    options: Options | None = None

    def __post_init__(self):
        self.strategy_cls = strategy_class(self.strategy)  # the run's one lookup of its strategy's name
        if self.options is None:
            self.options = self.strategy_cls.make_options()
        elif type(self.options) is not self.strategy_cls.Options:
            raise ConfigError(f"options {type(self.options).__name__} are not the {self.strategy} strategy's "
                              f"({self.strategy_cls.Options.__name__})")

    @classmethod
    def from_dict(cls, d: dict, where: str = "train", names: dict[str, str] | None = None,
                  validate: bool = True) -> "TrainConfig":
        """The config of the flat keys ``d`` (keys of the config's train section), each routed to the
        shared fields or to the strategy's options and validated against its schema. ``where`` names
        the keys in an error (``--options``, ``config key train.runs.0.options``); ``names`` maps a key
        to how the user gave it (a flag: ``--frame-size``); ``validate`` False routes the keys without
        checking their values (a program's own config, as the dataclass takes it)."""

        d = dict(d)
        shared_keys = shared_fields()
        shared = {k: v for k, v in d.items() if k in shared_keys}
        if validate:
            check_options("train", shared, where)
        config = cls(**shared)  # the strategy's name looked up, its default options
        scls = config.strategy_cls
        settable = scls.settable()
        given = {}
        for key, value in d.items():
            if key in shared_keys:
                continue
            label = (names or {}).get(key) or key_label(where, key)
            fragment = option_schema(key)
            if validate and fragment is not None:  # a bad value is named first, whoever takes the key
                check_schema(fragment, value, label)
            if key in scls.fixed and value == scls.fixed[key]:
                continue  # the value the strategy fixes: nothing to route
            if key not in settable:
                raise ConfigError(refusal(key, [scls.name], label, where))
            given[key] = value
        config.options = scls.make_options(**given)
        return config

    @classmethod
    def of(cls, **keys) -> "TrainConfig":
        """The keys routed as :meth:`from_dict` routes them, their values taken as given (as the
        dataclass's constructor takes them): ``TrainConfig.of(strategy="frames", frame_size=4)``."""
        return cls.from_dict(keys, where="TrainConfig", validate=False)

    def fingerprint(self, store_checksum: str, in_dim: int) -> str:
        """What must match for a checkpoint to be loadable into this run: model shape, task, data."""
        keys = {"model": self.model, "task": self.task, "hidden": self.hidden, "in_dim": in_dim,
                "store": store_checksum, **self.strategy_cls.shape_keys(self)}
        if self.model == "tgcn" and self.graph_input != "xh":   # T-GCN "x" has other weights than "xh"
            keys["graph_input"] = self.graph_input
        return hashlib.sha256(json.dumps(keys, sort_keys=True).encode()).hexdigest()[:16]


def shared_fields() -> tuple[str, ...]:
    """The keys of :class:`TrainConfig` (every run's, its strategy's name included)."""
    return ("strategy",) + run_keys()


def run_keys() -> tuple[str, ...]:
    """The keys of :class:`RunKeys` (every run's but the strategy)."""
    return tuple(f.name for f in dataclasses.fields(RunKeys))


option_schemas = catalog.option_schemas   # every strategy option's JSON schema, in registry order
option_schema = catalog.option_schema     # one option's, or None where no registered strategy declares it
takers = catalog.takers                   # the registered strategies that take an option




def refusal(key: str, strategies: list[str], label: str | None = None, where: str | None = None) -> str:
    """Why ``key`` cannot be set on a run of ``strategies`` (a run's, or the config's), in one line:
    the strategy's own reason where it gives one (``refuses``), else who takes the key; a key nobody
    takes is unknown to ``where`` (the schema's words for a key it does not have)."""
    label = label or key
    known = catalog.strategies()
    one = len(strategies) == 1 and strategies[0] in known
    reason = known[strategies[0]]["refuses"].get(key) if one else None
    if reason:
        return f"{label}: {reason}"
    who = takers(key)
    trains = f"this run trains {', '.join(strategies)}" if len(strategies) < 4 else "no strategy of the runs takes it"
    if who:
        return f"{label}: an option of {', '.join(who)}; {trains}"
    fixers = [name for name, facts in known.items() if key in facts["fixed"]]
    if fixers:
        return f"{label}: {', '.join(fixers)} fix it; {trains}"
    keys = sorted(set(shared_fields()) | {k for facts in known.values() for k in facts["settable"]})
    return f"{where or label}: unknown key {key!r}{did_you_mean(key, keys)}"


def key_label(where: str, key: str) -> str:
    """How an error names ``key`` given in ``where``: ``--options lr``, ``config key train.runs.0.options.lr``;
    the key alone for a program's own config."""
    if where in ("TrainConfig", "Request"):
        return key
    sep = " " if where.startswith("--") else "."  # "--options lr", "config key train.runs.0.options.lr"
    return f"{where}{sep}{key}"


def baseline_refusal(model: str, strategies) -> str | None:
    """Why ``model`` cannot be run by ``strategies`` when it is a baseline that trains nothing
    (EdgeBank: scored on the task of the events or sequential strategy), else None."""
    if catalog.models().get(model) != "baseline":
        return None
    other = [s for s in strategies if s not in SCORED_BY and s in catalog.strategies()]   # the chooser scores it by one of them
    if not other:
        return None
    return f"{model} trains nothing and is scored by the strategy {' or '.join(SCORED_BY)}, not {', '.join(other)}"
