"""Every script of examples/ runs on a tiny graph: ``python examples/<name>.py --tiny --out DIR`` exits 0
and prints at least one test metric as ``test_<metric>: <number>`` (or ``test_<metric> <number>``;
examples/README.md's convention),
a finite number, within [0, 1] for the bounded metrics (AUC, AP, MRR, accuracy, F1). The scripts are found
by glob, so a new one is run without an edit here; each also answers ``--help``. A script that needs PyG
(gconv_gru.py) runs only where torch_geometric is installed (skipped, with the reason, elsewhere);
own_model.py's two runs (sequential and frames) must print losses within 1e-5 of each other, as
examples/README.md says."""

from __future__ import annotations

import importlib.util
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.testing.limits import PROCESS_HANG_S

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
# "test_auc: 0.61", "test_ap 0.61", "frames test_mrr=0.3": the name, then its value
METRIC = re.compile(r"(?:^|\s)(test_[A-Za-z0-9_]+)\s*[:=]?\s*(\S+?)[,;)]?(?=\s|$)")
BOUNDED = {"auc", "ap", "mrr", "accuracy", "f1"}   # a name part that makes a metric a fraction
NEEDS_PYG = {"gconv_gru.py"}   # scripts that import torch_geometric (the pyg extra)
HAS_PYG = importlib.util.find_spec("torch_geometric") is not None
# own_model.py: "largest loss difference between the strategies: 1.2e-07"
LOSS_GAP = re.compile(r"^largest loss difference[^:]*:\s*(\S+)\s*$", re.M)


def script_param(script: Path):
    """A script to run: skipped, with the reason, where it needs PyG and PyG is not installed (its
    ``--help`` needs no PyG and runs everywhere)."""
    marks = (pytest.mark.skipif(not HAS_PYG, reason=f"{script.name} needs torch_geometric (pip install "
                                                     "'dynagnn[pyg]'), which is not installed"),)
    return pytest.param(script, id=script.name, marks=marks if script.name in NEEDS_PYG else ())


def run(script: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(script), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=PROCESS_HANG_S)


def test_there_are_examples():
    assert {"fit_builtin.py", "own_model.py", "from_pyg.py"} <= {p.name for p in EXAMPLES}


@pytest.mark.parametrize("script", [script_param(p) for p in EXAMPLES])
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
    if script.name == "own_model.py":   # README: sequential and frames train "with the same losses"
        gap = LOSS_GAP.search(out.stdout)
        assert gap, f"own_model.py printed no 'largest loss difference: <x>':\n{out.stdout[-2000:]}"
        assert float(gap.group(1)) < 1e-5, f"own_model.py: sequential and frames losses differ:\n{out.stdout}"


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_answers_help(script, tmp_path):
    out = run(script, "--help", cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "--tiny" in out.stdout and "--out" in out.stdout
