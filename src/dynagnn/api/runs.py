"""The runs a config asks for: its train section checked against the strategies and the chooser,
the runs it trains, the plans it schedules and the studies it compares (``rules/common.smk`` and
``rules/papers_common.smk`` read them from here).

:func:`validate` is the whole config's check: the schema and the datasets' rules
(:func:`dynagnn.config.validate`, below every layer), then the train section's runs, which need the
strategies' registry and the chooser's keys: each run names a dataset, and each key it sets is one
every run shares or an option of a strategy it trains (:func:`takes`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dynagnn.choose.request import AUTO, DEFAULT_STRATEGY, request_keys, strategy_names
from dynagnn.config import check_options, check_run_dataset, read_config, schema_node
from dynagnn.config import validate as validate_schema
from dynagnn.errors import ConfigError, did_you_mean
from dynagnn import catalog
from dynagnn.train.run_config import baseline_refusal, refusal, shared_fields
from dynagnn.train.strategies import workflow_family as registry_family


def validate(config: dict[str, Any]) -> dict[str, Any]:
    """Validate a config (a dict as read from YAML) and return a copy with the defaults filled in:
    the schema's check (:func:`dynagnn.config.validate`), then the train section's runs
    (:func:`check_train`). Raises ConfigError naming the first offending key and what was expected."""
    given = dict((config or {}).get("train") or {}) if isinstance((config or {}).get("train"), dict) else {}
    cfg = validate_schema(config)
    check_train(cfg, given)
    return cfg


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Read a YAML config, merge ``overrides`` (as Snakemake's --config does) and validate it."""
    return validate(read_config(path, overrides))


def workflow_family(strategy: str) -> dict:
    """What the workflow asks of a strategy a run names (``rules/common.smk``): the registry's answer
    (:func:`dynagnn.train.strategies.workflow_family`), and the chooser's: family auto, one process
    that may fill its cores, no plan of its own, drawn in the compare figure of its pick, every model;
    ``chooses``: the run is a request of the chooser (the one place the workflow's side tests the name)."""
    if strategy == AUTO:
        return {"family": AUTO, "procs_per_worker": 1, "needs_plan": False, "figure": None,
                "models": ["snapshot", "stacked", "event", "sampled"], "chooses": True}
    return registry_family(strategy)


def takes(strategy: str) -> set[str]:
    """The keys a run of ``strategy`` takes: every run's, and its strategy's options; a request of the
    chooser takes its own options and every option of a strategy it considers (it carries them)."""
    if workflow_family(strategy)["chooses"]:
        return request_keys()
    return set(shared_fields()) | set(catalog.strategy(strategy)["settable"])


def _strategies_of(section: dict[str, Any], run: dict[str, Any]) -> list[str]:
    return list(run.get("strategies") or [section.get("strategy", DEFAULT_STRATEGY)])


def check_train(cfg: dict[str, Any], given: dict[str, Any] | None = None) -> None:
    """Each run names a dataset of the config, and its options are keys of the train section with
    values the schema allows (checked without filling defaults: a run states only what differs).
    A key a run (or the section, ``given`` as written) sets must be one every run shares or an option
    of at least one strategy it trains; it reaches only the strategies that take it."""
    section = cfg.get("train", {})
    runs = section.get("runs", [])
    trained = {s for run in runs for s in _strategies_of(section, run)} or set(strategy_names())
    for key in given or {}:
        if key != "runs" and not any(key in takes(s) for s in trained):
            raise ConfigError(refusal(key, sorted(trained), f"config key train.{key}"))
    for i, run in enumerate(runs):
        where = f"train.runs.{i}"
        check_run_dataset(cfg, run, where)
        check_options("train", run.get("options", {}), f"config key {where}.options")
        strategies = _strategies_of(section, run)
        _check_baselines(section, run, strategies, where)
        for key in run.get("options", {}):
            if not any(key in takes(s) for s in strategies):
                raise ConfigError(refusal(key, strategies, f"config key {where}.options.{key}"))
    _check_one_run_per_folder(section)


def _check_baselines(section: dict[str, Any], run: dict[str, Any], strategies: list[str], where: str) -> None:
    """A baseline model name (EdgeBank) is scored by the strategies that build its task only."""
    for model in run.get("models") or [section.get("model", "tgcn")]:
        reason = baseline_refusal(model, strategies)
        if reason:
            raise ConfigError(f"config key {where}: {reason}")


def _check_one_run_per_folder(section: dict[str, Any]) -> None:
    """Two runs that would train into one folder (``<dataset>/<model>/<strategy>-<slot>``) with other
    options: one would silently replace the other."""
    seen: dict[tuple, tuple[int, dict]] = {}
    for i, run in enumerate(section.get("runs", [])):
        for r in train_runs({"train": {**section, "runs": [run]}}):
            folder = (r["dataset"], r["model"], f"{r['strategy']}-{r['slot']}")
            mine = {**r["options"], "seeds": r["seeds"]}   # a run with seeds is its seeds' folders
            if folder in seen and seen[folder][1] != mine:
                j, other = seen[folder]
                differ = sorted(k for k in set(other) | set(mine) if other.get(k) != mine.get(k))
                raise ConfigError(f"config key train.runs.{i}: trains {'/'.join(folder)} as train.runs.{j} does, "
                                  f"with other {', '.join(differ)}: one run would replace the other; "
                                  "give one of them another dataset, model, strategy or worker count")
            seen.setdefault(folder, (i, mine))


