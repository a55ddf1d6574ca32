# Helpers of rules/papers.smk and of the claims table in rules/report.smk (the config's studies, the
# runs of BLAD's accuracy check, the paper figures among the default targets, the tables the claims read).
from types import SimpleNamespace

try:
    from dynagnn.api.runs import check_studies as _check_studies
    from dynagnn.api.runs import study_runs as _study_runs
except ImportError:  # see rules/common.smk: without the library, no studies
    _study_runs = None

if _study_runs is not None:
    try:
        _check_studies(config)
    except _ConfigError as e:
        raise WorkflowError(f"config: {e}")

# (study, dataset, model, variant, strategy, workers, options) of every run of the config's studies.
STUDY_RUNS = _study_runs(config) if _study_runs is not None else []
STUDIES = sorted(config.get("studies") or {})


def study_run(wildcards):
    for run in STUDY_RUNS:
        if (run["study"], run["dataset"], run["model"], run["variant"]) == (
                wildcards.study, wildcards.dataset, wildcards.model, wildcards.variant):
            return run
    raise WorkflowError(f"no variant {wildcards.variant} of study {wildcards.study} on "
                        f"{wildcards.dataset}/{wildcards.model} in config studies")


def study_as_train(wildcards):
    """The variant's run as wildcards of a training job (its launcher, threads and resources)."""
    run = study_run(wildcards)
    return SimpleNamespace(dataset=wildcards.dataset, model=wildcards.model, strategy=run["strategy"],
                           workers=str(run["workers"]))


def study_variants(wildcards):
    return [r["variant"] for r in STUDY_RUNS
            if (r["study"], r["dataset"], r["model"]) == (wildcards.study, wildcards.dataset, wildcards.model)]


def accuracy_runs(wildcards):
    """sequential-1 first, then every other strategy trained on the (dataset, model) on `workers`."""
    base = f"{RESULTS}/{wildcards.dataset}/{wildcards.model}"
    runs = {"sequential-1": f"{base}/sequential-1"}
    runs.update({f"{s}-{wildcards.workers}": f"{base}/{s}-{wildcards.workers}" for s in compared(wildcards)})
    return runs


def paper_outputs():
    """The figures of this stage that the config asks for: each study's per model, and BLAD's accuracy
    check for every (dataset, model) trained sequentially on one worker and by some strategy on more."""
    outs = [f"{RESULTS}/{d}/{m}/{s}.png" for s, d, m in dict.fromkeys(
        (r["study"], r["dataset"], r["model"]) for r in STUDY_RUNS)]
    sequential = {(r["dataset"], r["model"]) for r in SPEED_RUNS if (r["strategy"], r["workers"]) == ("sequential", 1)}
    outs += [f"{RESULTS}/{d}/{m}/accuracy-{p}.png" for d, m, p in dict.fromkeys(
        (r["dataset"], r["model"], r["workers"]) for r in SPEED_RUNS if r["workers"] > 1)
        if (d, m) in sequential]
    return outs


def claim_inputs():
    """The result tables of this config's targets that some claim of dynagnn.report.claims reads (a
    figure's table is its .parquet sibling); the claims the config makes no table for say not run."""
    from dynagnn.report.claims import claim_tables

    targets = [t for t in all_outputs() + paper_outputs() if t.endswith((".png", ".parquet"))]
    tables = dict.fromkeys(t if t.endswith(".parquet") else t[: -len(".png")] + ".parquet" for t in targets)
    return [str(p) for p in claim_tables(tables, RESULTS)]


def made_lines():
    """What this run made, a line per kind, with where (for the last lines of a run)."""
    outs = [o for o in all_outputs() + paper_outputs() if os.path.exists(o)]
    kinds = [("stores", lambda o: o.endswith("store.zarr")),
             ("training runs", lambda o: o.endswith("training.png")),
             ("plans", lambda o: os.path.basename(o).startswith("plan-") and o.endswith(".json")),
             ("analysis tables", lambda o: "analysis" in o.split(os.sep) and o.endswith(".parquet")),
             ("figures", lambda o: o.endswith(".png"))]
    lines = []
    for name, kind in kinds:
        hits = [o for o in outs if kind(o)]
        if hits:
            where = os.path.commonpath(hits) if len(hits) > 1 else hits[0]
            lines.append(f"  {len(hits):3d} {name:16s} under {where}")
    return lines

