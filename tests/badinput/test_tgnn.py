"""Bad input of the tgnn strategies (Sven, issue 15): one line each, nothing written."""

import pytest

from tests.badinput.common import assert_refused
from tests.testing.stores import event_store

BASE = ["--model", "tgn", "--strategy", "tgnn", "--epochs", "1", "--memory-dim", "8", "--neighbors", "2",
        "--threads", "1"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return event_store(tmp_path_factory.mktemp("tgnnbad") / "ev.zarr")


@pytest.mark.parametrize("flags, message", [
    (["--memory-partitioner", "metis"], r"--memory-partitioner: 'metis' is not one of \['reflexbicut', 'hash', 'range'\]"),
    (["--micro-batches", "0"], r"--micro-batches: 0 is less than the minimum of 1"),
    (["--micro-batches", "fast"], r"--micro-batches: 'fast' is not a count of micro-batches >= 1 or adaptive"),
    (["--options", '{"micro_batches": -2}'], r"--options micro_batches: -2 is less than the minimum of 1"),
    (["--options", '{"stale_allreduce": "yes"}'], r"--options stale_allreduce: 'yes' is not of type 'boolean'"),
    (["--workers", "26"], r"26 workers for 25 nodes: the tgnn strategy gives every worker memory rows"),
    (["--model", "apan", "--strategy", "tgnn_depcomm", "--workers", "2"], r"tgnn_depcomm cannot serve apan"),
    (["--model", "tgcn"], r"trains the event models"),
])
def test_refused(store, tmp_path, capfd, flags, message):
    argv = ["train", str(store), "--out-dir", str(tmp_path / "out"), *BASE, *flags]
    assert_refused(capfd, argv, tmp_path, message)
