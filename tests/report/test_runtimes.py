"""Stage times from Snakemake's benchmark files: the median of repeated lines, one row per job,
and one clear line for a folder without them or a file that is not one."""

import pandas as pd
import pytest

from dynagnn.errors import InputError
from dynagnn.report.runtimes import stage_times

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def test_one_row_per_job_with_the_median_of_repeats(tmp_path):
    (tmp_path / "train" / "synth" / "tgcn").mkdir(parents=True)
    (tmp_path / "ingest").mkdir()
    (tmp_path / "ingest" / "toy.tsv").write_text(HEADER + "2.0\t0:00:02\t100\t0\t0\t0\t0\t0\t90\t1.5\n")
    (tmp_path / "train" / "synth" / "tgcn" / "sequential-1.tsv").write_text(
        HEADER + "".join(f"{s}\t0:00:0{int(s)}\t{m}\t0\t0\t0\t0\t0\t90\t{c}\n"
                         for s, m, c in [(3.0, 200, 2.0), (5.0, 300, 4.0), (4.0, 250, 9.0)]))
    got = stage_times(tmp_path)
    want = pd.DataFrame({"rule": ["ingest", "train"], "job": ["toy", "synth/tgcn/sequential-1"],
                         "seconds": [2.0, 4.0], "cpu_seconds": [1.5, 4.0], "max_rss_mb": [100.0, 250.0]})
    pd.testing.assert_frame_equal(got, want)


def test_no_benchmark_files_or_a_foreign_file_is_refused(tmp_path):
    with pytest.raises(InputError, match="no Snakemake benchmark files"):
        stage_times(tmp_path)
    (tmp_path / "x.tsv").write_text("a\tb\n1\t2\n")
    with pytest.raises(InputError, match="not a Snakemake benchmark file .*missing cpu_time, max_rss, s"):
        stage_times(tmp_path)
