"""A dataset's source is the ingest rule's input (issue 34, item 10): a missing source refuses with one
WorkflowError naming the dataset and the path (never "Nothing to be done" over a stale store), a
changed source re-runs the ingest, and a source folder's files are inputs one by one."""

import shutil

import pytest
import yaml

from tests.testing.workflow import TINY, snakemake, workdir

pytestmark = pytest.mark.workflow


def _config(wd, datasets):
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    cfg["datasets"], cfg["train"]["runs"] = datasets, []
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg))


def test_a_missing_or_changed_source(tmp_path):
    wd = workdir(tmp_path, {"toy": TINY["toy"]})
    _config(wd, {"toy": TINY["toy"]})
    built = snakemake(wd, "results/toy/store.zarr")
    assert built.returncode == 0, built.stderr[-3000:]
    dry = snakemake(wd, "-n")
    assert dry.returncode == 0 and "rule ingest" not in dry.stdout, dry.stdout[-3000:]  # up to date

    src = wd / "data" / "snap_temporal.txt"
    moved = src.rename(wd / "data" / "elsewhere.txt")
    dry = snakemake(wd, "-n")  # once "Nothing to be done", the stale store reused
    out = dry.stdout + dry.stderr
    assert dry.returncode != 0, out[-3000:]
    assert "WorkflowError" in out and ("dataset toy: its source data/snap_temporal.txt does not exist "
                                       "(config datasets.toy.path)") in out, out[-3000:]
    assert "Nothing to be done" not in out

    moved.rename(src)
    with src.open("a") as f:  # one more event: the store is stale
        f.write("1 5 1990\n")
    dry = snakemake(wd, "-n", "results/toy/stats.parquet")
    assert dry.returncode == 0, dry.stderr[-3000:]
    ingest = dry.stdout.split("rule ingest:", 1)[-1].split("\n\n", 1)[0]
    assert "reason: Updated input files: data/snap_temporal.txt" in ingest, dry.stdout[-3000:]


def test_a_source_folder_is_its_files(tmp_path):
    wd = workdir(tmp_path, {"as": TINY["as"]})
    _config(wd, {"as": TINY["as"]})
    dry = snakemake(wd, "-n", "results/as/store.zarr")
    assert dry.returncode == 0, dry.stderr[-3000:]
    files = sorted(p.relative_to(wd).as_posix() for p in (wd / "data" / "as733").iterdir())
    assert f"input: {', '.join(files)}" in dry.stdout, dry.stdout[-3000:]
    shutil.rmtree(wd / "data" / "as733")
    dry = snakemake(wd, "-n", "results/as/store.zarr")
    assert dry.returncode != 0 and "dataset as: its source data/as733 does not exist" in dry.stdout + dry.stderr
