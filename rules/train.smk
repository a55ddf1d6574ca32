# Train: one model with one strategy on one dataset's store on `workers` processes
# -> metrics, timings, bytes per collective, model, figure under <dataset>/<model>/<strategy>-<workers>/.
# The job holds one core per worker; each worker process runs one torch thread. With
# `launch: {torchrun: true, nodes: M}` (the SLURM profile) the job is M machines and srun starts one
# torchrun per machine, which starts workers/M processes that join one group:
#   srun torchrun --nnodes M --nproc-per-node P/M --rdzv-backend c10d --rdzv-endpoint HEAD:PORT -m dynagnn train ...
import os


rule train:
    input:
        store=f"{RESULTS}/{{dataset}}/store.zarr",
    output:
        metrics=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/metrics.parquet",
        timings=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/timings.parquet",
        comm=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/comm.parquet",
        model=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/model.pt",
        figure=report(
            f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/training.png",
            caption="../workflow/report/training.rst",
            category="Training",
            subcategory="{dataset}",
        ),
    log:
        f"{RESULTS}/logs/train/{{dataset}}/{{model}}/{{strategy}}-{{workers}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/train/{{dataset}}/{{model}}/{{strategy}}-{{workers}}.tsv"
    threads: lambda wildcards: int(wildcards.workers)
    params:
        options=train_options_json,
        out_dir=lambda wildcards, output: os.path.dirname(output.metrics),
        launcher=train_launcher,
    conda:
        "../envs/dynagnn.yaml"
    resources:
        nodes=lambda wildcards: train_nodes(wildcards),
    shell:
        "{params.launcher} train {input.store:q} --out-dir {params.out_dir:q} --options {params.options:q} "
        "--workers {wildcards.workers} --threads 1 > {log:q} 2>&1"
