"""Bad-input table, damaged stores (issue 18, item 2): a store with a deleted folder or chunk, a
truncated or overwritten chunk, broken metadata or inconsistent arrays never reads as zeros. Every
sub-command that reads a store refuses it with one line naming the array (tests/badinput/common.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import zarr

from dynagnn.cli import main
from dynagnn.data import store as S

from .common import TINY_NODES as N, assert_refused


@pytest.fixture
def store(intact, tmp_path) -> Path:
    """A fresh copy of the tiny store in this test's folder, to damage."""
    return Path(shutil.copytree(intact, tmp_path / "store.zarr"))


def _truncate(p: Path) -> None:
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _edit_attrs(store: Path, **changes) -> None:
    meta = json.loads((store / "zarr.json").read_text())
    meta["attributes"].update(changes)
    (store / "zarr.json").write_text(json.dumps(meta))


def _attrs(store: Path) -> dict:
    return json.loads((store / "zarr.json").read_text())["attributes"]


def _set(store: Path, name: str, index: int, value) -> None:
    """Overwrite one element of an array in place (its chunk re-encoded: a consistent-looking file)."""
    arr = zarr.open_array(store / name, mode="r+")
    arr[index] = value


DAMAGES = {
    "snapshots folder deleted": (lambda s: shutil.rmtree(s / "snapshots"), r"array snapshots/\w+ is missing"),
    "row chunk deleted": (lambda s: (s / "snapshots/row/c.2").unlink(), r"array snapshots/row is missing chunk c\.2 "),
    "feature chunk deleted": (lambda s: (s / "features/x/c.3.0.0").unlink(),
                              r"array features/x is missing chunk c\.3\.0\.0 "),
    "row chunk truncated": (lambda s: _truncate(s / "snapshots/row/c.1"),
                            r"array snapshots/row: chunk c\.1 is truncated or damaged"),
    "offsets chunk truncated": (lambda s: _truncate(s / "snapshots/offsets/c.0"),
                                r"array snapshots/offsets: chunk c\.0 is truncated or damaged"),
    "garbage in zarr.json": (lambda s: (s / "zarr.json").write_text("garbage"), r"not a readable Zarr group"),
    "garbage in an array's zarr.json": (lambda s: (s / "snapshots/col/zarr.json").write_text("{garbage"),
                                        r"array snapshots/col: its metadata snapshots/col/zarr\.json is unreadable"),
    "wrong schema version": (lambda s: _edit_attrs(s, schema_version=1),
                             rf"schema_version 1, this dynagnn reads version {S.SCHEMA_VERSION}"),
    "offsets inconsistent with nnz": (lambda s: _set(s, "snapshots/offsets", -1, _attrs(s)["num_edges"] + 5),
                                      r"array snapshots/offsets is inconsistent \(offsets\[8\] = \d+, but the "
                                      r"edge arrays hold \d+ edges\)"),
    "edge count attribute wrong": (lambda s: _edit_attrs(s, num_edges=_attrs(s)["num_edges"] - 1),
                                   r"array snapshots/\w+ has shape \(\d+,\), the attributes call for"),
    "node id out of range": (lambda s: _set(s, "snapshots/row", 0, N), rf"array snapshots/row holds node id {N}, "),
}


def _command(kind: str, store: Path, tmp: Path) -> list[str]:
    return {
        "info": ["info", str(store)],
        "info --verify": ["info", str(store), "--verify"],
        "stats": ["stats", str(store), "--out", str(tmp / "stats.parquet"), "--workers", "1", "--threads-only"],
        # worker processes: the damaged chunk is found on a Dask worker, whose logging must stay quiet
        "stats on processes": ["stats", str(store), "--out", str(tmp / "stats.parquet"), "--workers", "2"],
        "train": ["train", str(store), "--out-dir", str(tmp / "run"), "--model", "tgcn", "--epochs", "1"],
    }[kind]


EVERY = ("info", "info --verify", "stats")
# info reads only the metadata, offsets and times: damage inside the edge data is for the readers of
# the edges (and --verify) to find.
ROWS = [(damage, kind) for damage in DAMAGES for kind in EVERY
        if not (kind == "info" and damage in ("row chunk truncated", "node id out of range"))]
ROWS += [("row chunk truncated", "stats on processes"), ("row chunk deleted", "train"),
         ("feature chunk deleted", "train"), ("row chunk truncated", "train")]


@pytest.mark.parametrize("damage, kind", ROWS, ids=[f"{d}-{k}" for d, k in ROWS])
def test_damaged_store_refused(capfd, tmp_path, store, damage, kind):
    make, message = DAMAGES[damage]
    make(store)
    line = assert_refused(capfd, _command(kind, store, tmp_path), tmp_path, message)
    assert str(store) in line and (damage == "wrong schema version" or "damaged" in line or "Zarr" in line)


def test_info_reads_no_edge_chunk(capfd, store):
    """Why the table leaves out info on a truncated row chunk: info opens the store and prints its
    summary without reading the edges; --verify is the full check."""
    _truncate(store / "snapshots/row/c.1")
    capfd.readouterr()
    assert main(["-q", "info", str(store)]) == 0
    assert f"nodes {N}, snapshots 8" in capfd.readouterr().out


def test_verify_passes_on_intact_store(capfd, store):
    capfd.readouterr()
    assert main(["-q", "info", str(store), "--verify"]) == 0
    out, err = capfd.readouterr()
    root = zarr.open_group(store, mode="r")
    names = _attrs(store)["array_sha256"]
    nbytes = sum(root[n].nbytes for n in names)  # all numeric: the synthetic store's node ids are ints
    assert out == f"{store}: OK, its {len(names)} arrays ({nbytes} bytes) match the checksums recorded at ingest\n"
    assert err == ""


@pytest.mark.parametrize("name", ["features/x/c.5.0.0", "snapshots/weight/c.0"])
def test_verify_finds_one_flipped_byte(capfd, tmp_path, store, name):
    """A chunk with one byte changed has the same size and still decodes: only the checksum finds it."""
    chunk = store / name
    data = bytearray(chunk.read_bytes())
    data[-1] ^= 0x01  # the last byte lies in the data: blosc ends with literals, or stores data as is
    chunk.write_bytes(bytes(data))
    capfd.readouterr()
    assert main(["-q", "info", str(store)]) == 0  # nothing the cheap checks on open can see
    array = name.rsplit("/", 1)[0]
    assert_refused(capfd, ["info", str(store), "--verify"], tmp_path,
                   rf"array {array} does not match its checksum \(its data changed after ingest\)")
