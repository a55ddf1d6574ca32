"""One Snakemake run of the tiny config per test session, shared by the tests that check its outputs
(each checks other outputs of the same run; issue 48: the suite ran the tiny config three times)."""

from __future__ import annotations

import pytest

from tests.testing.workflow import SHARED_DATASETS, SHARED_RUNS, snakemake, workdir


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """The workflow's folder after `snakemake --cores 2` of the tiny config ran to its end (every
    stage, and the auto run beside a sequential one); tests read it, never change it."""
    wd = workdir(tmp_path_factory.mktemp("tiny-run"), SHARED_DATASETS, SHARED_RUNS)
    # what the function-scoped autouse fixtures (tests/conftest.py) set, which a session fixture runs
    # before: choices of its own, and auto's candidates on every core whatever the other worker runs
    env = {"DYNAGNN_CHOICES": str(tmp_path_factory.mktemp("choices")), "DYNAGNN_OTHERS_BUSY": "0"}
    run = snakemake(wd, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    return wd