def keys_for(strategy: str, options: dict[str, Any]) -> dict[str, Any]:
    """The keys of ``options`` a run of ``strategy`` takes: the shared ones and its own options (what
    the workflow passes to ``train --options``; a section's key for other strategies stays behind)."""
    return {k: v for k, v in options.items() if k in takes(strategy)}


def train_runs(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Every (dataset, model, strategy, workers) the config trains, with its options: the shared keys
    and the strategy's own, section defaults overridden by the run's (a key reaches only the
    strategies that take it); ``threads`` per process (the run's option, else 1), ``slot`` (its
    folder's suffix: ``2``, or ``1t2`` with threads), ``cores`` (workers × processes per worker ×
    threads: what the compare rule pairs runs by) and ``seeds`` (the run's seeds: one job each into
    ``seed-<k>/``; [] for one run of the section's seed).

    An ``auto`` run (the chooser, which picks workers and threads itself) is one process
    that may fill ``cores``: its option ``cores``, else the run's workers × threads (the hardware of the
    strategies it runs beside); its slot is ``1t<cores>`` (``1`` on one core), its options name the
    cores and neither workers nor threads (the library refuses them with auto)."""
    section = cfg.get("train", {})
    base = {k: v for k, v in section.items() if k != "runs"}
    out = []
    for run in section.get("runs", []):
        opts = {**base, **run.get("options", {})}
        for model in run.get("models") or [opts["model"]]:
            for strategy in run.get("strategies") or [opts["strategy"]]:
                facts = workflow_family(strategy)
                ppw = facts["procs_per_worker"]
                threads = int(opts.get("threads") or 1)
                for workers in run.get("workers") or [opts.get("workers", 1)]:
                    w = int(workers)
                    options = {**keys_for(strategy, opts), "model": model, "strategy": strategy, "workers": w}
                    if facts["chooses"]:
                        cores = int(opts.get("cores") or w * threads)
                        options = {k: v for k, v in options.items() if k not in ("workers", "threads")}
                        out.append({"dataset": run["dataset"], "model": model, "strategy": strategy, "workers": 1,
                                    "threads": cores, "slot": "1" if cores == 1 else f"1t{cores}", "cores": cores,
                                    "seeds": [int(k) for k in run.get("seeds") or []],
                                    "options": {**options, "cores": cores}})
                        continue
                    out.append({"dataset": run["dataset"], "model": model, "strategy": strategy, "workers": w,
                                "threads": threads, "slot": f"{w}" if threads == 1 else f"{w}t{threads}",
                                "cores": w * ppw * threads, "seeds": [int(k) for k in run.get("seeds") or []],
                                "options": options})
    return out


def schedule_runs(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Every (dataset, model, workers) the schedule stage plans, with its window, hidden width and task
    (whose training windows the plan covers).

    ``schedule.runs`` null (the default): each distinct (dataset, model) of :func:`train_runs` whose
    model the schedule plans (a snapshot model: the schema's ``schedule.runs`` models, not an event or
    sampled one), with the window and hidden width of its first training run; else the listed pairs,
    whose window and hidden default to the train section's."""
    sched = cfg.get("schedule") or {}
    workers = sched.get("workers", [2, 4])
    section = cfg.get("train", {})
    pairs: dict[tuple[str, str], dict[str, int]] = {}
    if sched.get("runs") is None:
        planned = set(schema_node("schedule.runs.items.models.items")["enum"])
        for run in train_runs(cfg):
            if run["model"] not in planned:
                continue
            opts = run["options"]
            pairs.setdefault((run["dataset"], run["model"]), {"window": int(opts.get("window", 4)),
                                                              "hidden": int(opts.get("hidden", 32)),
                                                              "task": str(opts.get("task", "auto"))})
    else:
        for run in sched["runs"]:
            for model in run["models"]:
                pairs.setdefault((run["dataset"], model), {"window": int(run.get("window", section.get("window", 4))),
                                                           "hidden": int(run.get("hidden", section.get("hidden", 32))),
                                                           "task": str(section.get("task", "auto"))})
    return [{"dataset": d, "model": m, "workers": int(w), **opts} for (d, m), opts in pairs.items() for w in workers]




def study_runs(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Every run of the config's studies: study, dataset, model, variant, strategy, workers and the
    full options (the train section's, then the study's, then the variant's, those its strategy takes),
    in config order."""
    section = {k: v for k, v in cfg.get("train", {}).items() if k != "runs"}
    out = []
    for study, spec in (cfg.get("studies") or {}).items():
        for model in spec["models"]:
            for variant, v in spec["variants"].items():
                opts = keys_for(v["strategy"], {**section, **spec.get("options", {}), **v.get("options", {}),
                                                "model": model, "strategy": v["strategy"]})
                workers = int(opts.get("workers", 1))
                out.append({"study": study, "dataset": spec["dataset"], "model": model, "variant": variant,
                            "strategy": v["strategy"], "workers": workers, "options": {**opts, "workers": workers}})
    return out


def check_studies(cfg: dict[str, Any]) -> None:
    """Each study names a dataset of the config, and its shared and variant options are train keys with
    values the schema allows. ConfigError naming the key."""
    for study, spec in (cfg.get("studies") or {}).items():
        where = f"config key studies.{study}"
        if spec["dataset"] not in cfg["datasets"]:
            raise ConfigError(f"{where}.dataset: no dataset {spec['dataset']!r}{did_you_mean(spec['dataset'], cfg['datasets'])}")
        check_options("train", spec.get("options", {}), f"{where}.options")
        for variant, v in spec["variants"].items():
            check_options("train", v.get("options", {}), f"{where}.variants.{variant}.options")
