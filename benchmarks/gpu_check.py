"""``make gpu-check``: verify every GPU path and measure the GPU ladder in one command.

Who runs it: a user (or this project) who has a GPU machine for a short time, often without network
(the bundle of ``tools/gpu_bundle.py`` brings what the CUDA image lacks). It

1. prints the device, driver, torch and CUDA versions;
2. runs the ``gpu``-marked tests (the cuda half of every device-parametrised equivalence test);
3. runs a short ladder, one rung per system, and writes ``gpu-check.json`` and ``gpu-check.md`` to
   ``--out`` (``GPU_CHECK_OUT``, default ``results/gpu-check/``), rewritten after every rung so a run
   cut short keeps what it measured.

The ladder (each rung measured side by side on this device; the first epoch of each run left out):

- ``pipad``: the one-snapshot loop's transfer share (the paper's 38.7%), against frames with the side
  stream and pinned memory (its exposed transfer); epoch time of the PyG-T loop, sequential, -A and
  PiPAD on CollegeMsg (daily) and a churn store;
- ``blad``: group on 1 GPU x 2 processes (and again under MPS where the control daemon starts)
  against sequential on the same GPU; the measured operator-overlap share of BLAD-NM and BLAD
  (the paper's 15.5% -> 35.9%);
- ``esdg``: peak device memory and time per window against checkpoint blocks; graph-difference
  transfer time against full transfer;
- ``bgl``: level-1 cache in device memory: hit ratios and epoch time, no cache / static / FIFO with
  proximity order, on the sampled benchmark's smaller store;
- ``sven``: TGN on the events strategy, GPU against CPU, per phase;

and, throughout, the phase shares and the peak device memory of each run. A rung that cannot run on
the machine (MPS not startable, two GPUs needed) is a row saying why; a rung that fails is a row with
its error, and the ladder goes on.

``--device cpu --tiny --no-tests`` runs the same driver on tiny stores on the CPU (the test suite
does, to check that every rung writes its rows).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_OUT = "results/gpu-check"
RUNGS = ("pipad", "blad", "esdg", "bgl", "sven")
SYSTEMS = {"pipad": "PiPAD", "blad": "BLAD", "esdg": "ESDG", "bgl": "BGL", "sven": "Sven"}


class Skip(Exception):
    """A rung (or part of one) this machine cannot run; the message says why."""


@dataclass
class Check:
    """One gpu-check: where it writes, on what, and the rows so far."""

    out: Path
    device: str
    tiny: bool
    budget_s: float
    rows: list = field(default_factory=list)
    start: float = field(default_factory=time.monotonic)

    def row(self, system: str, rung: str, measure: str, value=None, unit: str = "", note: str = "",
            status: str = "measured") -> None:
        self.rows.append({"system": system, "rung": rung, "measure": measure,
                          "value": None if value is None else float(value), "unit": unit, "note": note,
                          "status": status})

    def skipped(self, system: str, rung: str, reason: str, status: str = "skipped") -> None:
        self.row(system, rung, "-", None, "", reason, status)

    def left_s(self) -> float:
        return self.budget_s - (time.monotonic() - self.start)

    def epochs(self, full: int) -> int:
        return 2 if self.tiny else full


# ---------------------------------------------------------------- the machine

def environment(device: str) -> dict:
    import torch

    env = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "device": device, "host": platform.node(), "cpus": os.cpu_count()}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1),
                   multiprocessors=props.multi_processor_count, gpus=torch.cuda.device_count())
        smi = shutil.which("nvidia-smi")
        if smi:
            res = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=30)
            env["driver"] = res.stdout.strip().splitlines()[0] if res.returncode == 0 and res.stdout.strip() else None
    return env


def run_tests(out: Path, jobs: int, timeout: float) -> dict:
    """The ``gpu``-marked tests in a subprocess: counts from its JUnit XML, failures by name."""
    import importlib.util

    missing = [m for m in ("pytest", "xdist", "pytest_timeout", "torch_geometric") if importlib.util.find_spec(m) is None]
    if missing:
        return {"returncode": "not run", "seconds": 0.0,
                "reason": f"not installed: {', '.join(missing)} (the test extra: pytest, pytest-xdist, pytest-timeout, "
                          "torch-geometric)"}
    xml, log = out / "gpu-tests.xml", out / "gpu-tests.log"
    cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "-n", str(jobs),
           "--tb=short", "--junitxml", str(xml), "-o", "addopts=-ra --strict-markers"]
    print("$ " + " ".join(cmd) + f"  (log: {log})", flush=True)
    t0 = time.monotonic()
    with open(log, "w") as f:
        try:
            code = subprocess.run(cmd, timeout=timeout, stdout=f, stderr=subprocess.STDOUT).returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
    print("\n".join(log.read_text(errors="replace").splitlines()[-40:]), flush=True)
    result = {"returncode": code, "seconds": round(time.monotonic() - t0, 1)}
    if xml.is_file():
        suites = ET.parse(xml).getroot()
        suite = suites if suites.tag == "testsuite" else suites[0]
        result.update({k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")})
        result["failed"] = [f"{c.get('classname')}::{c.get('name')}" for c in suite.iter("testcase")
                            if c.find("failure") is not None or c.find("error") is not None]
    return result


# ---------------------------------------------------------------- measuring one run

def _peak_reset(device: str) -> float:
    """Start a run's peak-memory window: what earlier runs left is collected first (the frame engine
    and its producer refer to each other, so only the cycle collector frees them); returns the MiB
    still allocated, which :func:`_peak_mib` subtracts."""
    if device != "cuda":
        return 0.0
    import gc

    import torch

    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return torch.cuda.memory_allocated() / 2**20


def _peak_mib(device: str, base: float = 0.0) -> float | None:
    """The run's peak device memory above what was allocated when its window started (None on CPU)."""
    if device != "cuda":
        return None
    import torch

    return torch.cuda.max_memory_allocated() / 2**20 - base


