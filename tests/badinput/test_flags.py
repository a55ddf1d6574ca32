"""Bad flags and config keys, every stage: one line, exit 2, nothing written (issue 18, items 3-5).

A flag that stands for a config key is refused by that key's schema, as config.yaml would be, and the
error names the flag; argparse's own errors are one line too; output paths are checked before
anything is written; names of models and strategies are checked against the registries.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from tests.badinput.common import assert_refused
from tests.testing.stores import small_store
from tests.testing.limits import PROCESS_HANG_S

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, str]:
    """Two tiny stores built once (8 snapshots, 40 vertices, no event stream): one for link
    prediction, one with real-valued targets per snapshot and vertex."""
    root = tmp_path_factory.mktemp("stores")
    return {"link": str(small_store(root / "link.zarr")),
            "regress": str(small_store(root / "regress.zarr", labels="regress"))}


def _closed_port() -> int:
    """A local port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _config(tmp: Path, text: str, dataset: str = "") -> str:
    """A config of one dataset entry (with ``dataset``'s keys added) and then ``text``."""
    path = tmp / "config.yaml"
    path.write_text(f"datasets:\n  a: {{{dataset}format: snap-edgelist, path: x.txt, snapshots: {{by: count, size: 10}}}}\n"
                    + text)
    return str(path)


def train(*flags):
    return lambda tmp, s: ["train", s["link"], "--out-dir", str(tmp / "out"), *flags]


def analyze(*flags):
    return lambda tmp, s: ["analyze", s["link"], "--out-dir", str(tmp / "out"), "--threads-only", *flags]


def stats(*flags, out="stats.parquet"):
    return lambda tmp, s: ["stats", s["link"], "--out", str(tmp / out), "--threads-only", *flags]


def schedule(*flags, out="plan.json"):
    return lambda tmp, s: ["schedule", s["link"], "--predictor", str(tmp / "predictor.json"), "--model", "tgcn",
                           "--workers", "2", "--out", str(tmp / out), *flags]


def profile(*flags):
    return lambda tmp, s: ["profile", "--out-dir", str(tmp / "cost"), "--grid", "quick", *flags]


def check_config(text, dataset=""):
    return lambda tmp, s: ["check-config", _config(tmp, text, dataset)]


no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")

