"""Each strategy's own options: typed, frozen dataclasses with defaults and help.

A run's keys are of two kinds. The keys every run shares (model, task, window, epochs, ...) are the
fields of :class:`~dynagnn.train.run_config.TrainConfig`. Every other key belongs to the strategies
that read it, as a field of their ``Options``: declared here for the options several families share
(checkpointing, transfer, the pipelined feed), beside the strategy for its own (frames' ``frame_size``
in ``strategies/frames.py``). Families share by inheritance: ``WindowOptions`` is checkpointing +
transfer + pipeline; ``group_frames`` takes group's and frames' options together.

A field is declared with :func:`option`: its default, its help (the CLI's flag help and the schema's
description) and its JSON-schema constraints. The library validates a key against that fragment; the
config schema file (which Snakemake validates against) holds a copy of it, which
``tests/test_registries.py`` checks. This module sits below the strategies (they declare their
options with it) and above nothing of theirs.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any

from dynagnn.tasks.negatives import KINDS


@dataclass(frozen=True)
class Speed:
    """What makes an option a speed option: its values worth timing against each other (the chooser,
    :mod:`dynagnn.choose`, tries each). ``window``: only the values up to the run's window (at least
    1, where none is); ``gpu``: worth trying on a GPU only (on a CPU the default alone)."""

    values: tuple
    window: bool = False
    gpu: bool = False

    def tried(self, window: int, device: str) -> tuple:
        """The values worth trying for a run of ``window`` snapshots on ``device``."""
        if self.gpu and device == "cpu":
            return ()
        if self.window:
            return tuple(v for v in self.values if v <= max(window, 1)) or (1,)
        return tuple(self.values)


def option(default: Any, help: str, speed: Speed | None = None, **schema: Any) -> Any:
    """A field of an ``Options`` dataclass: ``default``, ``help`` and the JSON-schema constraints of its
    value (``type``, ``enum``, ``minimum``, ...). A list or dict default is copied for each instance.
    ``speed``: the values that change the strategy's speed, never what it computes (:class:`Speed`)."""
    meta = {"help": help, "schema": schema, "speed": speed}
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def field_default(f: dataclasses.Field) -> Any:
    return f.default_factory() if f.default is dataclasses.MISSING else f.default


@dataclass(frozen=True)
class Options:
    """No options of its own (the base of every family)."""

    @classmethod
    def declared(cls) -> dict[str, dataclasses.Field]:
        """The option fields by name."""
        return {f.name: f for f in dataclasses.fields(cls)}

    @classmethod
    def speed(cls) -> dict[str, Speed]:
        """The speed options (:class:`Speed`) by name, in declaration order."""
        return {name: f.metadata["speed"] for name, f in cls.declared().items() if f.metadata.get("speed")}

    @classmethod
    def json_schema(cls, name: str) -> dict:
        """The JSON schema of option ``name``: its constraints, default and help (as the config schema
        file writes it)."""
        f = cls.declared()[name]
        return {**copy.deepcopy(f.metadata["schema"]), "default": field_default(f), "description": f.metadata["help"]}


@dataclass(frozen=True)
class Truncation(Options):
    """Truncated back-propagation through time."""

    tbptt: int | None = option(None, "truncated BPTT every k steps (null = full window)",
                               type=["integer", "null"], minimum=1)


@dataclass(frozen=True)
class Checkpointing(Truncation):
    """ESDG's gradient checkpointing over time blocks, and truncated back-propagation through time."""

    checkpoint_blocks: int = option(1, "ESDG gradient checkpointing: time blocks per window (1 = off)",
                                    Speed((1, 2, 4), window=True), type="integer", minimum=1)


@dataclass(frozen=True)
class Transfer(Options):
    """How snapshots reach the device: in full, or as ESDG's graph differences."""

    # a difference pays across PCIe, never on a CPU (docs/gpu.md)
    transfer: str = option("full", "snapshots sent in full or as ESDG graph differences", Speed(("full", "diff"), gpu=True),
                           enum=["full", "diff"])


@dataclass(frozen=True)
class Pipelining(Options):
    """PiPAD's pipelined feed: the next snapshot or frame prepared while this one computes."""

    pipeline: str = option(
        "auto", "prepare the next frame (frames) or snapshot (sequential, PiPAD's -A) while this one computes; "
        "auto = off for sequential; for frames (and group_frames) from the start where each process's producer "
        "thread has a core left over (torch threads + 1, times this machine's processes, within the cores) or on "
        "a GPU, and once the tuner freezes S kept only "
        "where its trial windows run faster with it than prepared inline (on a CPU the producer thread competes "
        "for the cores); the tgnn strategies prefetch the next batch's share unless off; the events strategy "
        "samples the next batch ahead, auto = where a core is left over (fewer torch threads than cores) or on "
        "a GPU", enum=["auto", "on", "off"])


@dataclass(frozen=True)
class SequenceMode(Options):
    """What a sample is: a window from the zero state (the papers' link task), or the whole training
    sequence with the state carried (PyTorch Geometric Temporal's loop)."""

    sequence: str = option(
        "auto", "window: a sample is a window of `window` snapshots from the initial state, its last snapshot "
        "scored (the papers' link task); carry: the state is carried through the whole training sequence, every "
        "snapshot's loss counts, and evaluation continues the state from where training ended (PyTorch Geometric "
        "Temporal's loop; `window` and `batch_windows` are then unused); auto = carry for the regress task on a "
        "pyg-temporal-json store, else window", enum=["auto", "window", "carry"])
    step: str = option(
        "epoch", "sequence carry: one optimiser step per epoch over the whole sequence (PyG Temporal's cumulative "
        "regime; with tbptt k the state is detached every k snapshots and each piece back-propagated at once), "
        "or one per tbptt piece (tbptt 1: its incremental regime, a step per snapshot)", enum=["epoch", "tbptt"])


def resolve_sequence(options: Options, task: str, store) -> str:
    """"window" or "carry": ``options.sequence`` with auto decided (carry for the regress task on a
    store ingested from PyG Temporal's JSON, which is how that library's users train it); "window"
    for options without the field."""
    mode = getattr(options, "sequence", "window")
    if mode != "auto":
        return mode
    spec = (getattr(store, "attrs", None) or {}).get("spec") or {}
    return "carry" if task == "regress" and spec.get("format") == "pyg-temporal-json" else "window"


@dataclass(frozen=True)
class LinkNegatives(Options):
    """The link task's evaluation negatives (the snapshot link task's and the event models')."""

    eval_negative_kind: str = option(
        "random", "link task and event models: the evaluation negatives (Poursafaei et al.; DyGLib's): random "
        "destinations for each positive's source (AP, AUC, MRR), or one negative edge per positive drawn from the "
        "past edges absent from its event batch's period or target snapshot (historical) or from those first seen "
        "after training, for test after validation (inductive); AP and AUC only, the share of negatives of the "
        "kind is the negatives_of_kind column", enum=list(KINDS))
    report_negative_kinds: list = option(
        [], "link task and event models: other kinds of evaluation negatives scored beside eval_negative_kind's "
        "in every evaluation, from the same model state (DyGLib trains once and evaluates under each kind); their "
        "metrics are prefixed with the kind (val_historical_ap); the kept epoch is still chosen on "
        "eval_negative_kind's", type="array", items={"enum": list(KINDS)}, uniqueItems=True)


@dataclass(frozen=True)
class WindowOptions(Checkpointing, Transfer, Pipelining, SequenceMode, LinkNegatives):
    """The one-snapshot-at-a-time loop's options: checkpointing, transfer, the pipelined feed, the
    sequence mode and the link task's evaluation negatives."""
