"""DyGLib's processed format (issue 31): a folder written the way DyGLib's preprocess_data.py writes it
(TGN's layout: a pandas to_csv with its index, ids from 1 with the items shifted past the users, the
edge and node features with their zero padding row), read against an independent parse of the same
files; each bad input refused in one line naming the file."""

import numpy as np
import pandas as pd
import pytest

from dynagnn.data.ingest import ingest
from dynagnn.data.sources import read_source
from dynagnn.data.store import open_store
from dynagnn.errors import InputError


def dyglib_folder(root, name="toy", users=4, items=3, events=30, d_e=5, d_n=2, seed=0):
    """preprocess_data.py's output for a bipartite stream: u in 1..U, i in U+1..U+I, idx 1..E."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, users, events)
    i = rng.integers(0, items, events) + users
    ts = np.sort(rng.uniform(0, 1000, events)).round(1)
    df = pd.DataFrame({"u": u + 1, "i": i + 1, "ts": ts, "label": rng.integers(0, 2, events),
                       "idx": np.arange(1, events + 1)})
    folder = root / name
    folder.mkdir(parents=True)
    df.to_csv(folder / f"ml_{name}.csv")
    feat = rng.normal(size=(events, d_e))
    np.save(folder / f"ml_{name}.npy", np.vstack([np.zeros((1, d_e)), feat]))
    np.save(folder / f"ml_{name}_node.npy", np.vstack([np.zeros((1, d_n)), rng.normal(size=(users + items, d_n))]))
    return folder


def test_the_folder_reads_as_an_independent_parse(tmp_path):
    folder = dyglib_folder(tmp_path)
    raw = read_source("dyglib", folder)
    df = pd.read_csv(folder / "ml_toy.csv", index_col=0)
    edges, nodes = np.load(folder / "ml_toy.npy"), np.load(folder / "ml_toy_node.npy")
    ev = raw.events
    np.testing.assert_array_equal(ev.src, df["u"] - 1)
    np.testing.assert_array_equal(ev.dst, df["i"] - 1)
    np.testing.assert_array_equal(ev.t, df["ts"])
    np.testing.assert_array_equal(ev.label, df["label"])
    np.testing.assert_allclose(ev.features, edges[df["idx"]].astype(np.float32))
    np.testing.assert_allclose(raw.node_features, nodes[1:].astype(np.float32))
    assert raw.num_nodes == 7 and raw.node_ids.tolist() == list(range(1, 8)) and raw.name == "toy"


def test_ingest_keeps_the_source_node_features(tmp_path):
    folder = dyglib_folder(tmp_path)
    spec = {"format": "dyglib", "path": str(folder), "snapshots": {"by": "time", "width": 250},
            "features": {"kind": "source"}}
    store = open_store(ingest(spec, tmp_path / "s.zarr", name="toy"))
    np.testing.assert_allclose(store.features(), np.load(folder / "ml_toy_node.npy")[1:].astype(np.float32))
    assert len(store.events()) == 30


@pytest.mark.parametrize("damage,message", [
    (lambda f: (f / "ml_toy.npy").unlink(), "ml_toy.npy is missing: DyGLib's preprocess_data.py writes"),
    (lambda f: (f / "ml_toy_node.npy").write_text("x"), "not a numpy array file"),
    (lambda f: np.save(f / "ml_toy.npy", np.zeros((5, 3))), "idx 30 has no row in ml_toy.npy"),
    (lambda f: np.save(f / "ml_toy_node.npy", np.zeros((3, 2))), "node id 7 has no row in ml_toy_node.npy"),
    (lambda f: (f / "ml_toy.csv").write_text(",u,i,ts\n0,1,2,3.0\n"), "missing label, idx"),
])
def test_bad_input_is_one_line_naming_the_file(tmp_path, damage, message):
    folder = dyglib_folder(tmp_path)
    damage(folder)
    with pytest.raises(InputError, match=message) as err:
        read_source("dyglib", folder)
    assert "\n" not in str(err.value) and str(folder) in str(err.value)
