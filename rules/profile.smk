# Profile: time the training operators on the run's device over a grid spanning the run's stores, fit
# the per-operator cost model -> results/cost/<device>/ (once per device, shared by every plan).
import os


rule profile:
    input:
        stores=expand(f"{RESULTS}/{{dataset}}/store.zarr", dataset=DATASETS),
    output:
        profile=f"{RESULTS}/cost/{{device}}/profile.parquet",
        predictor=f"{RESULTS}/cost/{{device}}/predictor.json",
        figure=report(
            f"{RESULTS}/cost/{{device}}/predicted_vs_measured.png",
            caption="../workflow/report/predicted_vs_measured.rst",
            category="Cost model",
            subcategory="{device}",
        ),
        pdf=f"{RESULTS}/cost/{{device}}/predicted_vs_measured.pdf",
    log:
        f"{RESULTS}/logs/profile/{{device}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/profile/{{device}}.tsv"
    threads: PROFILE_THREADS
    params:
        out_dir=lambda wildcards, output: os.path.dirname(output.predictor),
        grid=config["cost"]["grid"],
        repeats=config["cost"]["repeats"],
        torch_threads=config["cost"]["threads"],
        seed=config["seed"],
        models=profile_models,
        hidden=profile_hidden,
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn profile --device {wildcards.device} --out-dir {params.out_dir:q} --grid {params.grid} "
        "--stores {input.stores:q} --models {params.models} --hidden {params.hidden} --threads {params.torch_threads} "
        "--repeats {params.repeats} --seed {params.seed} > {log:q} 2>&1 && echo made: {output:q}"