def _shares(phases: dict) -> str:
    total = sum(phases.values()) or 1.0
    top = sorted(phases.items(), key=lambda kv: -kv[1])[:4]
    return ", ".join(f"{k} {v / total:.0%}" for k, v in top)


def _phases_of(timings, first_epoch: int) -> dict:
    t = timings[timings["epoch"] >= first_epoch]
    return {k: float(v) for k, v in t.groupby("phase")["seconds"].sum().items()}


# ---------------------------------------------------------------- the rungs

def pipad(c: Check) -> None:
    import importlib.util

    if importlib.util.find_spec("torch_geometric") is None:
        raise Skip("torch_geometric is not installed: the PyG-T loop rung re-creates PyG Temporal with it")
    from .bench_frames import datasets, run_rung

    sets = datasets(True) if c.tiny else {k: v for k, v in datasets(False).items() if k in ("CollegeMsg daily",
                                                                                             "churn 10%")}
    epochs, window = c.epochs(3), 4 if c.tiny else 8
    for label, path in sets.items():
        res = {}
        for rung in ("pyg", "sequential", "-A", "PiPAD"):
            mem0 = _peak_reset(c.device)
            res[rung] = r = run_rung(path, "tgcn_x", rung, epochs, window, 1, c.device)
            c.row("PiPAD", f"{label}: {rung}", "epoch", r["epoch_s"], "s", _shares(r["phases"]))
            peak = _peak_mib(c.device, mem0)
            if peak is not None:
                c.row("PiPAD", f"{label}: {rung}", "peak device memory", peak, "MiB")
        for rung in ("sequential", "-A", "PiPAD"):
            c.row("PiPAD", f"{label}: {rung}", "speed-up over the PyG-T loop", res["pyg"]["epoch_s"] / res[rung]["epoch_s"],
                  "x")
        for rung in ("pyg", "sequential"):
            ph = res[rung]["phases"]
            c.row("PiPAD", f"{label}: {rung}", "transfer share of the one-snapshot loop",
                  ph.get("transfer", 0.0) / (sum(ph.values()) or 1.0), "share", "paper: 38.7% (PyG-T on GPU)")
        p = res["PiPAD"]
        exposed = p.get("transfer_exposed_s")
        if exposed is not None:
            c.row("PiPAD", f"{label}: PiPAD", "exposed transfer share", exposed / p["epoch_s"], "share",
                  f"hidden {p.get('transfer_hidden_s', 0.0):.3f} s; frame size {p.get('frame_size', float('nan')):.0f}")


