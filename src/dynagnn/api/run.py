"""A training run from the top: a request of the chooser resolved into the config of the strategy it
chose, a plan made at start where the strategy trains by one, then the engine; both the CLI and a
Python caller go through :func:`train`.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from dynagnn.api.plan import with_plan
from dynagnn.errors import ConfigError

log = logging.getLogger("dynagnn")


def train(store_path, out, config, resume=None, progress: bool = True, overwrite: bool = False):
    """:func:`dynagnn.train.engine.train` of ``config``: a :class:`~dynagnn.train.run_config.TrainConfig`,
    or a :class:`~dynagnn.choose.request.Request` of the chooser, resolved here first
    (:func:`choose_strategy`), with a plan made at start where the run's strategy trains by one and
    names none (:func:`plan_at_start`; the plan lives in a temporary folder for the run).
    ``overwrite``: replace a finished run of another model, strategy, store or config in ``out``.
    Returns rank 0's (metrics, timings); None on the other ranks of a torchrun job."""
    import json

    from dynagnn.choose.request import REPORT_FILE, Request
    from dynagnn.models.baselines import BASELINE_MODELS
    from dynagnn.train.engine import Record
    from dynagnn.train.engine import train as train_stage

    with tempfile.TemporaryDirectory(prefix="dynagnn-plan-") as folder:
        record = Record(identity=config, replaces=(REPORT_FILE,))   # an earlier choice in out is not this run's
        if isinstance(config, Request) and config.model in BASELINE_MODELS:   # EdgeBank trains nothing to choose for
            config = scoring_config(store_path, config)
        elif isinstance(config, Request):
            config.check()
            choice = choose_strategy(Path(store_path), Path(out), config, Path(folder), resume, overwrite)
            report = json.dumps(choice.report, indent=1, default=str).encode()
            record = Record(identity=config, files={REPORT_FILE: report}, columns={"auto_choice": choice.label})
            config = choice.config
        config = with_plan(Path(store_path), config, Path(folder))
        return train_stage(store_path, out, config, resume=resume, progress=progress, overwrite=overwrite,
                           record=record)


def scoring_config(store_path, request):
    """A request of EdgeBank as the strategy that scores it: events on a store with an event stream,
    else sequential (EdgeBank trains nothing, so there is nothing to choose)."""
    from dynagnn.choose.trials import candidate_config
    from dynagnn.data.store import open_store

    scorer = "events" if open_store(store_path).events() is not None else "sequential"
    log.info("auto: %s trains nothing; scored by the %s strategy", request.model, scorer)
    return candidate_config(request, scorer, 1, request.threads or 1, request.carried)


def choose_strategy(store_path: Path, out: Path, request, folder: Path, resume=None, overwrite: bool = False):
    """The choice of a request (:func:`dynagnn.choose.resolve.resolve`): the out-dir checked first
    (nothing is timed for a run that could not write), a group candidate's trials planned as its run
    would be (:func:`with_plan`, into ``folder``); a choice remembered for the same job recalled
    first (its model and task then built once, by the engine); ``--resume`` trains again what the run
    chose (its ``auto.json``), without new trials."""
    from dynagnn.choose.request import REPORT_FILE
    from dynagnn.choose.resolve import check_run, previous_choice, remembered_choice, resolve
    from dynagnn.data.store import open_store
    from dynagnn.distributed.launch import under_torchrun
    from dynagnn.train.engine import out_dir_refusal

    if under_torchrun():
        raise ConfigError("--strategy auto (the default) under torchrun: the chooser's trials start their own "
                          "processes; name the strategy (an auto.json of a run on one machine says which it chose)")
    store = open_store(store_path)
    recalled = None if resume is not None else remembered_choice(store, request)
    if recalled is None:   # a remembered choice was made for a model and task that built: the engine builds them
        check_run(store, request)   # the model's and task's errors first, as a named strategy's run gives them
    reason = out_dir_refusal(out, request, store.checksum, overwrite, resume, (REPORT_FILE,))
    if reason:
        raise ConfigError(reason)
    if resume is not None:
        choice = previous_choice(out, request)
        if choice is None:
            raise ConfigError(f"--resume with --strategy auto needs the auto.json of the run in {out} (its choice): "
                              "none there; resume naming the run's strategy")
    else:
        choice = recalled or resolve(store_path, request, planned=lambda cfg: with_plan(store_path, cfg, folder))
    log.info("%s", choice.line)
    return choice
