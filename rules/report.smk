# Report: the papers' headline claims beside ours (from the result tables), how long each stage took
# (from the benchmark files every rule writes), drawn last, and the HTML report
# (`snakemake --report results/report.html`) that gathers every figure of the run.


rule claims:
    input:
        claim_inputs(),
    output:
        table=f"{RESULTS}/report/claims.parquet",
        html=report(
            f"{RESULTS}/report/claims.html",
            caption="../workflow/report/claims.rst",
            category="Run",
            labels={"figure": "claims table"},
        ),
    log:
        f"{RESULTS}/logs/report/claims.log",
    benchmark:
        f"{RESULTS}/benchmarks/claims/claims.tsv"
    threads: 1
    params:
        results=lambda wildcards, output: os.path.dirname(os.path.dirname(output.table)),
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn claims {input:q} --results {params.results:q} --out {output.table:q} "
        "--html {output.html:q} > {log:q} 2>&1 && echo made: {output:q}"


rule runtimes:
    input:
        all_outputs(),
        paper_outputs(),
        rules.claims.output,
    output:
        table=f"{RESULTS}/report/runtimes.parquet",
        figure=report(
            f"{RESULTS}/report/runtimes.png",
            caption="../workflow/report/runtimes.rst",
            category="Run",
            labels={"figure": "time per stage"},
        ),
        pdf=f"{RESULTS}/report/runtimes.pdf",
    log:
        f"{RESULTS}/logs/report/runtimes.log",
    params:
        bench=f"{RESULTS}/benchmarks",
    conda:
        "../envs/dynagnn.yaml"
    shell:
        "python -m dynagnn runtimes {params.bench:q} --out {output.table:q} --figure {output.figure:q} > {log:q} 2>&1 && echo made: {output:q}"