def _mps_start(tmp: str) -> tuple[bool, str]:
    ctl = shutil.which("nvidia-cuda-mps-control")
    if ctl is None:
        return False, "nvidia-cuda-mps-control is not on PATH"
    env = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": f"{tmp}/pipe", "CUDA_MPS_LOG_DIRECTORY": f"{tmp}/log"}
    for folder in (env["CUDA_MPS_PIPE_DIRECTORY"], env["CUDA_MPS_LOG_DIRECTORY"]):
        os.makedirs(folder)
    res = subprocess.run([ctl, "-d"], env=env, capture_output=True, text=True, timeout=30)
    if res.returncode != 0:
        return False, f"nvidia-cuda-mps-control -d failed: {(res.stderr or res.stdout).strip()[:200]}"
    return True, ""


def _mps_stop(tmp: str) -> None:
    env = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": f"{tmp}/pipe"}
    subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", env=env, text=True, timeout=30, capture_output=True)


def blad_mps_child(path: str, plan: str, epochs: int, batch: int) -> None:
    """The group run under MPS, in its own process (its CUDA context made after the daemon started)."""
    from .bench_group import _figures, _run

    f = _figures(*_run(path, "group", 1, 1, epochs, batch, plan, device="cuda"))
    print(json.dumps({"epoch_s": f["epoch_s"], "overlap_share": f["overlap_share"]}))


def blad(c: Check) -> None:
    from dynagnn.data.store import open_store
    from dynagnn.tasks.snapshot import training_ends

    from . import bench_group as G
    from .common import bench_dir, blad_store

    path = blad_store("blad_tiny", 200, 800, 10) if c.tiny else G.blad_group_store("blad_group")
    B = len(training_ends(open_store(path), G.WINDOW))
    plan = bench_dir() / f"gpu-check-plan-{c.device}-{Path(path).stem}.json"
    G._plan(path, G._predictor(path, c.device), 1, plan)
    epochs = G.WARMUP + (1 if c.tiny else 3)
    runs = {"sequential 1x1": ("sequential", None), "blad_nm 1x2": ("blad_nm", plan), "group 1x2": ("group", plan)}
    res = {}
    for name, (strategy, p) in runs.items():
        res[name] = f = G._figures(*G._run(path, strategy, 1, None if strategy == "sequential" else 1, epochs, B, p,
                                           device=c.device))
        c.row("BLAD", name, "epoch", f["epoch_s"], "s", _shares(f["phases"]))
    c.row("BLAD", "group 1x2", "speed-up over sequential on the same device",
          res["sequential 1x1"]["epoch_s"] / res["group 1x2"]["epoch_s"], "x", "two processes share one device")
    for name in ("blad_nm 1x2", "group 1x2"):
        c.row("BLAD", name, "operator overlap share", res[name]["overlap_share"], "share", "paper: 15.5% -> 35.9%")
    if c.device != "cuda":
        c.skipped("BLAD", "group 1x2 under MPS", "needs a GPU (MPS shares one between processes)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        ok, why = _mps_start(tmp)
        if not ok:
            c.skipped("BLAD", "group 1x2 under MPS", why)
            return
        try:
            env = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": f"{tmp}/pipe"}
            code = f"from benchmarks.gpu_check import blad_mps_child; blad_mps_child({str(path)!r}, {str(plan)!r}, " \
                   f"{epochs}, {B})"
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                 timeout=max(60.0, min(240.0, c.left_s())))
            if out.returncode != 0:
                c.skipped("BLAD", "group 1x2 under MPS", "the run failed under MPS: " +
                          (out.stderr.strip().splitlines() or ["?"])[-1][:200], "failed")
                return
            m = json.loads(out.stdout.strip().splitlines()[-1])
            c.row("BLAD", "group 1x2 under MPS", "epoch", m["epoch_s"], "s")
            c.row("BLAD", "group 1x2 under MPS", "speed-up over group without MPS",
                  res["group 1x2"]["epoch_s"] / m["epoch_s"], "x")
            c.row("BLAD", "group 1x2 under MPS", "operator overlap share", m["overlap_share"], "share")
        finally:
            _mps_stop(tmp)


