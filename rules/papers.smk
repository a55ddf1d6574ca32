# Papers: the seed papers' figures that no single stage draws (papers.yaml selects what runs):
#   study_train  one variant of a study (config `studies`): a training run with the variant's options
#   study        a study's variants side by side: PiPAD's speed-up ladder, ESDG's checkpoint blocks
#   accuracy     BLAD's accuracy check (Fig. 14): every strategy trained on P workers against sequential
# The claims table over every paper's headline numbers is rules/report.smk's `claims`; the helpers of
# both are rules/papers_common.smk.
include: "papers_common.smk"


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
        f"{RESULTS}/benchmarks/study_train/{{dataset}}/{{model}}/{{study}}/{{variant}}.tsv"
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
        "{params.launcher} train {input.store:q} --out-dir {params.out_dir:q} --options {params.options:q} --figure "
        "--workers {params.workers} --threads 1 > {log:q} 2>&1 && echo made: {output:q}"


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
        "--title {params.title:q} > {log:q} 2>&1 && echo made: {output:q}"


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
        "--title {params.title:q} > {log:q} 2>&1 && echo made: {output:q}"
