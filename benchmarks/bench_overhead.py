"""What a short run costs beside its epochs (issue 48): one ``dynagnn train`` process and one
``dynagnn.fit`` call, by phase, against ``python -c "import torch"`` on the same machine, in one run.

Data: PyTorch Geometric Temporal's own files in its own loop (``sequence carry``, the regress task):
england_covid and twitter_tennis_rg17 (``../shared/data/pyg_temporal``) and the chickenpox-like store
of ``bench_pygt_loop`` (PyG-T's pedalme and chickenpox files are not in this workplace); and the default
run's CollegeMsg store (weekly snapshots, the link task in windows). Model T-GCN, 1 epoch, 1 thread.

Rows, each the median of interleaved rounds of fresh processes:

- ``import torch``: ``python -c "import torch"``, the floor of any run;
- ``train, plain``: ``python -m dynagnn train STORE --strategy sequential --epochs 1`` from launch to exit;
- ``train, default strategy``: the same without ``--strategy`` (auto, choosing anew: an empty
  choices folder, as a new user's first run);
- ``train, by phase`` and ``fit, by phase``: the same run in a driver process that times the phases
  below by wrapping the library's functions (the driver's own cost is in ``rest``), then the CLI's
  ``main`` or ``dynagnn.fit``: interpreter start (launch to the driver's first line), imports (the CLI,
  the API, the engine, the strategy's module: torch, pandas, zarr), opening the store, reading the data
  and building the task, building the model and its contract check, the first step (forward, backward and
  the optimiser's first step), the other steps, evaluation, checking the out-dir, writing the outputs,
  drawing ``training.png`` (what ``--figure`` adds: matplotlib's import and the drawing, timed after
  the run; the plain rows draw nothing), the exit (the driver's last line to the process's end:
  the interpreter's teardown), and the rest (the routing of the run's keys, logging, the driver's own
  wrappers: the wall less the phases);
- PyTorch Geometric Temporal's script of the same run (its imports and loop: ``TGCN`` over a
  ``StaticGraphTemporalSignal``), where ``torch_geometric_temporal`` is installed; else one line says so.

Then the commands that must not import torch: ``dynagnn --help``, ``train --help``, ``check-config``,
and Snakemake's start (``snakemake -n`` of the default config, beside ``snakemake --version``: its own).
The aims (issue 48): a 1-epoch run within 2x ``import torch``; ``--help`` and ``check-config`` under
0.5 s; the workflow's own share of Snakemake's start under 1 s.

Run: ``python -m benchmarks overhead``. Environment: ``DYNAGNN_BENCH_OVERHEAD_ROUNDS`` (default 5),
``DYNAGNN_BENCH_OVERHEAD_DATASETS`` (comma-separated: england_covid, twitter_tennis, chickenpox,
collegemsg).
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .bench_frames import PYG_DATA, _ingest
from .bench_pygt_loop import chickenpox_like

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
# the phases of a run, in the order a run meets them ("rest": the process wall less the others)
PHASES = ("interpreter", "imports", "store", "data and task", "model and contract", "first step", "other steps",
          "evaluation", "out-dir check", "outputs", "figure", "exit", "rest")

# The driver: run in a fresh interpreter; argv: mode (train|fit), store, out, launch time (time.time()).
DRIVER = r'''
import sys, time
T_START = time.time()
LAUNCH = float(sys.argv[4])
t_imports = time.perf_counter()
import dynagnn.cli, dynagnn.api, dynagnn.api.run, dynagnn.train.engine as engine
import dynagnn.train.strategies.sequential as seq
import dynagnn.data.store as store_mod
from dynagnn.train.optimizer import Adam
import json
seconds = {"interpreter": T_START - LAUNCH, "imports": time.perf_counter() - t_imports}
stack = []

def timed(phase, fn):
    def wrapper(*a, **k):
        t = time.perf_counter()
        stack.append(0.0)
        try:
            return fn(*a, **k)
        finally:
            inner = stack.pop()
            spent = time.perf_counter() - t
            seconds[phase] = seconds.get(phase, 0.0) + spent - inner
            if stack:
                stack[-1] += spent
    return wrapper

cls = seq.Sequential
store_mod.SnapshotStore.__init__ = timed("store", store_mod.SnapshotStore.__init__)
cls.prepare = timed("data and task", cls.prepare)
cls.build_model = timed("model and contract", cls.build_model)
engine.check_run = timed("model and contract", engine.check_run)
steps = {"n": 0}
train_step = cls.train_step
def first_or_other(fn):
    def wrapper(*a, **k):
        phase = "first step" if steps["n"] == 0 else "other steps"
        return timed(phase, fn)(*a, **k)
    return wrapper
cls.train_step = first_or_other(train_step)
adam_step = Adam.step
def step(self, *a, **k):
    phase = "first step" if steps["n"] == 0 else "other steps"
    steps["n"] += 1
    return timed(phase, adam_step)(self, *a, **k)
Adam.step = step
cls.evaluate = timed("evaluation", cls.evaluate)
engine.out_dir_refusal = timed("out-dir check", engine.out_dir_refusal)
engine._publish = timed("outputs", engine._publish)
mode, store, out = sys.argv[1:4]
if mode == "train":
    rc = dynagnn.cli.main(["-q", "train", store, "--out-dir", out, "--strategy", "sequential", "--model", "tgcn",
                           "--epochs", "1", "--threads", "1", "--overwrite"])
    assert rc == 0, rc
    # what --figure adds: its imports (matplotlib) and the drawing, after the run as the flag does
    t = time.perf_counter()
    import pandas as pd
    from dynagnn.report.figures import training_curves
    training_curves(pd.read_parquet(out + "/metrics.parquet"), __import__("pathlib").Path(out) / "training.png", "run")
    seconds["figure"] = time.perf_counter() - t
else:
    dynagnn.fit(store, model="tgcn", strategy="sequential", out=out, epochs=1, threads=1, overwrite=True)
if mode == "train":
    __import__("gc").freeze()   # as python -m dynagnn does before it exits (dynagnn/__main__.py)
seconds["at_exit"] = time.time()   # the parent counts from here to the process's end as the exit
print("PHASES " + json.dumps(seconds), flush=True)
'''

# PyTorch Geometric Temporal's script of the same run: its loader (reading the local file where it would
# download it), its TGCN carried through the training snapshots, one Adam step per epoch, then the test MSE
# with the state carried on (its README's loop); argv: dataset (england_covid|twitter_tennis), path
PYGT_SCRIPT = r'''
import json, sys
import torch
from torch_geometric_temporal.dataset import EnglandCovidDatasetLoader, TwitterTennisDatasetLoader
from torch_geometric_temporal.nn.recurrent import TGCN
from torch_geometric_temporal.signal import temporal_signal_split
name, path = sys.argv[1:3]
base = EnglandCovidDatasetLoader if name == "england_covid" else TwitterTennisDatasetLoader
class Local(base):
    def _read_web_data(self):
        self._dataset = json.load(open(path))
dataset = Local().get_dataset(lags=8) if name == "england_covid" else Local().get_dataset()
train, test = temporal_signal_split(dataset, train_ratio=0.8)
torch.set_num_threads(1)
torch.manual_seed(0)
class RecurrentGCN(torch.nn.Module):
    def __init__(self, node_features):
        super().__init__()
        self.recurrent = TGCN(node_features, 32)
        self.linear = torch.nn.Linear(32, 1)
    def forward(self, x, edge_index, edge_weight, h):
        h = self.recurrent(x, edge_index, edge_weight, h)
        return self.linear(torch.relu(h)), h
model = RecurrentGCN(next(iter(train)).x.shape[1])
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
model.train()
cost, h = 0, None
for t, snapshot in enumerate(train):
    y_hat, h = model(snapshot.x, snapshot.edge_index, snapshot.edge_attr, h)
    cost = cost + torch.mean((y_hat.view(-1) - snapshot.y) ** 2)
(cost / (t + 1)).backward()
optimizer.step()
optimizer.zero_grad()
model.eval()
with torch.no_grad():
    h, cost = h.detach(), 0
    for t, snapshot in enumerate(test):
        y_hat, h = model(snapshot.x, snapshot.edge_index, snapshot.edge_attr, h)
        cost = cost + torch.mean((y_hat.view(-1) - snapshot.y) ** 2)
print("MSE", float(cost / (t + 1)))
'''


def _wall(cmd: list[str], env: dict | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    return time.perf_counter() - t


def _driver(mode: str, store: Path, out: Path) -> tuple[float, dict]:
    launch = time.time()
    t = time.perf_counter()
    done = subprocess.run([PY, "-c", DRIVER, mode, str(store), str(out), repr(launch)], check=True,
                          capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t
    ended = time.time()
    line = next(x for x in done.stdout.splitlines() if x.startswith("PHASES "))
    seconds = json.loads(line[len("PHASES "):])
    seconds["exit"] = ended - seconds.pop("at_exit")
    seconds["rest"] = wall - sum(seconds.values())
    return wall, seconds


def _datasets(wanted: list[str]) -> dict[str, Path]:
    out = {}
    if "england_covid" in wanted:
        out["england_covid"] = _ingest("england_covid", {"format": "pyg-temporal-json",
                                                         "path": str(PYG_DATA / "england_covid.json")})
    if "twitter_tennis" in wanted:
        out["twitter_tennis"] = _ingest("twitter_tennis_rg17", {"format": "pyg-temporal-json",
                                                                "path": str(PYG_DATA / "twitter_tennis_rg17.json")})
    if "chickenpox" in wanted:
        out["chickenpox"] = chickenpox_like()
    if "collegemsg" in wanted:   # the default run's store: weekly snapshots of CollegeMsg, window mode
        from .bench_auto_total import _collegemsg_weekly

        out["collegemsg"] = _collegemsg_weekly()
    return out


PYGT_FILES = {"england_covid": "england_covid.json", "twitter_tennis": "twitter_tennis_rg17.json"}


@functools.cache
def _pygt_env() -> dict | None:
    """The environment PyG-T's script runs in, or None where torch_geometric_temporal does not import.
    ``DYNAGNN_BENCH_PYGT_SITE``: a folder that holds it (``pip install --no-deps --target DIR
    torch-geometric-temporal``). Where torch_sparse is missing (no wheel for this torch), a one-line stand-in
    of its ``SparseTensor`` name is put on the path: PyG-T imports it at package import for EvolveGCN-O's
    signatures, and the TGCN script never calls it."""
    paths = [p for p in (os.environ.get("DYNAGNN_BENCH_PYGT_SITE"),) if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths + [os.environ.get("PYTHONPATH", "")])}
    if subprocess.run([PY, "-c", "import torch_sparse"], env=env, capture_output=True).returncode != 0:
        stub = Path(tempfile.mkdtemp(prefix="dynagnn-torch-sparse-")) / "torch_sparse"
        stub.mkdir()
        (stub / "__init__.py").write_text("class SparseTensor:  # a stand-in: benchmarks/bench_overhead.py\n    pass\n")
        env["PYTHONPATH"] = os.pathsep.join(paths + [str(stub.parent), os.environ.get("PYTHONPATH", "")])
        env["DYNAGNN_BENCH_TORCH_SPARSE_STUB"] = "1"
    ok = subprocess.run([PY, "-c", "import torch_geometric_temporal"], env=env, capture_output=True).returncode == 0
    return env if ok else None


def _commands(rounds: int) -> dict[str, float]:
    """The commands that must not import torch, and Snakemake's start: medians of ``rounds``."""
    cmds = {"dynagnn --help": [PY, "-m", "dynagnn", "--help"],
            "dynagnn train --help": [PY, "-m", "dynagnn", "train", "--help"],
            "dynagnn check-config": [PY, "-m", "dynagnn", "check-config", str(ROOT / "config.yaml")]}
    snakemake = shutil.which("snakemake", path=str(Path(PY).parent))
    if snakemake:
        cmds["snakemake --version"] = [snakemake, "--version"]
        cmds["snakemake -n (default config)"] = [snakemake, "-n", "--cores", "1", "-q"]
    times = {k: [] for k in cmds}
    for _ in range(rounds):
        for k, cmd in cmds.items():
            times[k].append(_wall(cmd))
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> dict:
    rounds = int(os.environ.get("DYNAGNN_BENCH_OVERHEAD_ROUNDS", 5))
    wanted = os.environ.get("DYNAGNN_BENCH_OVERHEAD_DATASETS", "england_covid,twitter_tennis,chickenpox,collegemsg").split(",")
    stores = _datasets([w.strip() for w in wanted])
    results: dict = {"rounds": rounds, "datasets": {}}
    work = Path(tempfile.mkdtemp(prefix="dynagnn-overhead-"))
    try:
        for name, store in stores.items():
            out = work / name
            plain = [PY, "-m", "dynagnn", "-q", "train", str(store), "--out-dir", str(out / "plain"), "--model", "tgcn",
                     "--strategy", "sequential", "--epochs", "1", "--threads", "1", "--overwrite"]
            default = [PY, "-m", "dynagnn", "-q", "train", str(store), "--out-dir", str(out / "auto"), "--model", "tgcn",
                       "--epochs", "1", "--overwrite"]
            walls = {"import torch": [], "train, plain": [], "train, default strategy": [], "train, by phase": [],
                     "fit, by phase": []}
            pygt = name in PYGT_FILES and _pygt_env() is not None
            if pygt:
                walls["PyG-T's script"] = []
            phases = {"train": [], "fit": []}
            for i in range(rounds):
                walls["import torch"].append(_wall([PY, "-c", "import torch"]))
                walls["train, plain"].append(_wall(plain))
                env = {**os.environ, "DYNAGNN_CHOICES": str(work / f"choices-{name}-{i}")}   # a new user's first run
                walls["train, default strategy"].append(_wall(default, env))
                if pygt:
                    walls["PyG-T's script"].append(_wall([PY, "-c", PYGT_SCRIPT, name, str(PYG_DATA / PYGT_FILES[name])],
                                                            _pygt_env()))
                for mode in ("train", "fit"):
                    wall, seconds = _driver(mode, store, out / f"driver-{mode}")
                    walls[f"{mode}, by phase"].append(wall)
                    phases[mode].append(seconds)
            med = {k: statistics.median(v) for k, v in walls.items()}
            by_phase = {mode: {p: statistics.median(r.get(p, 0.0) for r in rows) for p in PHASES}
                        for mode, rows in phases.items()}
            results["datasets"][name] = {"walls": med, "phases": by_phase}
            torch_s = med["import torch"]
            print(f"\n== {name}: a 1-epoch T-GCN run, 1 thread; medians of {rounds} interleaved rounds of fresh processes")
            for k, v in med.items():
                print(f"  {k:<26} {v:6.2f} s  {v / torch_s:5.2f}x import torch")
            print(f"  {'phase':<26} {'train':>8} {'fit':>8}")
            for p in PHASES:
                print(f"  {p:<26} {by_phase['train'][p]:8.3f} {by_phase['fit'][p]:8.3f}")
        if _pygt_env() is None:
            print("\n  PyTorch Geometric Temporal's script: skipped, torch_geometric_temporal does not import here "
                  "(pip install --no-deps --target DIR torch-geometric-temporal; DYNAGNN_BENCH_PYGT_SITE=DIR)")
        elif _pygt_env().get("DYNAGNN_BENCH_TORCH_SPARSE_STUB"):
            print("\n  PyTorch Geometric Temporal's script ran with a stand-in torch_sparse (its SparseTensor name only)")
        cmds = _commands(rounds)
        results["commands"] = cmds
        print(f"\n== commands that must not import torch; medians of {rounds} interleaved rounds")
        for k, v in cmds.items():
            print(f"  {k:<32} {v:6.2f} s")
        if "snakemake -n (default config)" in cmds:
            own = cmds["snakemake -n (default config)"] - cmds["snakemake --version"]
            results["snakemake_own_share_s"] = own
            print(f"  the workflow's share of Snakemake's start (dry run less --version): {own:.2f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


if __name__ == "__main__":
    main()