def esdg(c: Check) -> None:
    from .bench_train import collegemsg_store, synthetic_store, transfer

    path = synthetic_store(2000 if c.tiny else 200_000, 20)
    window = 8 if c.tiny else 16
    rows = {}
    for nb in (1, 2, 4) if c.tiny else (1, 2, 4, 8):
        code = f"from benchmarks.bench_train import checkpoint_child; checkpoint_child({str(path)!r}, {nb}, {window}, " \
               f"{c.device!r})"
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
        rows[nb] = r = json.loads(res.stdout.strip().splitlines()[-1])
        what = "peak device memory above start" if c.device == "cuda" else "peak RSS above start"
        c.row("ESDG", f"checkpoint blocks nb={nb}", what, r["peak_above_start"] / 2**20, "MiB",
              f"{r['seconds']:.3f} s per window, {r['transfers']} snapshot transfers")
    best = min(rows.values(), key=lambda r: r["peak_above_start"])
    c.row("ESDG", f"checkpoint blocks nb={best['nb']}", "peak memory of nb=1 over this",
          rows[1]["peak_above_start"] / max(best["peak_above_start"], 1), "x",
          f"time {best['seconds'] / rows[1]['seconds']:.2f}x of nb=1")
    paths = {"CollegeMsg weekly": collegemsg_store(1)} if c.tiny else \
        {"CollegeMsg weekly": collegemsg_store(1), "churn 10%, 200,000": path}
    for r in transfer(paths, repeats=2 if c.tiny else 5, device=c.device):
        c.row("ESDG", f"{r['data']}: transfer", "full / difference time", r["full_s"] / r["diff_s"], "x",
              f"full {r['full_s'] * 1e3:.2f} ms, diff {r['diff_s'] * 1e3:.2f} ms; bytes "
              f"{r['full_bytes'] / max(r['diff_bytes'], 1):.2f}x fewer")


def bgl(c: Check) -> None:
    from dynagnn.data.store import open_store
    from dynagnn.train.engine import TrainConfig, Trainer

    from .bench_sampled import _store

    store = open_store(_store(True, "communities"))
    n, f = store.num_nodes, store.feature_dim()
    level_mb = 0.10 * n * 4 * f / 2**20
    base = dict(model="graphsage", hidden=64, fanouts=[5, 5], batch_size=128, epochs=c.epochs(3), warmup_epochs=0,
                patience=10, threads=1, samplers=1, queue_depth=4, cache_l1_mb=level_mb, cache_l2_mb=3 * level_mb,
                device=c.device, seed_fractions=[0.02, 0.01, 0.01] if c.tiny else [0.05, 0.01, 0.01])
    res = {}
    for label, strategy in (("no cache", "sampled_nocache"), ("static cache", "sampled_static"),
                            ("FIFO + proximity (BGL)", "sampled")):
        mem0 = _peak_reset(c.device)
        tr = Trainer(store, TrainConfig.of(strategy=strategy, **base), progress=False)
        try:
            metrics, timings = tr.fit()
        finally:
            tr.strategy.pipeline.close()
        last = metrics.iloc[-1]
        res[label] = float(last["train_seconds"])
        c.row("BGL", label, "epoch", last["train_seconds"], "s",
              f"L1 hit {last['l1_hit_ratio']:.3f}, L2 hit {last['l2_hit_ratio']:.3f}; "
              + _shares(_phases_of(timings, int(last["epoch"]))))
        if label != "no cache":
            c.row("BGL", label, "level-1 hit ratio", last["l1_hit_ratio"], "ratio",
                  f"level 1 on {c.device}: {level_mb:.1f} MiB")
        peak = _peak_mib(c.device, mem0)
        if peak is not None:
            c.row("BGL", label, "peak device memory", peak, "MiB")
    for label in ("static cache", "FIFO + proximity (BGL)"):
        c.row("BGL", label, "speed-up over no cache", res["no cache"] / res[label], "x")


