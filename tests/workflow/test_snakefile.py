"""The Snakefile end to end on a tiny config in a temporary directory, as a user runs it."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from dynagnn.analysis.commvolume import volume_table
from dynagnn.analysis.stats import compute_stats
from dynagnn.data.store import open_store
from dynagnn.train.engine import TrainConfig, train

from tests.testing.limits import PROCESS_HANG_S
from tests.testing.workflow import (BGL, ROOT, SAMPLED_RUN, SAMPLED_STRATEGIES, TINY, TRAIN_RUNS, jobs, snakemake,
                                    workdir)

pytestmark = pytest.mark.workflow
# the tests that read the session's one Snakemake run go to one worker together (`make test`'s
# --dist loadgroup), so that it runs once
SHARED = pytest.mark.xdist_group("tiny_run")


@SHARED
def test_stores_stats_and_analyses_are_the_librarys(tiny_run):
    wd = tiny_run
    for name in TINY:
        store = open_store(wd / "results" / name / "store.zarr")
        df = pd.read_parquet(wd / "results" / name / "stats.parquet")
        pd.testing.assert_frame_equal(df, compute_stats(store.path, None, progress=False))
        assert (wd / "results" / name / "stats.png").exists()
        assert (wd / "results" / "logs" / "ingest" / f"{name}.log").exists()
        assert (wd / "results" / "benchmarks" / "ingest" / f"{name}.tsv").exists()
    assert open_store(wd / "results" / "as" / "store.zarr").times.tolist() == [19971108, 19971109, 19971110]
    for name in TINY:
        analysis = wd / "results" / name / "analysis"
        for fig in ("overlap", "formats", "partitions", "cache", "volume"):
            assert (analysis / f"{fig}.png").exists()
        store = open_store(wd / "results" / name / "store.zarr")
        vol = pd.read_parquet(analysis / "volume.parquet")
        pd.testing.assert_frame_equal(vol, volume_table(store.path, None, [2], layers=2, hidden=8, window=2,
                                                        batch_size=4, neighbors=2, memory_dim=6))
        meta = pq.read_schema(analysis / "volume.parquet").metadata
        assert meta[b"dynagnn.store_checksum"].decode() == store.checksum
        assert set(vol["scheme"]) >= {"vertex", "snapshot", "group"}
        assert ("sven" in set(vol["scheme"])) == (name == "toy")  # Sven needs an event stream
        formats = pd.read_parquet(analysis / "formats.parquet")
        assert sorted(formats["edge_life"].unique()) == [1, 2]
        assert (analysis / "redundancy.parquet").exists() == (name == "toy")  # only event streams
    red = pd.read_parquet(wd / "results" / "toy" / "analysis" / "redundancy.parquet")
    assert red["batch_size"].tolist() == [2, 4] and red["mean_eta1"].between(0, 1).all()


@SHARED
def test_training_outputs_are_the_librarys(tiny_run, tmp_path):
    """The rule's outputs are what the library's train() gives for the same options."""
    wd = tiny_run
    for model in TRAIN_RUNS[0]["models"]:
        out = wd / "results" / "synth" / model / "sequential-1"
        got = pd.read_parquet(out / "metrics.parquet")
        cfg = TrainConfig.of(model=model, hidden=4, window=2, epochs=2, lr=0.02, threads=1)
        want, _ = train(wd / "results" / "synth" / "store.zarr", tmp_path / "lib" / model, cfg, progress=False)
        cols = [c for c in want.columns if c != "train_seconds"]
        pd.testing.assert_frame_equal(got[cols], want[cols], rtol=1e-5, atol=1e-6)
        assert (out / "training.png").exists() and (out / "model.pt").exists()
        assert set(pd.read_parquet(out / "timings.parquet")["phase"]) >= {"graph_op", "backward", "load"}
        assert (wd / "results" / "logs" / "train" / "synth" / model / "sequential-1.log").exists()
    # Two worker processes: the same losses as one, every worker's timings, bytes per collective.
    out = wd / "results" / "synth" / "wdgcn" / "vertex-2"
    got = pd.read_parquet(out / "metrics.parquet")
    cfg = TrainConfig.of(model="wdgcn", hidden=4, window=2, epochs=2, lr=0.02, threads=1)
    want, _ = train(wd / "results" / "synth" / "store.zarr", tmp_path / "lib" / "wdgcn", cfg, progress=False)
    np.testing.assert_allclose(got["loss"], want["loss"], rtol=1e-4)
    assert sorted(pd.read_parquet(out / "timings.parquet")["worker"].unique()) == [0, 1]
    comm = pd.read_parquet(out / "comm.parquet")
    assert {"halo", "halo.backward", "gather", "grad_all_reduce"} <= set(comm["collective"])


@SHARED
def test_seed_runs_and_their_summary(tiny_run, tmp_path):
    """Each seed's job is the library's run of that seed; the summary is the seeds' mean and std."""
    wd = tiny_run
    for model, strategy, extra in (("tgcn", "frames", {"frame_size": 2, "report_negative_kinds": ["historical"]}),
                                   ("edgebank", "sequential", {})):
        folder = wd / "results" / "synth" / model / f"{strategy}-1"
        cfg = TrainConfig.of(model=model, strategy=strategy, hidden=4, window=2, epochs=2, lr=0.02, threads=1, seed=1,
                             **extra)
        want, _ = train(wd / "results" / "synth" / "store.zarr", tmp_path / "lib" / f"{model}-seed", cfg, progress=False)
        got = pd.read_parquet(folder / "seed-1" / "metrics.parquet")
        cols = [c for c in want.columns if c.startswith(("val_", "test_"))]
        pd.testing.assert_frame_equal(got[cols], want[cols], rtol=1e-5, atol=1e-6)
        per_seed = pd.read_parquet(folder / "seeds.parquet")
        summary = pd.read_parquet(folder / "summary.parquet").set_index("metric")
        assert per_seed["seed"].tolist() == [0, 1] and (summary["n"] == 2).all()
        for col in ("test_auc", "test_ap") + (("test_historical_auc",) if model == "tgcn" else ()):
            best = [pd.read_parquet(folder / f"seed-{k}" / "metrics.parquet").query("best")[col].iloc[0] for k in (0, 1)]
            assert summary.loc[col, "mean"] == pytest.approx(np.mean(best)) and summary.loc[col, "std"] == pytest.approx(np.std(best))
        assert not (folder / "metrics.parquet").exists() and (folder / "seed-0" / "training.png").exists()