ROWS = [
    # train: each flag through the train section's schema, named by the flag
    pytest.param(train("--hidden", "0"), r"--hidden: 0 is less than the minimum of 1 \(config key train\.hidden\)",
                 id="train-hidden-0"),
    pytest.param(train("--epochs", "-1"), r"--epochs: -1 is less than the minimum of 1", id="train-epochs-negative"),
    pytest.param(train("--checkpoint-blocks", "0"), r"--checkpoint-blocks: 0 is less than the minimum of 1",
                 id="train-checkpoint-blocks-0"),
    pytest.param(train("--threads", "0"), r"--threads: 0 is less than the minimum of 1", id="train-threads-0"),
    pytest.param(train("--workers", "0"), r"--workers: 0 is less than the minimum of 1", id="train-workers-0"),
    pytest.param(train("--lr", "-1"), r"--lr: -1\.0 is less than or equal to the minimum of 0", id="train-lr-negative"),
    pytest.param(train("--device", "foo"), r"--device: 'foo' is not cpu, cuda or cuda:N", id="train-device-foo"),
    pytest.param(train("--device", "cuda"), r"--device cuda: this machine has no CUDA device .*; use cpu",
                 id="train-device-cuda-absent", marks=no_cuda),
    pytest.param(train("--device", "cuda:99"), r"--device cuda:99: this machine has \w+ CUDA device",
                 id="train-device-index-absent"),
    pytest.param(train("--options", '{"device": "cuda:99"}'), r"--options device cuda:99: this machine has",
                 id="train-options-device-absent"),
    pytest.param(train("--model", "tgcm"), r"--model: unknown model 'tgcm' \(did you mean 'tgcn'\?\); known: tgcn",
                 id="train-model-unknown"),
    pytest.param(train("--strategy", "vertx"), r"--strategy: unknown strategy 'vertx' \(did you mean 'vertex'\?\)",
                 id="train-strategy-unknown"),
    pytest.param(train("--task", "clasify"), r"--task: 'clasify' is not one of .* \(did you mean 'classify'\?\)",
                 id="train-task-unknown"),
    pytest.param(train("--partitioner", "random"), r"--partitioner: 'random' is not one of \['metis', 'hash'\]",
                 id="train-partitioner-unknown"),
    pytest.param(train("--options", '{"hidden": 0}'), r"--options hidden: 0 is less than the minimum of 1",
                 id="train-options-value"),
    pytest.param(train("--options", '{"hiden": 8}'), r"--options: unknown key 'hiden' \(did you mean 'hidden'\?\)",
                 id="train-options-unknown-key"),
    pytest.param(train("--options", "[1]"), r"--options: \[1\] is not of type 'object'", id="train-options-not-object"),
    pytest.param(train("--hidden", "abc"), r"^dynagnn train: error: argument --hidden: invalid int value: 'abc' "
                                           r"\(see --help\)$", id="train-argparse-type"),
    pytest.param(train("--bogus"), r"^dynagnn train: error: unrecognized arguments: --bogus \(see --help\)$",
                 id="train-argparse-unknown-flag"),
    pytest.param(lambda tmp, s: ["train", s["regress"], "--out-dir", str(tmp / "out"), "--task", "classify"],
                 r"node classification needs integer class labels, labels/y holds float32 values; "
                 r"for real-valued targets use task regress", id="train-classify-real-targets"),
    pytest.param(lambda tmp, s: ["train", s["link"], "--out-dir", str(tmp / "file.txt")],
                 r"--out-dir .*file\.txt: exists and is not a directory", id="train-out-dir-is-file"),
    # analyze: the analysis section's schema
    pytest.param(analyze("--cache-fractions", "0.1", "2.5"),
                 r"--cache-fractions: 2\.5 is greater than the maximum of 1 \(config key analysis\.cache\.fractions\)",
                 id="analyze-cache-fraction-above-1"),
    pytest.param(analyze("--batch-sizes", "0"), r"--batch-sizes: 0 is less than the minimum of 1",
                 id="analyze-batch-sizes-0"),
    pytest.param(analyze("--cache-epochs", "0"),
                 r"--cache-epochs: 0 is less than the minimum of 1 \(config key analysis\.cache\.epochs\)",
                 id="analyze-cache-epochs-0"),
    pytest.param(analyze("--neighbors", "-3"), r"--neighbors: -3 is less than the minimum of 1",
                 id="analyze-neighbors-negative"),
    pytest.param(analyze("--frame-sizes", "1"), r"--frame-sizes: 1 is less than the minimum of 2",
                 id="analyze-frame-size-1"),
    pytest.param(analyze("--volume-partitioners", "hsh"), r"--volume-partitioners: 'hsh' is not one of .*"
                                                          r"\(did you mean 'hash'\?\)", id="analyze-partitioner-unknown"),
    pytest.param(analyze("--workers", "0"), r"--workers: 0 is less than the minimum of 1 \(config key dask\.workers\)",
                 id="analyze-workers-0"),
    pytest.param(analyze("--parts", "nope"), r"argument --parts: invalid choice: 'nope'", id="analyze-parts-unknown"),
    pytest.param(analyze("--parts", "redundancy"), r"no event stream, so no redundancy table; leave out --parts "
                                                   r"redundancy", id="analyze-redundancy-without-events"),
    pytest.param(analyze("--parts", "overlap", "--frame-sizes", "9"),
                 r"frame sizes \[9\]: none fits the store's 8 snapshots; leave out --parts overlap",
                 id="analyze-asked-part-that-cannot-run"),
    pytest.param(lambda tmp, s: analyze("--scheduler", f"tcp://127.0.0.1:{_closed_port()}")(tmp, s),
                 r"--scheduler tcp://127\.0\.0\.1:\d+: no Dask scheduler reachable there",
                 id="analyze-scheduler-unreachable"),
    # stats: outputs checked before anything is written
    pytest.param(stats(out="adir"), r"--out .*adir: is a directory; expected a \.parquet file", id="stats-out-is-dir"),
    pytest.param(stats(out="stats.csv"), r"--out .*stats\.csv: expected a file name ending in \.parquet",
                 id="stats-out-suffix"),
    pytest.param(stats("--figure", "y.xyz"), r"--figure y\.xyz: expected a file name ending in \.png",
                 id="stats-figure-suffix"),
    pytest.param(stats(out="file.txt/stats.parquet"), r"file\.txt is a file, not a directory", id="stats-out-under-a-file"),
    pytest.param(stats("--workers", "0"), r"--workers: 0 is less than the minimum of 1", id="stats-workers-0"),
    pytest.param(lambda tmp, s: stats("--scheduler", f"tcp://127.0.0.1:{_closed_port()}")(tmp, s),
                 r"--scheduler tcp://127\.0\.0\.1:\d+: no Dask scheduler reachable there", id="stats-scheduler-unreachable"),
    # schedule: the schedule section's keys
    pytest.param(schedule("--window", "0"), r"--window: 0 is less than the minimum of 1", id="schedule-window-0"),
    pytest.param(schedule("--hidden", "0"), r"--hidden: 0 is less than the minimum of 1", id="schedule-hidden-0"),
    pytest.param(lambda tmp, s: [*schedule()(tmp, s)[:-4], "--workers", "0", "--out", str(tmp / "plan.json")],
                 r"--workers: 0 is less than the minimum of 1", id="schedule-workers-0"),
    pytest.param(lambda tmp, s: [a if a != "tgcn" else "tgnc" for a in schedule()(tmp, s)],
                 r"--model: 'tgnc' is not one of .*\(did you mean 'tgcn'\?\)", id="schedule-model-unknown"),
    pytest.param(schedule("--memory-gb", "-1"), r"argument --memory-gb: -1: must be greater than 0",
                 id="schedule-memory-negative"),
    pytest.param(schedule(out="plan.txt"), r"--out .*plan\.txt: expected a file name ending in \.json",
                 id="schedule-out-suffix"),
    pytest.param(schedule("--figure", "f.svg"), r"--figure f\.svg: expected a file name ending in \.png",
                 id="schedule-figure-suffix"),
    # profile: the cost section's keys, --device as train.device, widths without a key
    pytest.param(profile("--device", "foo"), r"--device: 'foo' is not cpu, cuda or cuda:N", id="profile-device-foo"),
    pytest.param(profile("--device", "cuda:99"), r"--device cuda:99: this machine has \w+ CUDA device",
                 id="profile-device-index-absent"),
    pytest.param(profile("--threads", "0"), r"--threads: 0 is less than the minimum of 1 \(config key cost\.threads\)",
                 id="profile-threads-0"),
    pytest.param(profile("--repeats", "0"), r"--repeats: 0 is less than the minimum of 1", id="profile-repeats-0"),
    pytest.param(profile("--grid", "huge"), r"--grid: 'huge' is not one of \['auto', 'quick', 'medium'\]",
                 id="profile-grid-unknown"),
    pytest.param(profile("--hidden", "16", "0"), r"--hidden: 0 is less than the minimum of 1", id="profile-hidden-0"),
    pytest.param(profile("--widths", "0"), r"argument --widths: 0: must be greater than 0", id="profile-widths-0"),
    pytest.param(profile("--models", "tgcm"), r"--models: 'tgcm' is not one of .*\(did you mean 'tgcn'\?\)",
                 id="profile-model-unknown"),
    # ingest
    pytest.param(lambda tmp, s: ["ingest", "--spec", "{}", "--dataset", "x", "--out", str(tmp / "s.zarr"),
                                 "--threads", "0"], r"--threads: 0 is less than the minimum of 1 "
                                                    r"\(config key ingest_threads\)", id="ingest-threads-0"),
    # check-config: registries, duplicate keys, run options
    pytest.param(check_config("train: {model: tgnc}\n"), r"config key train\.model: unknown model 'tgnc'",
                 id="config-model-unknown"),
    pytest.param(check_config("train:\n  runs: [{dataset: a, strategies: [sequential, vertx]}]\n"),
                 r"config key train\.runs\.0\.strategies\.1: unknown strategy 'vertx' \(did you mean 'vertex'\?\)",
                 id="config-strategy-unknown"),
    pytest.param(check_config("train:\n  runs: [{dataset: a, options: {hidden: 0}}]\n"),
                 r"config key train\.runs\.0\.options\.hidden: 0 is less than the minimum of 1",
                 id="config-run-option-value"),
    pytest.param(check_config("", dataset="options: {sepp: ','}, "),
                 r"config key datasets\.a\.options: unknown key 'sepp' \(did you mean 'sep'\?\)",
                 id="config-reader-option-unknown"),
    pytest.param(check_config("train:\n  hidden: 8\n  hidden: 16\n"),
                 r"config\.yaml, line 5: duplicate key 'hidden' \(first given at line 4\)", id="config-duplicate-key"),
    pytest.param(check_config("train: [\n"), r"config\.yaml, line 4: not valid YAML", id="config-bad-yaml"),
    pytest.param(check_config("analysis: {cache: {fractions: [2.5]}}\n"),
                 r"config key analysis\.cache\.fractions\.0: 2\.5 is greater than the maximum of 1",
                 id="config-cache-fraction"),
    # info and the top level: argparse's errors on one line
    pytest.param(lambda tmp, s: ["info", s["link"], "--bogus"],
                 r"^dynagnn info: error: unrecognized arguments: --bogus \(see --help\)$", id="info-unknown-flag"),
    pytest.param(lambda tmp, s: ["info"], r"^dynagnn info: error: the following arguments are required: store",
                 id="info-no-store"),
]


