"""How long each stage of a workflow run took, from the benchmark files Snakemake writes.

Every rule of the workflow names a ``benchmark:`` file, ``<results>/benchmarks/<rule>/<job>.tsv``,
where Snakemake records the job's wall time (``s``), peak resident memory (``max_rss``, MB) and CPU
time (``cpu_time``, s). A job that ran more than once (``--benchmark-repeats``) has one line per
repetition: the median is taken.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..errors import InputError

COLUMNS = ["rule", "job", "seconds", "cpu_seconds", "max_rss_mb"]


def stage_times(bench_dir: str | Path) -> pd.DataFrame:
    """One row per job: rule (the first folder under ``bench_dir``), job (the rest of the path,
    without .tsv), median wall seconds, CPU seconds and peak RSS (MB); sorted by rule and job.
    InputError if ``bench_dir`` holds no benchmark file or one without Snakemake's columns."""
    bench_dir = Path(bench_dir)
    files = sorted(bench_dir.rglob("*.tsv"))
    if not files:
        raise InputError("no Snakemake benchmark files (*.tsv) here: run the workflow first", bench_dir)
    rows = []
    for path in files:
        df = pd.read_csv(path, sep="\t")
        missing = {"s", "max_rss", "cpu_time"} - set(df.columns)
        if missing or df.empty:
            raise InputError(f"not a Snakemake benchmark file (columns s, max_rss, cpu_time; missing "
                             f"{', '.join(sorted(missing)) or 'every row'})", path)
        rel = path.relative_to(bench_dir).with_suffix("")
        med = df[["s", "cpu_time", "max_rss"]].apply(pd.to_numeric, errors="coerce").median()
        rows.append({"rule": rel.parts[0], "job": "/".join(rel.parts[1:]) or rel.parts[0],
                     "seconds": float(med["s"]), "cpu_seconds": float(med["cpu_time"]),
                     "max_rss_mb": float(med["max_rss"])})
    return pd.DataFrame(rows, columns=COLUMNS).sort_values(["rule", "job"], ignore_index=True)
