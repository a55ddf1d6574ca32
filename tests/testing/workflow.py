"""The workflow's tiny config and how a test runs Snakemake on it, as a user does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from .limits import SNAKEMAKE_HANG_S

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "data" / "fixtures"

TINY = {
    "toy": {"format": "snap-edgelist", "path": "data/snap_temporal.txt", "directed": False,
            "snapshots": {"by": "time", "width": 100}},
    "as": {"format": "as733", "path": "data/as733", "features": {"kind": "random", "dim": 4}},
    "synth": {"format": "synthetic", "generator": "blad",
              "params": {"num_nodes": 300, "num_edges": 1500, "num_snapshots": 8, "seed": 1}},
}

TRAIN_RUNS = [{"dataset": "synth", "models": ["tgcn", "evolvegcn_o"], "strategies": ["sequential"],
               "options": {"lr": 0.02}},
              {"dataset": "synth", "models": ["wdgcn"], "strategies": ["vertex"], "workers": [2],
               "options": {"lr": 0.02}},
              # seeds: a job per seed, then the summary; EdgeBank scored on the snapshot link task
              {"dataset": "synth", "models": ["tgcn"], "strategies": ["frames"], "seeds": [0, 1],
               "options": {"lr": 0.02, "frame_size": 2, "report_negative_kinds": ["historical"]}},
              {"dataset": "synth", "models": ["edgebank"], "strategies": ["sequential"], "seeds": [0, 1]}]

# BGL's sampled training with its figure (a static graph with features and classes)
BGL = {"format": "synthetic", "generator": "bgl",
       "params": {"num_nodes": 400, "num_edges": 2000, "feature_dim": 8, "classes": 3, "seed": 1}}
SAMPLED_STRATEGIES = ["sampled", "sampled_nocache"]
SAMPLED_RUN = {"dataset": "bgl", "models": ["graphsage"], "strategies": SAMPLED_STRATEGIES,
               "options": {"fanouts": [3, 2], "batch_size": 32, "cache_l1_mb": 0.002, "cache_l2_mb": 0.004,
                           "samplers": 0}}
# an auto run beside a sequential run of 2 threads: the compare figure of those 2 cores
AUTO_RUN = {"dataset": "synth", "models": ["tgcn"], "strategies": ["sequential", "auto"],
            "options": {"lr": 0.02, "threads": 2}}
# the session's one run (tests/workflow/conftest.py's tiny_run): every stage, and the auto run. BGL's
# static graph is not in it: one snapshot fits none of the tiny config's analyses, which the run asks
# for every dataset (tests/workflow/test_snakefile.py's sampled test runs its own)
SHARED_DATASETS = TINY
SHARED_RUNS = TRAIN_RUNS + [AUTO_RUN]


def workdir(tmp_path: Path, datasets: dict, train_runs: list | None = None) -> Path:
    """A copy of the workflow in ``tmp_path`` with the fixtures' data and a tiny config of ``datasets``
    and ``train_runs`` (:data:`TRAIN_RUNS` by default)."""
    for name in ("Snakefile", "rules", "envs", "workflow"):
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, tmp_path / name)  # follows the schema link
        else:
            shutil.copy(src, tmp_path / name)
    shutil.copytree(FIX, tmp_path / "data")
    cfg = {"ingest_threads": 1, "dask": {"workers": 1, "processes": False}, "datasets": datasets,
           "analysis": {"frame_sizes": [2, 3], "edge_lives": [1, 2], "batch_sizes": [2, 4], "neighbors": 2,
                        "partition_workers": [2], "cache": {"batch_size": 4, "fanouts": [2, 2], "fractions": [0.1, 0.5]},
                        "volume": {"layers": 2, "hidden": 8, "window": 2, "batch_size": 4, "memory_dim": 6}},
           "train": {"hidden": 4, "window": 2, "epochs": 2, "runs": TRAIN_RUNS if train_runs is None else train_runs},
           "cost": {"grid": "quick", "repeats": 1}, "schedule": {"workers": [2]}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    return tmp_path


def snakemake(wd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run snakemake as a user with the environment active: its bin/ first on PATH; ``env``: variables
    set beside the test's environment."""
    bindir = Path(sys.executable).parent
    env = {**os.environ, **(env or {}), "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([str(bindir / "snakemake"), "--cores", "2", *args], cwd=wd, env=env,
                          capture_output=True, text=True, timeout=SNAKEMAKE_HANG_S)


def jobs(dry_run: str) -> list[dict]:
    """Each job of a dry run's listing: rule, wildcards, resources (dict) and shell command."""
    out = []
    for block in dry_run.split("\nrule ")[1:]:
        job = {"rule": block.split(":", 1)[0].strip(), "wildcards": {}, "resources": {}, "shell": ""}
        for line in block.splitlines():
            line = line.strip()
            for key in ("wildcards", "resources"):
                if line.startswith(f"{key}: "):
                    job[key] = dict(kv.split("=", 1) for kv in line[len(key) + 2:].split(", "))
            if line.startswith("Shell command: "):
                job["shell"] = line[len("Shell command: "):]
        out.append(job)
    return out