@pytest.mark.parametrize("make_argv, message", ROWS)
def test_bad_flag_refused(capfd, tmp_path, monkeypatch, stores, make_argv, message):
    monkeypatch.setattr("dynagnn.cli.stages.SCHEDULER_CONNECT_S", 1)
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    (tmp_path / "adir").mkdir()
    (tmp_path / "file.txt").write_text("not a folder\n")
    assert_refused(capfd, make_argv(tmp_path, stores), tmp_path, message)


def test_unreachable_scheduler_gives_up_after_the_connect_timeout(capfd, tmp_path, monkeypatch, stores):
    """Dask's own wait is 30 s; the CLI's is SCHEDULER_CONNECT_S."""
    import time

    monkeypatch.setattr("dynagnn.cli.stages.SCHEDULER_CONNECT_S", 2)
    t0 = time.perf_counter()
    assert_refused(capfd, stats("--scheduler", f"tcp://127.0.0.1:{_closed_port()}")(tmp_path, stores), tmp_path,
                   r"after 2 s")
    assert time.perf_counter() - t0 < 20   # Dask's own wait is 30 s; ours 2 s (quiet: 2.5 s)


def test_read_only_output_folder_refused_before_writing(capfd, tmp_path, stores):
    if os.geteuid() == 0:
        pytest.skip("root may write in a read-only folder")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        assert_refused(capfd, ["stats", stores["link"], "--out", str(ro / "sub" / "s.parquet")], tmp_path,
                       r"the folder .*ro is not writable")
    finally:
        ro.chmod(0o755)


