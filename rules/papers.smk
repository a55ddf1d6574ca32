# Papers: the seed papers' figures that no single stage draws (papers.yaml selects what runs):
#   study_train  one variant of a study (config `studies`): a training run with the variant's options
#   study        a study's variants side by side: PiPAD's speed-up ladder, ESDG's checkpoint blocks
#   accuracy     BLAD's accuracy check (Fig. 14): every strategy trained on P workers against sequential
# The claims table over every paper's headline numbers is rules/report.smk's `claims`.
from types import SimpleNamespace

try:
    from dynagnn.report.studies import check_studies as _check_studies
    from dynagnn.report.studies import study_runs as _study_runs
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
    """The variant's run as the train rule's wildcards, for its launcher, threads and resources."""
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
    sequential = {(r["dataset"], r["model"]) for r in TRAIN_RUNS if (r["strategy"], r["workers"]) == ("sequential", 1)}
    outs += [f"{RESULTS}/{d}/{m}/accuracy-{p}.png" for d, m, p in dict.fromkeys(
        (r["dataset"], r["model"], r["workers"]) for r in TRAIN_RUNS if r["workers"] > 1)
        if (d, m) in sequential]
    return outs


rule study_train:
    input:
        store=f"{RESULTS}/{{dataset}}/store.zarr",
    output:
        metrics=f"{RESULTS}/{{dataset}}/{{model}}/{{study}}/{{variant}}/metrics.parquet",
        timings=f"{RESULTS}/{{dataset}}/{{model}}/{{study}}/{{variant}}/timings.parquet",
        comm=f"{RESULTS}/{{dataset}}/{{model}}/{{study}}/{{variant}}/comm.parquet",
        model=f"{RESULTS}/{{dataset}}/{{model}}/{{study}}/{{variant}}/model.pt",
        figure=report(
            f"{RESULTS}/{{dataset}}/{{model}}/{{study}}/{{variant}}/training.png",
            caption="../workflow/report/study_run.rst",
            category="Studies",
            subcategory="{study}",
            labels={"dataset": "{dataset}", "model": "{model}", "variant": "{variant}"},
        ),
    log:
        f"{RESULTS}/logs/study/{{dataset}}/{{model}}/{{study}}/{{variant}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/study/{{dataset}}/{{model}}/{{study}}/{{variant}}.tsv"
    wildcard_constraints:
        study="|".join(STUDIES) or "(?!)",
        variant="[a-z0-9_]+",
    threads: lambda wildcards: train_threads(study_as_train(wildcards))
    params:
        options=lambda wildcards: json.dumps(study_run(wildcards)["options"], sort_keys=True),
        workers=lambda wildcards: study_run(wildcards)["workers"],
        out_dir=lambda wildcards, output: os.path.dirname(output.metrics),
        launcher=lambda wildcards: train_launcher(study_as_train(wildcards)),
    conda:
        "../envs/dynagnn.yaml"
    resources:
        nodes=lambda wildcards: train_nodes(study_as_train(wildcards)),
        tasks=lambda wildcards: train_nodes(study_as_train(wildcards)),
        cpus_per_task=lambda wildcards: train_cpus_per_task(study_as_train(wildcards)),
        gpu=lambda wildcards: train_gpus(study_as_train(wildcards)),
        tasks_per_gpu=0,
    shell:
        "{params.launcher} train {input.store:q} --out-dir {params.out_dir:q} --options {params.options:q} "
        "--workers {params.workers} --threads 1 > {log:q} 2>&1"


# PiPAD Fig. 10 (the speed-up ladder), ESDG §3.1 (peak memory against checkpoint blocks): a study's
# variants side by side, the first as the baseline.
rule study:
    input:
        lambda wildcards: expand(f"{RESULTS}/{wildcards.dataset}/{wildcards.model}/{wildcards.study}/{{variant}}/"
                                 "metrics.parquet", variant=study_variants(wildcards)),
    output:
        table=f"{RESULTS}/{{dataset}}/{{model}}/{{study}}.parquet",
        figure=report(
            f"{RESULTS}/{{dataset}}/{{model}}/{{study}}.png",
            caption="../workflow/report/study.rst",
            category="Studies",
            subcategory="{study}",
            labels={"dataset": "{dataset}", "model": "{model}", "figure": "{study}"},
        ),
        pdf=f"{RESULTS}/{{dataset}}/{{model}}/{{study}}.pdf",
    log:
        f"{RESULTS}/logs/study/{{dataset}}/{{model}}/{{study}}.log",
    wildcard_constraints:
        study="|".join(STUDIES) or "(?!)",
    threads: 1
    params:
        runs=lambda wildcards, input: " ".join(f"{os.path.basename(os.path.dirname(m))}={os.path.dirname(m)}"
                                               for m in input),
        title=lambda wildcards: f"{wildcards.dataset}: {wildcards.model}, {wildcards.study}",
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn study {params.runs} --out {output.table:q} --figure {output.figure:q} "
        "--title {params.title:q} > {log:q} 2>&1"


# BLAD §7.3 (Fig. 14): the strategies trained on P workers reach sequential's accuracy.
rule accuracy:
    input:
        lambda wildcards: [f"{d}/metrics.parquet" for d in accuracy_runs(wildcards).values()],
    output:
        table=f"{RESULTS}/{{dataset}}/{{model}}/accuracy-{{workers}}.parquet",
        figure=report(
            f"{RESULTS}/{{dataset}}/{{model}}/accuracy-{{workers}}.png",
            caption="../workflow/report/accuracy.rst",
            category="Training",
            subcategory="{dataset}",
            labels={"dataset": "{dataset}", "model": "{model}", "figure": "accuracy, {workers} workers"},
        ),
        pdf=f"{RESULTS}/{{dataset}}/{{model}}/accuracy-{{workers}}.pdf",
    log:
        f"{RESULTS}/logs/accuracy/{{dataset}}/{{model}}/accuracy-{{workers}}.log",
    threads: 1
    params:
        runs=lambda wildcards: " ".join(f"{name}={d}" for name, d in accuracy_runs(wildcards).items()),
        title=lambda wildcards: f"{wildcards.dataset}: {wildcards.model}, against sequential",
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn study {params.runs} --out {output.table:q} --figure {output.figure:q} "
        "--title {params.title:q} > {log:q} 2>&1"
