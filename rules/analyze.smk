# Analyze: the analysis stage's six rules, each `python -m dynagnn stats|analyze` on one store, on Dask.
#   stats       per-snapshot statistics and the load-variation figure
#   reuse       PiPAD's frame overlap and the snapshot formats (sliced CSR, ESDG's graph difference)
#   redundancy  Sven's temporal redundancy of event batches (stores with an event stream only)
#   partitions  quality of every vertex and temporal partitioner
#   cache       BGL's cache hit ratio per policy and size
#   volume      modelled against counted communication volume of each partitioning


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
        "--workers {threads} {params.dask} > {log:q} 2>&1 && echo made: {output:q}"


rule reuse:
    input:
        store=f"{RESULTS}/{{dataset}}/store.zarr",
    output:
        overlap=f"{RESULTS}/{{dataset}}/analysis/overlap.parquet",
        formats=f"{RESULTS}/{{dataset}}/analysis/formats.parquet",
        overlap_fig=report(
            f"{RESULTS}/{{dataset}}/analysis/overlap.png",
            caption="../workflow/report/overlap.rst",
            category="Overlap and reuse",
            subcategory="{dataset}",
        ),
        formats_fig=report(
            f"{RESULTS}/{{dataset}}/analysis/formats.png",
            caption="../workflow/report/formats.rst",
            category="Overlap and reuse",
            subcategory="{dataset}",
        ),
        pdfs=multiext(f"{RESULTS}/{{dataset}}/analysis/", "overlap.pdf", "formats.pdf"),
    log:
        f"{RESULTS}/logs/reuse/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/reuse/{{dataset}}.tsv"
    threads: config["dask"]["workers"]
    params:
        dask=dask_flags,
        outdir=lambda w: f"{RESULTS}/{w.dataset}/analysis",
        frames=" ".join(str(s) for s in config["analysis"]["frame_sizes"]),
        lives=" ".join(str(s) for s in config["analysis"]["edge_lives"]),
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn analyze {input.store:q} --out-dir {params.outdir:q} --parts overlap formats "
        "--frame-sizes {params.frames} --edge-lives {params.lives} --workers {threads} {params.dask} > {log:q} 2>&1 && echo made: {output:q}"


rule redundancy:
    input:
        store=f"{RESULTS}/{{dataset}}/store.zarr",
    output:
        table=f"{RESULTS}/{{dataset}}/analysis/redundancy.parquet",
        figure=report(
            f"{RESULTS}/{{dataset}}/analysis/redundancy.png",
            caption="../workflow/report/redundancy.rst",
            category="Temporal redundancy",
            subcategory="{dataset}",
        ),
        pdf=f"{RESULTS}/{{dataset}}/analysis/redundancy.pdf",
    log:
        f"{RESULTS}/logs/redundancy/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/redundancy/{{dataset}}.tsv"
    threads: config["dask"]["workers"]
    params:
        dask=dask_flags,
        outdir=lambda w: f"{RESULTS}/{w.dataset}/analysis",
        batches=" ".join(str(s) for s in config["analysis"]["batch_sizes"]),
        k=config["analysis"]["neighbors"],
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn analyze {input.store:q} --out-dir {params.outdir:q} --parts redundancy "
        "--batch-sizes {params.batches} --neighbors {params.k} --workers {threads} {params.dask} > {log:q} 2>&1 && echo made: {output:q}"


rule partitions:
    input:
        store=f"{RESULTS}/{{dataset}}/store.zarr",
    output:
        table=f"{RESULTS}/{{dataset}}/analysis/partitions.parquet",
        figure=report(
            f"{RESULTS}/{{dataset}}/analysis/partitions.png",
            caption="../workflow/report/partitions.rst",
            category="Partitions",
            subcategory="{dataset}",
        ),
        pdf=f"{RESULTS}/{{dataset}}/analysis/partitions.pdf",
    log:
        f"{RESULTS}/logs/partitions/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/partitions/{{dataset}}.tsv"
    threads: config["dask"]["workers"]
    params:
        dask=dask_flags,
        outdir=lambda w: f"{RESULTS}/{w.dataset}/analysis",
        workers=" ".join(str(s) for s in config["analysis"]["partition_workers"]),
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn analyze {input.store:q} --out-dir {params.outdir:q} --parts partitions "
        "--partition-workers {params.workers} --workers {threads} {params.dask} > {log:q} 2>&1 && echo made: {output:q}"


rule cache:
    input:
        store=f"{RESULTS}/{{dataset}}/store.zarr",
    output:
        table=f"{RESULTS}/{{dataset}}/analysis/cache.parquet",
        figure=report(
            f"{RESULTS}/{{dataset}}/analysis/cache.png",
            caption="../workflow/report/cache.rst",
            category="Feature cache",
            subcategory="{dataset}",
        ),
        pdf=f"{RESULTS}/{{dataset}}/analysis/cache.pdf",
    log:
        f"{RESULTS}/logs/cache/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/cache/{{dataset}}.tsv"
    threads: config["dask"]["workers"]
    params:
        dask=dask_flags,
        outdir=lambda w: f"{RESULTS}/{w.dataset}/analysis",
        batch=config["analysis"]["cache"]["batch_size"],
        fanouts=" ".join(str(s) for s in config["analysis"]["cache"]["fanouts"]),
        fractions=" ".join(str(s) for s in config["analysis"]["cache"]["fractions"]),
        epochs=config["analysis"]["cache"]["epochs"],
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn analyze {input.store:q} --out-dir {params.outdir:q} --parts cache "
        "--cache-batch-size {params.batch} --cache-fanouts {params.fanouts} "
        "--cache-fractions {params.fractions} --cache-epochs {params.epochs} --workers {threads} {params.dask} "
        "> {log:q} 2>&1 && echo made: {output:q}"


rule volume:
    input:
        store=f"{RESULTS}/{{dataset}}/store.zarr",
    output:
        table=f"{RESULTS}/{{dataset}}/analysis/volume.parquet",
        figure=report(
            f"{RESULTS}/{{dataset}}/analysis/volume.png",
            caption="../workflow/report/volume.rst",
            category="Communication volume",
            subcategory="{dataset}",
        ),
        pdf=f"{RESULTS}/{{dataset}}/analysis/volume.pdf",
    log:
        f"{RESULTS}/logs/volume/{{dataset}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/volume/{{dataset}}.tsv"
    threads: config["dask"]["workers"]
    params:
        dask=dask_flags,
        outdir=lambda w: f"{RESULTS}/{w.dataset}/analysis",
        workers=" ".join(str(s) for s in config["analysis"]["partition_workers"]),
        k=config["analysis"]["neighbors"],
        layers=config["analysis"]["volume"]["layers"],
        hidden=config["analysis"]["volume"]["hidden"],
        window=config["analysis"]["volume"]["window"],
        partitioners=" ".join(config["analysis"]["volume"]["partitioners"]),
        batch=config["analysis"]["volume"]["batch_size"],
        mem=config["analysis"]["volume"]["memory_dim"],
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn analyze {input.store:q} --out-dir {params.outdir:q} --parts volume "
        "--partition-workers {params.workers} --neighbors {params.k} --volume-layers {params.layers} "
        "--volume-hidden {params.hidden} --volume-window {params.window} "
        "--volume-partitioners {params.partitioners} --volume-batch-size {params.batch} "
        "--volume-memory-dim {params.mem} --workers {threads} {params.dask} > {log:q} 2>&1 && echo made: {output:q}"
