# Analyze: per-snapshot statistics of a store on Dask, and the load-variation figure.


rule stats:
    input:
        store=f"{RESULTS}/{{dataset}}/store.zarr",
    output:
        table=f"{RESULTS}/{{dataset}}/stats.parquet",
        figure=report(
            f"{RESULTS}/{{dataset}}/stats.png",
            caption="../workflow/report/stats.rst",
            category="Snapshot statistics",
            subcategory="{dataset}",
        ),
        pdf=f"{RESULTS}/{{dataset}}/stats.pdf",
    log:
        f"{RESULTS}/logs/stats/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/stats/{{dataset}}.tsv"
    threads: config["dask"]["workers"]
    params:
        dask=dask_flags,
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn stats {input.store:q} --out {output.table:q} --figure {output.figure:q} "
        "--workers {threads} {params.dask} > {log:q} 2>&1"
