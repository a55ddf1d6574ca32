"""Bad-input table, sampled training (issue 16): each refusal is one line, and nothing is written."""

from __future__ import annotations

import json
import os
import signal

import pytest

from dynagnn.data.ingest import ingest
from dynagnn.train import stages

from .common import assert_refused

BGL = {"format": "synthetic", "generator": "bgl",
       "params": {"num_nodes": 300, "num_edges": 1200, "feature_dim": 4, "classes": 3, "seed": 0}}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("sampled_bad")
    specs = {"good": BGL, "no_features": {**BGL, "features": {"kind": "none"}},
             "no_labels": {"format": "synthetic", "generator": "esdg", "features": {"kind": "random", "dim": 4},
                           "params": {"num_nodes": 50, "num_snapshots": 2, "avg_degree": 3.0}}}
    for name, spec in specs.items():
        ingest(spec, root / f"{name}.zarr")
    return root


def argv(store, out, *extra, options=None):
    opts = {"cache_l1_mb": 0.01, "cache_l2_mb": 0.01, **(options or {})}
    return ["train", str(store), "--out-dir", str(out), "--model", "graphsage", "--strategy", "sampled",
            "--fanouts", "3", "2", "--batch-size", "64", "--epochs", "1", "--samplers", "0", "--threads", "1",
            "--options", json.dumps(opts), *extra]


CASES = {
    "cache budget larger than memory": ("good", {"cache_l2_mb": 1e9}, (),
                                        r"cache_l1_mb \+ cache_l2_mb: a cache budget of .* MiB is more than the .* MiB of "
                                        r"memory the host has"),
    "fan-out 0": ("good", {}, ("--fanouts", "2", "0"), r"--fanouts"),
    "dataset without labels": ("no_labels", {}, (), r"sampled training classifies vertices and needs labels"),
    "store without features": ("no_features", {}, (), r"the store has no node features"),
    "a snapshot model": ("good", {}, ("--model", "tgcn"), r"strategy sampled trains a model on sampled blocks"),
}


@pytest.mark.parametrize("case", CASES)
def test_refused(capfd, tmp_path, stores, case):
    store, options, extra, message = CASES[case]
    assert_refused(capfd, argv(stores / f"{store}.zarr", tmp_path / "out", *extra, options=options), tmp_path, message)


class DyingSampling(stages._Sampling):
    """A sampler whose process dies (SIGKILL) on its first batch."""

    def __call__(self, seeds, key):
        os.kill(os.getpid(), signal.SIGKILL)


def test_a_dead_sampler_stops_the_run(capfd, tmp_path, stores, monkeypatch):
    monkeypatch.setattr(stages, "_Sampling", DyingSampling)
    args = argv(stores / "good.zarr", tmp_path / "out")
    args[args.index("--samplers") + 1] = "1"
    assert_refused(capfd, args, tmp_path, r"sampler process 0 died \(killed by signal 9\); the run stops, nothing was written")