def test_info_into_a_closed_pipe_exits_quietly(stores):
    """`dynagnn info | head`: the reader has gone; no BrokenPipeError traceback, the Python docs' exit 1."""
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the first write
    try:
        proc = subprocess.run([sys.executable, "-m", "dynagnn", "info", stores["link"]], stdout=w,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=PROCESS_HANG_S)
    finally:
        os.close(w)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""


def test_flags_match_their_keys():
    """Every flag named in FLAG_KEYS exists on its stage's parser, and every key exists in the schema."""
    from dynagnn.cli import FLAG_KEYS, OUTPUTS, _parser
    from dynagnn.config import schema_node

    parser = _parser()
    for stage, keys in {**FLAG_KEYS, **{s: dict.fromkeys(o) for s, o in OUTPUTS.items()}}.items():
        dests = {a.dest for a in parser.stages[stage]._actions}
        assert set(keys) <= dests, f"{stage}: no flag for {sorted(set(keys) - dests)}"
    for keys in FLAG_KEYS.values():
        for key in keys.values():
            assert schema_node(key)


def test_good_flags_pass_the_same_check(capfd, tmp_path, stores):
    """The check is not a wall: the flags' defaults and sensible values pass it (a table is written)."""
    from dynagnn.cli import main

    out = tmp_path / "a"
    assert main(["-q", "analyze", stores["link"], "--out-dir", str(out), "--threads-only", "--parts", "overlap",
                 "cache", "--frame-sizes", "2", "9", "--cache-fractions", "0.5", "1", "--cache-fanouts", "2"]) == 0
    import pandas as pd

    assert sorted(set(pd.read_parquet(out / "overlap.parquet")["frame_size"])) == [2]  # 9 > T = 8 is skipped
    assert sorted(set(pd.read_parquet(out / "cache.parquet")["fraction"])) == [0.5, 1.0]
