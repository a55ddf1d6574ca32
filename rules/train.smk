# Train: one model with one strategy on one dataset's store -> metrics, timings, model, figure.
import os


rule train:
    input:
        store=f"{RESULTS}/{{dataset}}/store.zarr",
    output:
        metrics=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}/metrics.parquet",
        timings=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}/timings.parquet",
        model=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}/model.pt",
        figure=report(
            f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}/training.png",
            caption="../workflow/report/training.rst",
            category="Training",
            subcategory="{dataset}",
        ),
    log:
        f"{RESULTS}/logs/train/{{dataset}}/{{model}}/{{strategy}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/train/{{dataset}}/{{model}}/{{strategy}}.tsv"
    threads: 1
    params:
        options=train_options_json,
        out_dir=lambda wildcards, output: os.path.dirname(output.metrics),
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn train {input.store:q} --out-dir {params.out_dir:q} --options {params.options:q} "
        "--threads {threads} > {log:q} 2>&1"
