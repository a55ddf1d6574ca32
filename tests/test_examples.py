"""Every script of examples/ runs on a tiny graph: ``python examples/<name>.py --tiny --out DIR`` exits 0
and prints at least one test metric as ``test_<metric>: <number>`` (or ``test_<metric> <number>``;
examples/README.md's convention),
a finite number, within [0, 1] for the bounded metrics (AUC, AP, MRR, accuracy, F1). The scripts are found
by glob, so a new one is run without an edit here; each also answers ``--help``."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
# "test_auc: 0.61", "test_ap 0.61", "frames test_mrr=0.3": the name, then its value
METRIC = re.compile(r"(?:^|\s)(test_[A-Za-z0-9_]+)\s*[:=]?\s*(\S+?)[,;)]?(?=\s|$)")
BOUNDED = {"auc", "ap", "mrr", "accuracy", "f1"}   # a name part that makes a metric a fraction


def run(script: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_there_are_examples():
    assert {"fit_builtin.py", "own_model.py", "from_pyg.py"} <= {p.name for p in EXAMPLES}


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_tiny(script, tmp_path):
    out = run(script, "--tiny", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert out.returncode == 0, f"{script.name} --tiny failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}"
    metrics = [m.groups() for line in out.stdout.splitlines() if (m := METRIC.search(line))]
    assert metrics, f"{script.name} printed no 'test_<metric>: <number>':\n{out.stdout[-2000:]}"
    for name, text in metrics:
        try:
            value = float(text)
        except ValueError:
            pytest.fail(f"{script.name}: {name} is followed by {text!r}, not a number")
        assert math.isfinite(value), f"{script.name}: {name} is {text}"
        if BOUNDED & set(name.split("_")[1:]):
            assert 0.0 <= value <= 1.0, f"{script.name}: {name} {value} is outside [0, 1]"
    assert (tmp_path / "out").is_dir(), f"{script.name} left nothing in --out"


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_answers_help(script, tmp_path):
    out = run(script, "--help", cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "--tiny" in out.stdout and "--out" in out.stdout
