# Train: one model with one strategy on one dataset's store on `workers` processes
# -> metrics, timings, bytes per collective, model, figure under <dataset>/<model>/<strategy>-<workers>/,
# `<workers>` being the workers (`2`), or workers and torch threads per process where a run sets threads
# (`1t2`: one worker of 2 threads).
# The job holds a core per thread of each process (one thread each by default). With
# `launch: {torchrun: true, nodes: M}` (the SLURM profile) the job is M machines and srun starts one
# torchrun per machine, which starts workers/M processes that join one group:
#   srun torchrun --nnodes M --nproc-per-node P/M --rdzv-backend c10d --rdzv-endpoint HEAD:PORT -m dynagnn train ...
# The group strategies (BLAD: group, blad_nm, blad_even) run 2 processes per worker (2P/M per
# machine) from the schedule stage's plan-<workers>.json, which is then an input; their job holds 2
# cores per worker. An auto run (rule train_auto) holds the cores its candidates may fill and adds
# auto.json, the choice it made.
import os


rule train:
    wildcard_constraints:
        workers="[0-9]+(t[0-9]+)?",  # the slot: workers, and torch threads per process where a run sets them
    input:
        unpack(train_inputs),
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
    threads: train_threads
    params:
        options=train_options_json,
        out_dir=lambda wildcards, output: os.path.dirname(output.metrics),
        launcher=train_launcher,
        slot=train_slot_flags,
    conda:
        "../envs/dynagnn.yaml"
    resources:
        # a cluster job: one task (torchrun) per machine with the cores of its processes, a GPU per worker
        nodes=lambda wildcards: train_nodes(wildcards),
        tasks=lambda wildcards: train_nodes(wildcards),
        cpus_per_task=lambda wildcards: train_cpus_per_task(wildcards),
        gpu=lambda wildcards: train_gpus(wildcards),
        tasks_per_gpu=0,
    shell:
        "{params.launcher} train {input.store:q} --out-dir {params.out_dir:q} --options {params.options:q} --figure "
        "{params.slot} > {log:q} 2>&1 && echo made: {output:q}"


# An auto run (issue 30): the chooser times candidates (strategy, workers x processes x threads, options)
# on the job's cores (its option cores: dynagnn.api.runs.train_runs, slot 1t<cores>), trains the fastest that fits
# the memory budget and writes auto.json beside the metrics: every candidate, its prediction, its trial's
# seconds per epoch where timed, the one chosen and why each other was not.
use rule train as train_auto with:
    wildcard_constraints:
        strategy="auto",
        workers="[0-9]+(t[0-9]+)?",
    output:
        metrics=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/metrics.parquet",
        timings=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/timings.parquet",
        comm=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/comm.parquet",
        model=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/model.pt",
        auto=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/auto.json",
        figure=report(
            f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/training.png",
            caption="../workflow/report/training.rst",
            category="Training",
            subcategory="{dataset}",
        ),


ruleorder: train_auto > train


# A run with seeds: one job per seed into <strategy>-<workers>/seed-<k>/ (the train rule with the seed in
# its options), then the seeds gathered: each seed's best epoch and the mean ± std of every metric.
use rule train as train_seed with:
    output:
        metrics=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/seed-{{seed}}/metrics.parquet",
        timings=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/seed-{{seed}}/timings.parquet",
        comm=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/seed-{{seed}}/comm.parquet",
        model=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/seed-{{seed}}/model.pt",
        figure=report(
            f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/seed-{{seed}}/training.png",
            caption="../workflow/report/training.rst",
            category="Training",
            subcategory="{dataset}",
        ),
    log:
        f"{RESULTS}/logs/train/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/seed-{{seed}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/train/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/seed-{{seed}}.tsv"
    params:
        options=train_seed_options_json,
        out_dir=lambda wildcards, output: os.path.dirname(output.metrics),
        launcher=train_launcher,
        slot=train_slot_flags,


rule seed_summary:
    wildcard_constraints:
        workers="[0-9]+(t[0-9]+)?",
    input:
        lambda wc: [f"{RESULTS}/{wc.dataset}/{wc.model}/{wc.strategy}-{wc.workers}/seed-{k}/metrics.parquet"
                    for k in run_seeds(wc)],
    output:
        summary=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/summary.parquet",
        seeds=f"{RESULTS}/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/seeds.parquet",
    log:
        f"{RESULTS}/logs/train/{{dataset}}/{{model}}/{{strategy}}-{{workers}}/seeds.log",
    threads: 1
    params:
        run_dir=lambda wildcards, output: os.path.dirname(output.summary),
        seeds=lambda wildcards: " ".join(map(str, run_seeds(wildcards))),
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn seeds {params.run_dir:q} --seeds {params.seeds} > {log:q} 2>&1 && echo made: {output:q}"


