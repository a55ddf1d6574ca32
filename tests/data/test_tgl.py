"""TGL's dataset folder (issue 31) and the stored per-event split: ``DATA/<NAME>/`` written the way
TGL's README describes it (edges.csv by pandas' to_csv with its index, columns src, dst, time,
int_roll, ext_roll; edge_features.pt and node_features.pt by torch.save), read against an independent
parse; the store keeps ext_roll as ``events/split`` and the event task splits by it exactly, while a
store without one keeps the time-quantile split. Each bad input is refused in one line naming the file."""

import csv
import os
import shlex

import numpy as np
import pandas as pd
import pytest
import torch
import zarr

from dynagnn.data import discretize as D
from dynagnn.data.ingest import ingest
from dynagnn.data.sources import read_source
from dynagnn.data.store import open_store, write_store
from dynagnn.data.types import EventStream, RawGraph
from dynagnn.errors import ConfigError, InputError, StoreError
from dynagnn.tasks.events import EventLinkTask


def tgl_folder(root, name="WIKI", events=200, users=8, items=5, d_e=3, d_n=2, seed=0, roll="chronological"):
    """TGL's DATA/WIKI/: destinations past the sources, float times in order, ext_roll 60/20/20 (not the
    task's own 70/15/15), a node without events (its row only in node_features.pt), some identical edges."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, users, events)
    dst = rng.integers(0, items, events) + users
    time = np.sort(rng.uniform(0, 5000, events)).round(2)
    for i in (20, 150):
        src[i], dst[i], time[i] = src[i - 1], dst[i - 1], time[i - 1]
    ext_roll = np.repeat([0, 1, 2], [events * 6 // 10, events * 2 // 10, events - events * 8 // 10])
    if roll == "shuffled":   # a split against time order (the event task refuses it)
        ext_roll = rng.permutation(ext_roll)
    folder = root / "DATA" / name
    folder.mkdir(parents=True)
    pd.DataFrame({"src": src, "dst": dst, "time": time, "int_roll": np.zeros(events, dtype=int),
                  "ext_roll": ext_roll}).to_csv(folder / "edges.csv")
    torch.save(torch.randn(events, d_e, generator=torch.Generator().manual_seed(seed)), folder / "edge_features.pt")
    torch.save(torch.randn(users + items + 1, d_n), folder / "node_features.pt")
    return folder


def independent_parse(folder):
    with open(folder / "edges.csv") as f:
        rows = list(csv.DictReader(f))
    return dict(index=[int(r[""]) for r in rows], src=[int(r["src"]) for r in rows], dst=[int(r["dst"]) for r in rows],
                t=[float(r["time"]) for r in rows], roll=[int(r["ext_roll"]) for r in rows],
                edge=torch.load(folder / "edge_features.pt").numpy(),
                node=torch.load(folder / "node_features.pt").numpy())


def test_the_folder_reads_as_an_independent_parse(tmp_path):
    folder = tgl_folder(tmp_path)
    raw = read_source("tgl", folder)
    want, ev = independent_parse(folder), raw.events
    assert want["index"] == list(range(len(ev)))
    np.testing.assert_array_equal(ev.src, want["src"])
    np.testing.assert_array_equal(ev.dst, want["dst"])
    np.testing.assert_array_equal(ev.t, want["t"])
    np.testing.assert_array_equal(ev.split, want["roll"])
    assert ev.split.dtype == np.int8
    np.testing.assert_allclose(ev.features, want["edge"])
    np.testing.assert_allclose(raw.node_features, want["node"])
    assert raw.num_nodes == 14 and raw.node_ids.tolist() == list(range(14)) and raw.name == "WIKI"
    assert read_source("tgl", folder / "edges.csv").events.split.tolist() == want["roll"]


def test_whole_number_float_times_read_as_int64_as_the_tgb_reader_reads_them(tmp_path):
    folder = tgl_folder(tmp_path)
    _rewrite_edges(folder, lambda df: df.assign(time=df.time.round().astype(float)))
    assert ".0," in (folder / "edges.csv").read_text()   # written as floats
    ev = read_source("tgl", folder).events
    assert ev.t.dtype == np.int64
    np.testing.assert_array_equal(ev.t, np.round(independent_parse(folder)["t"]))
    assert read_source("tgl", tgl_folder(tmp_path / "frac")).events.t.dtype == np.float64


def test_without_feature_files_the_events_read_alone(tmp_path):
    folder = tgl_folder(tmp_path)
    (folder / "edge_features.pt").unlink()
    (folder / "node_features.pt").unlink()
    raw = read_source("tgl", folder)
    assert raw.events.features is None and raw.node_features is None and raw.num_nodes == 13


def test_the_store_keeps_ext_roll_and_the_task_splits_by_it_exactly(tmp_path):
    folder = tgl_folder(tmp_path)
    spec = {"format": "tgl", "path": str(folder), "snapshots": {"by": "time", "width": 1000},
            "features": {"kind": "source"}}
    store = open_store(ingest(spec, tmp_path / "s.zarr", name="wiki"))
    want = np.array(independent_parse(folder)["roll"])
    np.testing.assert_array_equal(store.read("events/split"), want)
    events = store.events()
    task = EventLinkTask(events, store.num_nodes, batch_size=10, new_node_share=0.0)
    np.testing.assert_array_equal(task.train_events, np.flatnonzero(want == 0))
    np.testing.assert_array_equal(task.val_events, np.flatnonzero(want == 1))
    np.testing.assert_array_equal(task.test_events, np.flatnonzero(want == 2))
    # without the stored split, the task keeps its 70/15/15 time quantiles
    plain = EventLinkTask(EventStream(events.src, events.dst, events.t), store.num_nodes, batch_size=10,
                          new_node_share=0.0)
    val_time, test_time = np.quantile(events.t, [0.70, 0.85])
    np.testing.assert_array_equal(plain.val_events, np.flatnonzero((events.t > val_time) & (events.t <= test_time)))
    assert plain.val_events.size != task.val_events.size


def test_a_split_against_time_order_is_stored_but_the_task_refuses_it_in_one_line(tmp_path):
    folder = tgl_folder(tmp_path, roll="shuffled")
    spec = {"format": "tgl", "path": str(folder), "snapshots": {"by": "time", "width": 1000}}
    path = ingest(spec, tmp_path / "s.zarr", name="wiki")
    store = open_store(path)
    np.testing.assert_array_equal(store.read("events/split"), independent_parse(folder)["roll"])
    events = store.events()
    t, split = np.asarray(events.t), np.asarray(events.split)
    last, first = t[split == 0].max(), t[split == 1].min()
    assert last > first
    with pytest.raises(ConfigError) as err:
        EventLinkTask(events, store.num_nodes, batch_size=10, new_node_share=0.0, path=str(path))
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{path}: the stored split (events/split) does not respect time order: "
                                              f"a training event at t={last} comes after a validation event at "
                                              f"t={first};")


def _task_of(t, split):
    n = len(t)
    ev = EventStream(np.arange(n, dtype=np.int64) % 3, np.arange(n, dtype=np.int64) % 3 + 3, np.asarray(t),
                     split=np.asarray(split, dtype=np.int8))
    return EventLinkTask(ev, 6, batch_size=1, new_node_share=0.0, path="the/store.zarr")


def test_a_validation_event_after_a_test_one_is_refused_and_equal_boundary_times_are_fine():
    with pytest.raises(ConfigError, match=r"^the/store.zarr: the stored split \(events/split\) does not respect time "
                                          r"order: a validation event at t=5 comes after a test event at t=4;"):
        _task_of([0, 1, 2, 3, 4, 5], [0, 0, 1, 1, 2, 1])
    with pytest.raises(ConfigError, match=r"a training event at t=2.5 comes after a validation event at t=2;"):
        _task_of([0, 1, 2, 2.5, 4, 5], [0, 0, 1, 0, 1, 2])
    # ties at both boundaries: the split respects time order
    task = _task_of([0, 1, 1, 3, 3, 5], [0, 0, 1, 1, 2, 2])
    assert task.train_events.tolist() == [0, 1] and task.val_events.tolist() == [2, 3]
    assert task.test_events.tolist() == [4, 5]


def test_dropped_duplicates_take_their_split_with_them(tmp_path):
    folder = tgl_folder(tmp_path, roll="shuffled")
    spec = {"format": "tgl", "path": str(folder), "snapshots": {"by": "time", "width": 1000}, "duplicates": "drop"}
    store = open_store(ingest(spec, tmp_path / "s.zarr"))
    keep = np.setdiff1d(np.arange(200), [20, 150])   # the copies of the rows before them
    np.testing.assert_array_equal(store.read("events/split"), np.array(independent_parse(folder)["roll"])[keep])


def _raw_with_split(split):
    n = len(split)
    ev = EventStream(np.zeros(n, np.int64), np.ones(n, np.int64), np.arange(n), split=np.asarray(split))
    return RawGraph(num_nodes=2, node_ids=np.arange(2), events=ev, sources=[], name="x")


def test_a_split_value_other_than_0_1_2_is_refused_when_written_and_when_read(tmp_path):
    raw = _raw_with_split([0, 1, 2, 5])
    snaps = D.build_snapshots(raw, by="time", width=10)
    with pytest.raises(InputError, match="the events' split holds 5 at event 3: expected 0 .*1 .*or 2"):
        write_store(tmp_path / "bad.zarr", raw, snaps, None, spec={})
    assert not (tmp_path / "bad.zarr").exists()
    raw = _raw_with_split([0, 1, 2, 2])
    path = write_store(tmp_path / "s.zarr", raw, D.build_snapshots(raw, by="time", width=10), None, spec={})
    zarr.open_group(path, mode="r+")["events/split"][1] = 7   # damage
    with pytest.raises(StoreError, match=r"array events/split holds 7 at event 1: expected .* the store is damaged"):
        open_store(path).events()
    with pytest.raises(StoreError, match="events/split"):
        open_store(path).verify()


class _RunsACommand:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(str(self.marker))}",)


def _rewrite_edges(folder, change):
    df = pd.read_csv(folder / "edges.csv", index_col=0)
    change(df).to_csv(folder / "edges.csv")


@pytest.mark.parametrize("damage,where,message", [
    (lambda f: (f / "edges.csv").unlink(), "folder", "edges.csv is missing: expected TGL's dataset folder"),
    (lambda f: _rewrite_edges(f, lambda df: df.drop(columns="ext_roll")), "edges.csv",
     "expected TGL's columns src, dst, time, int_roll, ext_roll .*missing ext_roll"),
    (lambda f: _rewrite_edges(f, lambda df: df.assign(ext_roll=df.ext_roll.where(df.index != 7, 3))), "edges.csv",
     r"ext_roll 3 at data row 8: expected 0 \(training\), 1 \(validation\) or 2 \(test\)"),
    (lambda f: _rewrite_edges(f, lambda df: df.assign(src=df.src.astype(object).where(df.index != 4, "a"))),
     "edges.csv", "column src holds 'a' at data row 5: expected an integer"),
    (lambda f: _rewrite_edges(f, lambda df: df.assign(dst=df.dst.where(df.index != 2, -1))), "edges.csv",
     "node id -1: TGL's node ids start at 0"),
    (lambda f: torch.save(torch.zeros(5, 3), f / "edge_features.pt"), "edge_features.pt",
     "5 rows, but edges.csv has 200 edges"),
    (lambda f: torch.save(torch.zeros(4, 2), f / "node_features.pt"), "node_features.pt",
     "4 rows, but edges.csv names node 12"),
    (lambda f: torch.save(torch.zeros(200), f / "edge_features.pt"), "edge_features.pt",
     r"expected TGL's edge features \[E, d_e\]: one 2-D tensor, got \[200\]"),
    (lambda f: (f / "node_features.pt").write_text("x"), "node_features.pt",
     r"not a tensor file torch.load\(weights_only=True\) reads"),
])
def test_bad_input_is_one_line_naming_the_file(tmp_path, damage, where, message):
    folder = tgl_folder(tmp_path)
    damage(folder)
    with pytest.raises(InputError, match=message) as err:
        read_source("tgl", folder)
    path = folder if where == "folder" else folder / where
    assert "\n" not in str(err.value) and str(err.value).startswith(f"{path}:")


def test_a_feature_file_that_would_run_code_is_refused_and_nothing_runs(tmp_path):
    folder = tgl_folder(tmp_path)
    marker = tmp_path / "it-ran"
    torch.save(_RunsACommand(marker), folder / "edge_features.pt")
    with pytest.raises(InputError, match=r"not a tensor file torch.load\(weights_only=True\) reads") as err:
        read_source("tgl", folder)
    assert "\n" not in str(err.value) and str(folder / "edge_features.pt") in str(err.value)
    assert not marker.exists()