def sven(c: Check) -> None:
    import torch

    from dynagnn.train.engine import TrainConfig, Trainer

    from .bench_tgnn_models import collegemsg_events, smoke_store

    path = smoke_store() if c.tiny else collegemsg_events()
    epochs = c.epochs(3)
    devices = ["cpu", c.device] if c.device != "cpu" else ["cpu"]
    res = {}
    for dev in devices:
        threads = min(8, os.cpu_count() or 1) if dev == "cpu" else 1
        mem0 = _peak_reset(dev)
        cfg = TrainConfig.of(model="tgn", strategy="events", epochs=epochs, patience=epochs, warmup_epochs=1,
                             event_batch=200, threads=threads, device=dev)
        metrics, timings = Trainer(path, cfg, progress=False).fit()
        after = metrics[metrics["epoch"] >= 1]
        res[dev] = epoch = statistics.median(after["train_seconds"])
        phases = _phases_of(timings, 1)
        c.row("Sven", f"TGN events on {dev}", "epoch", epoch, "s",
              f"{threads} thread(s); " + _shares(phases))
        peak = _peak_mib(dev, mem0)
        if peak is not None:
            c.row("Sven", f"TGN events on {dev}", "peak device memory", peak, "MiB")
    if len(devices) == 2:
        c.row("Sven", "TGN events", "GPU over CPU", res["cpu"] / res[c.device], "x",
              f"CPU with {min(8, os.cpu_count() or 1)} threads")
    if torch.cuda.device_count() < 2:
        c.skipped("Sven", "tgnn over nccl, 2 GPUs", f"{torch.cuda.device_count()} GPU(s): nccl needs one per worker")


LADDER = {"pipad": pipad, "blad": blad, "esdg": esdg, "bgl": bgl, "sven": sven}


# ---------------------------------------------------------------- writing

def markdown(report: dict) -> str:
    env = report["environment"]
    lines = [f"# gpu-check: {env.get('gpu', env['device'])}", "",
             f"torch {env['torch']}, CUDA {env.get('cuda')}, driver {env.get('driver', '-')}, "
             f"Python {env['python']}, {env['cpus']} CPUs", ""]
    t = report.get("tests")
    if t and "reason" in t:
        lines += [f"gpu tests: not run ({t['reason']})", ""]
    elif t:
        lines += [f"gpu tests: {t.get('tests', '?')} run, {t.get('failures', '?')} failed, {t.get('errors', '?')} errors, "
                  f"{t.get('skipped', '?')} skipped in {t['seconds']} s (exit {t['returncode']})", ""]
        lines += [f"- failed: `{name}`" for name in t.get("failed", [])]
        lines.append("")
    # A record merged from several runs on one machine (docs/gpu-check/) names each row's run.
    runs = any("run" in r for r in report["rows"])
    lines += ["| system | rung | measure | value | note |" + (" run |" if runs else ""),
              "|---|---|---|---|---|" + ("---|" if runs else "")]
    for r in report["rows"]:
        if r["value"] is None:
            value = r["status"]
        elif r["unit"] == "share":
            value = f"{r['value']:.1%}"
        elif r["unit"] == "x":
            value = f"{r['value']:.2f}x"
        else:
            value = f"{r['value']:.4g} {r['unit']}".strip()
        note = r["note"].replace("|", "/").replace("\n", " ")
        lines.append(f"| {r['system']} | {r['rung']} | {r['measure']} | {value} | {note} |"
                     + (f" {r.get('run', '-')} |" if runs else ""))
    if report.get("note"):
        lines += ["", report["note"]]
    return "\n".join(lines) + "\n"


