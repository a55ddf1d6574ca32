"""The bad-input tests' shared fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dynagnn.cli import main
from dynagnn.data import store as S

from .common import TINY_NODES


@pytest.fixture(scope="module")
def intact(tmp_path_factory) -> Path:
    """A tiny store of 8 snapshots with per-snapshot features, its edge arrays cut into several chunks."""
    out = tmp_path_factory.mktemp("intact") / "store.zarr"
    spec = json.dumps({"format": "synthetic", "generator": "blad", "features": {"kind": "degree", "dim": 4},
                       "params": {"num_nodes": TINY_NODES, "num_edges": 150, "num_snapshots": 8, "seed": 1}})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(S, "EDGE_CHUNK", 256)
        mp.setattr(S, "SNAPSHOT_CHUNK_BYTES", TINY_NODES * 4 * 4)   # one snapshot's features per chunk
        assert main(["-q", "ingest", "--spec", spec, "--dataset", "tiny", "--out", str(out)]) == 0
    assert len(list((out / "snapshots" / "row").glob("c.*"))) >= 3
    return out