@SHARED
def test_profile_and_schedule(tiny_run):
    """The predictor of the quick grid, and per trained (dataset, model) a plan whose predicted loads are
    build_plan's on the predictor's per-snapshot predictions."""
    wd = tiny_run
    from dynagnn.cost.models import model_calls
    from dynagnn.cost.predictor import Predictor
    from dynagnn.schedule import SchedulePlan, build_plan
    from dynagnn.tasks.snapshot import training_ends

    cost = wd / "results" / "cost" / "cpu"
    predictor = Predictor.load(cost / "predictor.json")
    assert {op for op, _ in predictor.models} == {"graph_op", "nn_op", "evolve", "elementwise", "sigmoid", "tanh",
                                                     "lstm"}  # tgcn's, evolvegcn_o's and wdgcn's
    assert all(m.mape == m.mape for m in predictor.models.values())  # held-out mape recorded
    assert len(pd.read_parquet(cost / "profile.parquet")) > 0 and (cost / "predicted_vs_measured.png").exists()
    synth = open_store(wd / "results" / "synth" / "store.zarr")
    for model in TRAIN_RUNS[0]["models"]:
        plan = SchedulePlan.load(wd / "results" / "synth" / model / "plan-2.json", dataset="synth", model=model,
                                 store_checksum=synth.checksum)
        fwd, bwd = predictor.predict({"edges": np.diff(synth.offsets)}, model_calls(model, 32, 4),
                                     num_nodes=synth.num_nodes)
        ends = training_ends(synth, 2)  # the schedule plans the runs' training windows
        tail = {int(g): s for g, s in plan.meta["group_tail_s"].items()}
        want = build_plan(fwd, bwd, group_len=2, num_workers=2, dataset="synth", model=model, groups=ends,
                          tail=tail)
        np.testing.assert_allclose(plan.groups.loads, want.groups.loads)
        assert plan.groups.workers == want.groups.workers and plan.tuner is not None
        assert (wd / "results" / "synth" / model / "plan-2.png").exists()
    assert not (wd / "results" / "toy" / "tgcn").exists()  # only the trained pairs are planned