def write(out: Path, report: dict) -> None:
    from dynagnn.atomic import write_text

    write_text(out / "gpu-check.json", json.dumps(report, indent=1))
    write_text(out / "gpu-check.md", markdown(report))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.gpu_check", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("GPU_CHECK_OUT", DEFAULT_OUT),
                    help=f"folder for gpu-check.json and gpu-check.md (GPU_CHECK_OUT; default {DEFAULT_OUT})")
    ap.add_argument("--device", choices=("cuda", "cpu"), default=None,
                    help="cuda (the default where one is present) or cpu (a dry run of the driver)")
    ap.add_argument("--tiny", action="store_true", help="tiny stores and 2 epochs (seconds; the driver's own test)")
    ap.add_argument("--no-tests", dest="tests", action="store_false", help="skip the gpu-marked tests")
    ap.add_argument("--test-jobs", type=int, default=4, help="pytest-xdist processes for the gpu tests (default 4)")
    ap.add_argument("--rungs", default=",".join(RUNGS),
                    help=f"comma-separated rungs, run in the order given (default {','.join(RUNGS)})")
    ap.add_argument("--budget", type=float, default=540.0,
                    help="seconds for the whole check; a rung that would start after it is a row saying so")
    args = ap.parse_args(argv)

    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else None)
    if device is None:
        print("gpu-check: this torch sees no CUDA device; pass --device cpu for a dry run of the driver",
              file=sys.stderr)
        return 2
    if device == "cuda" and not torch.cuda.is_available():
        print("gpu-check: --device cuda, but this torch sees no CUDA device", file=sys.stderr)
        return 2
    rungs = [r.strip() for r in args.rungs.split(",") if r.strip()]
    unknown = sorted(set(rungs) - set(LADDER))
    if unknown:
        print(f"gpu-check: --rungs: unknown {unknown}; choose from {', '.join(RUNGS)}", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    c = Check(out, device, args.tiny, args.budget)
    report = {"version": 1, "environment": environment(device), "tiny": args.tiny, "rows": c.rows}
    print("gpu-check: " + ", ".join(f"{k} {v}" for k, v in report["environment"].items()), flush=True)
    if args.tests:
        report["tests"] = run_tests(out, args.test_jobs, timeout=max(60.0, c.left_s() / 2))
        print(f"gpu-check: tests {report['tests']}", flush=True)
    write(out, report)
    for name in rungs:
        if c.left_s() <= 0:
            c.skipped(SYSTEMS[name], name, f"the check's budget of {args.budget:.0f} s ran out before this rung")
            write(out, report)
            continue
        t0 = time.monotonic()
        print(f"gpu-check: rung {name}", flush=True)
        try:
            LADDER[name](c)
        except Skip as why:
            c.skipped(SYSTEMS[name], name, str(why))
        except Exception as exc:  # one rung's failure is a row; the ladder goes on
            traceback.print_exc()
            c.skipped(SYSTEMS[name], name, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}",
                      "failed")
        report.setdefault("rung_seconds", {})[name] = round(time.monotonic() - t0, 1)
        write(out, report)
    print(markdown(report))
    print(f"gpu-check: wrote {out / 'gpu-check.json'} and {out / 'gpu-check.md'}")
    failed = [r for r in c.rows if r["status"] == "failed"]
    tests_failed = bool(report.get("tests")) and report["tests"].get("returncode") not in (0, 5, "not run")
    return 1 if failed or tests_failed else 0


if __name__ == "__main__":
    sys.exit(main())
