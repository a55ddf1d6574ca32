# Ingest: a dataset's source (or generator) -> its Zarr snapshot store.


rule ingest:
    input:
        dataset_inputs,
    output:
        directory(f"{RESULTS}/{{dataset}}/store.zarr"),
    log:
        f"{RESULTS}/logs/ingest/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/ingest/{{dataset}}.tsv"
    threads: config["ingest_threads"]
    params:
        spec=dataset_spec_json,
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn ingest --spec {params.spec:q} --dataset {wildcards.dataset:q} "
        "--out {output:q} --threads {threads} > {log:q} 2>&1 && echo made: {output:q}"
