# Schedule: per (dataset, model, workers), the predicted per-snapshot loads and BLAD's two-level plan
# (with the even split as its baseline, and PiPAD's per-frame tuner from the overlap table), over the
# training windows of the run's task: the plan the group strategies (BLAD) train from.


rule schedule:
    input:
        store=f"{RESULTS}/{{dataset}}/store.zarr",
        stats=f"{RESULTS}/{{dataset}}/stats.parquet",
        overlap=f"{RESULTS}/{{dataset}}/analysis/overlap.parquet",
        predictor=f"{RESULTS}/cost/{COST_DEVICE}/predictor.json",
    output:
        plan=f"{RESULTS}/{{dataset}}/{{model}}/plan-{{workers}}.json",
        figure=report(
            f"{RESULTS}/{{dataset}}/{{model}}/plan-{{workers}}.png",
            caption="../workflow/report/plan.rst",
            category="Schedule",
            subcategory="{dataset}",
        ),
        pdf=f"{RESULTS}/{{dataset}}/{{model}}/plan-{{workers}}.pdf",
    log:
        f"{RESULTS}/logs/schedule/{{dataset}}/{{model}}/plan-{{workers}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/schedule/{{dataset}}/{{model}}/plan-{{workers}}.tsv"
    threads: 1
    params:
        window=lambda wildcards: schedule_run(wildcards)["window"],
        hidden=lambda wildcards: schedule_run(wildcards)["hidden"],
        task=lambda wildcards: schedule_run(wildcards)["task"],
        depth=config.get("schedule", {}).get("pipeline_depth", 4),
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn schedule {input.store:q} --predictor {input.predictor:q} --model {wildcards.model} "
        "--workers {wildcards.workers} --window {params.window} --hidden {params.hidden} --task {params.task} "
        "--stats {input.stats:q} --pipeline-depth {params.depth} "
        "--overlap {input.overlap:q} --out {output.plan:q} --figure {output.figure:q} > {log:q} 2>&1 && echo made: {output:q}"
