# dynagnn workflow: ingest -> store -> analyze -> profile -> schedule -> train -> report.
# Run:   snakemake --cores 2            (the embedded default config.yaml)
#        snakemake --cores 8 --configfile my.yaml
#        snakemake --workflow-profile workflow/profiles/slurm
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config.yaml"


# The library's check comes first for its messages (the unknown key and a close match); Snakemake's
# validation against the same schema fills in the defaults. Both read workflow/schemas/.
include: "rules/common.smk"


validate(config, "workflow/schemas/config.schema.yaml")


include: "rules/ingest.smk"
include: "rules/analyze.smk"
include: "rules/profile.smk"
include: "rules/schedule.smk"
include: "rules/train.smk"
include: "rules/papers.smk"
include: "rules/report.smk"


report: "workflow/report/workflow.rst"


rule all:
    input:
        all_outputs(),
        rules.runtimes.output,
    default_target: True


onsuccess:
    print("dynagnn: the run made")
    print("\n".join(made_lines()))
    print(f"dynagnn: claims table {RESULTS}/report/claims.html; time per stage {RESULTS}/report/runtimes.png; "
          f"every figure in one page: snakemake --report {RESULTS}/report.html")