@SHARED
def test_report_claims_and_nothing_left_to_do(tiny_run):
    """One runtimes row per benchmark file (every job), their seconds as Snakemake wrote them; the HTML
    report holds every figure with its caption; the claims table is this run's; a second run has
    nothing to do."""
    wd = tiny_run
    times = pd.read_parquet(wd / "results" / "report" / "runtimes.parquet")
    bench = sorted((wd / "results" / "benchmarks").rglob("*.tsv"))
    assert len(times) == len(bench) and (wd / "results" / "report" / "runtimes.png").exists()
    ingest = pd.read_csv(wd / "results" / "benchmarks" / "ingest" / "toy.tsv", sep="\t")
    assert times.set_index(["rule", "job"]).loc[("ingest", "toy"), "seconds"] == pytest.approx(ingest["s"].median())
    html = snakemake(wd, "--report", "report.html")
    assert html.returncode == 0, html.stderr[-3000:]
    page = (wd / "report.html").read_text(errors="replace")
    assert "runtimes.png" in page and "dynagnn: efficient training of dynamic graph neural networks" in page
    from dynagnn.report.claims import claim_tables, claims_table

    results = wd / "results"
    claims = pd.read_parquet(results / "report" / "claims.parquet")
    pd.testing.assert_frame_equal(claims, claims_table(claim_tables(sorted(results.rglob("*.parquet")), results),
                                                       results))
    assert (claims["status"] == "not run").any() and (claims["status"] == "measured").any()
    assert "claims.html" in page and (results / "benchmarks" / "claims" / "claims.tsv").exists()
    again = snakemake(wd, "--dry-run")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr


def test_workflow_config_typo_and_bad_input(tmp_path):
    wd = workdir(tmp_path, {"toy": {**TINY["toy"], "edge_lief": 2}})
    run = snakemake(wd)
    assert run.returncode != 0 and "did you mean 'edge_life'" in run.stdout + run.stderr

    (wd / "data" / "broken.txt").write_text("1 2 10\n3 4\n")
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    cfg["datasets"] = {"broken": {**TINY["toy"], "path": "data/broken.txt"}}
    cfg["train"]["runs"] = [{"dataset": "brokn", "models": ["tgcn"]}]
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg))
    run = snakemake(wd)  # a run on a dataset the config lacks
    assert run.returncode != 0 and "no dataset 'brokn' (did you mean 'broken'?)" in run.stdout + run.stderr
    cfg["datasets"]["synth"] = TINY["synth"]
    for runs, message in (([{"dataset": "synth", "models": ["tgn"], "strategies": ["events"]}],
                           "train run synth/tgn: tgn trains on an event stream; dataset synth (format synthetic) has none"),
                          ([{"dataset": "broken", "models": ["jodie"], "strategies": ["sequential"]}],
                           "train run broken/jodie: jodie is an event model; train it with strategy events or a tgnn strategy, not sequential")):
        cfg["train"]["runs"] = runs
        (wd / "config.yaml").write_text(yaml.safe_dump(cfg))
        run = snakemake(wd, "-n")  # told when the config is read
        assert run.returncode != 0 and message in run.stdout + run.stderr
    del cfg["datasets"]["synth"]
    cfg["train"]["runs"] = []
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg))
    run = snakemake(wd)
    assert run.returncode != 0
    log = (wd / "results" / "logs" / "ingest" / "broken.log").read_text()
    assert "broken.txt, line 2: expected" in log
    assert not (wd / "results" / "broken" / "store.zarr").exists()
    assert not list((wd / "results" / "broken").glob(".*"))


def test_lint_passes():
    exe = Path(sys.executable).with_name("snakemake")
    run = subprocess.run([str(exe), "--lint"], cwd=ROOT, capture_output=True, text=True, timeout=PROCESS_HANG_S)
    assert run.returncode == 0 and "Congratulations" in run.stdout + run.stderr, run.stdout + run.stderr


