"""papers.yaml: every paper figure it promises is a job of its DAG, made by a rule whose output is in the
report with a caption and a category."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.testing.fresh import fresh_python
from tests.testing.limits import PROCESS_HANG_S

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.workflow

# The figures (and the claims table) papers.yaml regenerates, per paper (see its header).
EXPECTED = {
    "BLAD": ["blad_small/stats.png", "collegemsg/wdgcn/compare-2.png", "collegemsg/wdgcn/accuracy-2.png"],
    "PiPAD": ["collegemsg/tgcn/pipad_ladder.png", "collegemsg/evolvegcn_o/pipad_ladder.png",
              "collegemsg/analysis/overlap.png"],
    "ESDG": ["pubmed/tgcn/esdg_checkpoint.png", "collegemsg/analysis/formats.png", "collegemsg/analysis/volume.png"],
    "Sven": ["collegemsg/analysis/redundancy.png", "collegemsg/analysis/volume.png",
             "collegemsg/analysis/partitions.png", "collegemsg/tgn/sven-2.png"],
    "BGL": ["pubmed/analysis/cache.png", "pubmed/analysis/partitions.png", "pubmed/graphsage/sampled-1.png"],
    "report": ["report/claims.html", "report/runtimes.png"],
}

# Run in a subprocess (Snakemake's API changes the working directory and logging): each rule's figure
# outputs with their report caption and category.
PROBE = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.io import get_flag_value, is_flagged
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings, StorageSettings

with SnakemakeApi(OutputSettings()) as api:
    wf = api.workflow(snakefile=Path("Snakefile"), workdir=Path("."), resource_settings=ResourceSettings(cores=1),
                      config_settings=ConfigSettings(configfiles=[Path("papers.yaml")]),
                      storage_settings=StorageSettings())._workflow
    out = {}
    for rule in wf.rules:
        for f in rule.output:
            if str(f).endswith((".png", ".html")):
                rep = get_flag_value(f, "report") if is_flagged(f, "report") else None
                out.setdefault(rule.name, []).append({"pattern": str(f), "caption": str(rep.caption.get_path_or_uri(secret_free=True)) if rep and rep.caption else None,
                                                      "category": rep.category if rep else None})
print("PROBE" + json.dumps(out))
"""


def _copy(tmp_path):
    for name in ("Snakefile", "rules", "envs", "workflow", "config.yaml", "papers.yaml"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)  # copytree follows the schema link
    return tmp_path


def _dry_run_jobs(text: str) -> dict[str, list[str]]:
    """rule -> every output of its jobs in a dry run's listing."""
    jobs: dict[str, list[str]] = {}
    for block in text.split("\nrule ")[1:]:
        rule = block.split(":", 1)[0].strip()
        for line in block.splitlines():
            if line.strip().startswith("output: "):
                jobs.setdefault(rule, []).extend(line.strip()[len("output: "):].split(", "))
    return jobs


def test_papers_config_every_figure_has_a_rule_and_a_caption(tmp_path):
    wd = _copy(tmp_path)
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    dry = subprocess.run([str(bindir / "snakemake"), "-n", "--cores", "2", "--configfile", "papers.yaml"], cwd=wd,
                         env=env, capture_output=True, text=True, timeout=PROCESS_HANG_S)
    assert dry.returncode == 0, dry.stderr[-3000:]
    jobs = _dry_run_jobs(dry.stdout + dry.stderr)
    made = {o: rule for rule, outs in jobs.items() for o in outs}
    for paper, figures in EXPECTED.items():
        for fig in figures:
            assert f"results/papers/{fig}" in made, f"{paper}: no job makes {fig}"
    rules = json.loads(fresh_python(PROBE, cwd=wd, env=env).split("PROBE", 1)[1])
    figures = [(o, rule) for o, rule in made.items() if o.endswith((".png", ".html"))]
    assert len(figures) > 30
    for out, rule in figures:
        flagged = [r for r in rules[rule] if r["caption"]]
        assert flagged, f"{out} (rule {rule}) is not in the report"
        for r in flagged:
            caption = Path(r["caption"])
            assert caption.suffix == ".rst" and caption.is_file() and caption.read_text().strip(), (rule, caption)
            assert r["category"], (rule, out)
    # the new figures' captions are this stage's own
    assert {Path(r["caption"]).name for name in ("study", "study_train", "accuracy", "claims")
            for r in rules[name]} == {"study.rst", "study_run.rst", "accuracy.rst", "claims.rst"}
    # the claims job reads the tables of every paper's figures
    claims = next(block for block in (dry.stdout + dry.stderr).split("\nrule ")[1:] if block.startswith("claims:"))
    for table in ("collegemsg/wdgcn/compare-2.parquet", "collegemsg/tgcn/pipad_ladder.parquet",
                  "pubmed/tgcn/esdg_checkpoint.parquet", "collegemsg/analysis/redundancy.parquet",
                  "pubmed/graphsage/sampled-1.parquet", "collegemsg/wdgcn/accuracy-2.parquet",
                  "collegemsg/tgn/sven-2.parquet"):
        assert f"results/papers/{table}" in claims.split("output:")[0], table
