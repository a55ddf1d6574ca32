# Report: how long each stage took (from the benchmark files every rule writes), drawn last, and the
# HTML report (`snakemake --report results/report.html`) that gathers every figure of the run.


rule runtimes:
    input:
        all_outputs(),
    output:
        table=f"{RESULTS}/report/runtimes.parquet",
        figure=report(
            f"{RESULTS}/report/runtimes.png",
            caption="../workflow/report/runtimes.rst",
            category="Run",
        ),
        pdf=f"{RESULTS}/report/runtimes.pdf",
    log:
        f"{RESULTS}/logs/report/runtimes.log",
    params:
        bench=f"{RESULTS}/benchmarks",
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn runtimes {params.bench:q} --out {output.table:q} --figure {output.figure:q} > {log:q} 2>&1"