def test_slurm_profile_dry_run(tmp_path):
    """`snakemake --executor slurm -n` on the SLURM profile (2 machines per training job, CUDA, a Dask
    scheduler): each training job is one srun task per machine running torchrun over its workers'
    processes, with nodes, tasks, cores per task and a GPU per worker as resources; the Dask stages
    go to the scheduler."""
    wd = workdir(tmp_path, {"synth": TINY["synth"]})
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    cfg["train"]["device"] = "cuda"
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg))
    launch = wd / "workflow/profiles/slurm/launch.yaml"
    text = launch.read_text().replace("nodes: 1 ", "nodes: 2 ")
    launch.write_text(text.replace("scheduler_address: null", "scheduler_address: tcp://10.1.2.3:8786"))
    r = snakemake(wd, "--executor", "slurm", "-n", "--workflow-profile", "workflow/profiles/slurm")
    assert r.returncode == 0, r.stderr[-3000:]
    planned = jobs(r.stdout + r.stderr)
    train = {(j["wildcards"]["model"], j["wildcards"]["strategy"], j["wildcards"]["workers"]): j
             for j in planned if j["rule"] == "train"}
    assert set(train) == {("tgcn", "sequential", "1"), ("evolvegcn_o", "sequential", "1"), ("wdgcn", "vertex", "2")}
    for (model, strategy, workers), job in train.items():
        nodes = min(2, int(workers))
        res = job["resources"]
        assert (res["nodes"], res["tasks"], res["cpus_per_task"], res["gpu"]) == (str(nodes), str(nodes), "1", workers)
        assert job["shell"].startswith(f"srun --nodes {nodes} --ntasks-per-node 1 torchrun --nnodes {nodes} "
                                       f"--nproc-per-node {int(workers) // nodes} --rdzv-backend c10d ")
        assert f"-m dynagnn train results/synth/store.zarr --out-dir results/synth/{model}/{strategy}-{workers} " \
               in job["shell"]
        assert res["slurm_account"] == "your_account" and res["runtime"] == "240"
    dask_rules = {"stats", "reuse", "redundancy", "partitions", "cache", "volume"}  # the analyze stage's Dask jobs
    dask_jobs = [j for j in planned if j["rule"] in dask_rules]
    assert {j["rule"] for j in dask_jobs} == dask_rules - {"redundancy"}  # synth has no event stream
    assert all("--scheduler tcp://10.1.2.3:8786" in j["shell"] for j in dask_jobs)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dask_cluster_recipe(tmp_path):
    """The README's recipe: `dask scheduler` and `dask worker` on this machine, the workflow's
    analyze stage sent to them by `dask.scheduler_address`; its table equals the library's, and its
    tasks ran on that scheduler."""
    from dask.distributed import Client

    wd = workdir(tmp_path, {"synth": TINY["synth"]})
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    address = f"tcp://127.0.0.1:{_free_port()}"
    cfg["dask"]["scheduler_address"] = address
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg))
    bindir = Path(sys.executable).parent
    procs = [subprocess.Popen([str(bindir / "dask"), "scheduler", "--host", "127.0.0.1", "--port",
                               address.rsplit(":", 1)[1], "--no-dashboard"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    try:
        procs.append(subprocess.Popen([str(bindir / "dask"), "worker", address, "--nworkers", "1", "--nthreads", "1",
                                       "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with Client(address, timeout=60) as client:
            client.wait_for_workers(1, timeout=60)
            r = snakemake(wd, "results/synth/stats.parquet")
            assert r.returncode == 0, r.stderr[-3000:]
            prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
        assert prefixes  # the stage's tasks ran here
        log = (wd / "results/logs/stats/synth.log").read_text()
        assert f"connecting to the Dask scheduler at {address}" in log
        store = open_store(wd / "results/synth/store.zarr")
        pd.testing.assert_frame_equal(pd.read_parquet(wd / "results/synth/stats.parquet"),
                                      compute_stats(store.path, None, progress=False))
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=30)


def test_sampled_figure_rule(tmp_path):
    """BGL's figure: a sampled run brings its figure among the default outputs, and the rule's table is
    compare-sampled's over the sampled runs trained on that (dataset, model, workers). Its own run: the
    static graph fits none of the tiny config's analyses (tests/testing/workflow.py)."""
    from dynagnn.report.sampled import sampled_table

    wd = workdir(tmp_path, {"bgl": BGL}, [SAMPLED_RUN])
    target = "results/bgl/graphsage/sampled-1.png"
    dry = snakemake(wd, "-n")
    assert dry.returncode == 0 and target in dry.stdout + dry.stderr, dry.stderr[-3000:]
    run = snakemake(wd, target)
    assert run.returncode == 0, run.stderr[-3000:]
    base = wd / "results" / "bgl" / "graphsage"
    want = sampled_table({s: pd.read_parquet(base / f"{s}-1" / "metrics.parquet") for s in SAMPLED_STRATEGIES})
    pd.testing.assert_frame_equal(pd.read_parquet(base / "sampled-1.parquet"), want)
    assert (base / "sampled-1.pdf").exists() and want["l1_hit_ratio"].iloc[1] == 0.0   # no cache: no hits


@SHARED
def test_auto_run_and_its_compare_figure(tiny_run, tmp_path):
    """An auto run (issue 30) beside a run of 2 threads: rule train_auto's job holds those 2 cores (slot
    1t2) and gives them to auto as its option cores, declares auto.json, and the run's pick is drawn in the compare figure of those cores
    beside the runs there, whose job reads its auto.json; under the SLURM profile's torchrun it stays one
    plain process on one machine (auto refuses torchrun: its trials start their own processes); and the
    workflow makes them."""
    from dynagnn.report.strategies import strategy_table

    wd = tiny_run
    dry = snakemake(wd, "-n", "-p", "--forceall")   # every job of the finished run, as it was planned
    assert dry.returncode == 0, dry.stderr[-3000:]
    text = dry.stdout + dry.stderr
    planned = jobs(text)
    (auto,) = [j for j in planned if j["rule"] == "train_auto"]
    assert auto["wildcards"] == {"dataset": "synth", "model": "tgcn", "strategy": "auto", "workers": "1t2"}
    assert auto["resources"]["cpus_per_task"] == "2" and '"cores": 2' in auto["shell"]
    # auto chooses its workers and threads: the job names its cores only (the library refuses the others)
    assert "--workers" not in auto["shell"] and "--threads" not in auto["shell"] and '"threads"' not in auto["shell"]
    assert auto["shell"].startswith("python -m dynagnn train results/synth/store.zarr --out-dir results/synth/tgcn/auto-1t2 ")
    assert "results/synth/tgcn/auto-1t2/auto.json" in auto["shell"]            # declared: echoed as made
    assert [(j["wildcards"]["strategy"], j["wildcards"]["workers"]) for j in planned if j["rule"] == "train"
            and j["wildcards"]["model"] == "tgcn" and j["wildcards"]["workers"] == "1t2"] == [("sequential", "1t2")]
    (compare,) = [j for j in planned if j["rule"] == "compare"]
    assert compare["wildcards"]["cores"] == "2"
    assert ("compare sequential=results/synth/tgcn/sequential-1t2 auto=results/synth/tgcn/auto-1t2 --out "
            "results/synth/tgcn/compare-2.parquet") in compare["shell"]
    block = next(b for b in text.split("\nrule ")[1:] if b.startswith("compare:"))
    assert "results/synth/tgcn/auto-1t2/auto.json" in block.split("output:")[0]

    # the SLURM profile over 2 machines with torchrun (a copy of the profile: the run's folder is shared):
    # the auto job is one machine, no torchrun
    profile = tmp_path / "slurm"
    shutil.copytree(wd / "workflow" / "profiles" / "slurm", profile)
    launch = profile / "launch.yaml"
    launch.write_text(launch.read_text().replace("nodes: 1 ", "nodes: 2 "))
    conf = profile / "config.yaml"
    conf.write_text(conf.read_text().replace("configfiles: [workflow/profiles/slurm/launch.yaml]",
                                             f"configfiles: [{launch}]"))
    slurm = snakemake(wd, "--executor", "slurm", "-n", "--forceall", "--workflow-profile", str(profile))
    assert slurm.returncode == 0, slurm.stderr[-3000:]
    (auto,) = [j for j in jobs(slurm.stdout + slurm.stderr) if j["rule"] == "train_auto"]
    assert (auto["resources"]["nodes"], auto["resources"]["cpus_per_task"]) == ("1", "2")
    assert auto["shell"].startswith("python -m dynagnn train ")

    base = wd / "results" / "synth" / "tgcn"
    report = json.loads((base / "auto-1t2" / "auto.json").read_text())
    assert report["cores"] == 2 and sum(c["chosen"] for c in report["candidates"]) == 1
    table = pd.read_parquet(base / "compare-2.parquet")
    assert table["strategy"].tolist() == ["sequential", "auto"]
    assert table["auto_choice"].tolist() == ["", report["chosen"]]
    runs = {s: tuple(pd.read_parquet(base / f"{s}-1t2" / f) for f in ("metrics.parquet", "timings.parquet"))
            for s in ("sequential", "auto")}
    want = strategy_table(None, runs)
    pd.testing.assert_frame_equal(table.drop(columns="auto_trial_s"), want.drop(columns="auto_trial_s"))
    assert (base / "compare-2.pdf").exists()