# BLAD Figs. 12, 15, 16: the strategies trained on a (dataset, model) on the same cores side by side
# (BLAD's 1 worker x 2 processes, ESDG's 2 x 1, one process of 2 threads: equal hardware, never a run of
# another size), measured against the schedule plan's predicted epoch time, sync-wait and overlap shares.
# An auto run on those cores stands among them as its pick, with its auto.json's trials (rule train_auto).
rule compare:
    input:
        compare_inputs,
    output:
        table=f"{RESULTS}/{{dataset}}/{{model}}/compare-{{cores}}.parquet",
        figure=report(
            f"{RESULTS}/{{dataset}}/{{model}}/compare-{{cores}}.png",
            caption="../workflow/report/compare.rst",
            category="Training",
            subcategory="{dataset}",
        ),
        pdf=f"{RESULTS}/{{dataset}}/{{model}}/compare-{{cores}}.pdf",
    log:
        f"{RESULTS}/logs/compare/{{dataset}}/{{model}}/compare-{{cores}}.log",
    threads: 1
    params:
        runs=compare_args,
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn compare {params.runs} --out {output.table:q} "
        "--figure {output.figure:q} > {log:q} 2>&1 && echo made: {output:q}"


# BGL (issue 16): sampled training's data path side by side, for the sampled family's strategies trained
# on a (dataset, model, workers): no cache, PaGraph's static cache, BGL's FIFO with proximity order.


rule sampled_figure:
    input:
        lambda wc: [f"{RESULTS}/{wc.dataset}/{wc.model}/{s}-{wc.workers}/metrics.parquet"
                    for s in compared(wc, "sampled")],
    output:
        table=f"{RESULTS}/{{dataset}}/{{model}}/sampled-{{workers}}.parquet",
        figure=report(
            f"{RESULTS}/{{dataset}}/{{model}}/sampled-{{workers}}.png",
            caption="../workflow/report/sampled.rst",
            category="Training",
            subcategory="{dataset}",
        ),
        pdf=f"{RESULTS}/{{dataset}}/{{model}}/sampled-{{workers}}.pdf",
    log:
        f"{RESULTS}/logs/sampled_figure/{{dataset}}/{{model}}/sampled-{{workers}}.log",
    threads: 1
    params:
        runs=lambda wc: " ".join(f"{s}={RESULTS}/{wc.dataset}/{wc.model}/{s}-{wc.workers}"
                                 for s in compared(wc, "sampled")),
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn compare-sampled {params.runs} --out {output.table:q} --figure {output.figure:q} > {log:q} 2>&1 && echo made: {output:q}"


# Sven (issue 15): the tgnn strategies trained on a (dataset, model, workers) side by side: bytes per
# batch of Sven, DepComm and DepCache, each worker's bytes (the partitioners' imbalance), epoch time.
rule sven_figure:
    input:
        lambda wc: [f"{RESULTS}/{wc.dataset}/{wc.model}/{s}-{wc.workers}/{f}"
                    for s in compared(wc, "tgnn") for f in ("metrics.parquet", "comm.parquet")],
    output:
        table=f"{RESULTS}/{{dataset}}/{{model}}/sven-{{workers}}.parquet",
        figure=report(
            f"{RESULTS}/{{dataset}}/{{model}}/sven-{{workers}}.png",
            caption="../workflow/report/sven.rst",
            category="Training",
            subcategory="{dataset}",
        ),
        pdf=f"{RESULTS}/{{dataset}}/{{model}}/sven-{{workers}}.pdf",
    log:
        f"{RESULTS}/logs/sven_figure/{{dataset}}/{{model}}/sven-{{workers}}.log",
    threads: 1
    params:
        runs=lambda wc: " ".join(f"{s}={RESULTS}/{wc.dataset}/{wc.model}/{s}-{wc.workers}"
                                 for s in compared(wc, "tgnn")),
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn compare-sven {params.runs} --out {output.table:q} --figure {output.figure:q} > {log:q} 2>&1 && echo made: {output:q}"
