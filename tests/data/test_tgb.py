"""TGB's link property prediction format (issue 31): a dataset folder written the way TGB ships it
(tgbl-wiki's JODIE-style edge list, and a time-first one as tgbl-review's), with the validation and
test negatives made as TGB's NegativeEdgeGenerator makes them (its processed ids and integer times as
keys, numpy arrays as values, pickle.dump at the highest protocol). The reader's ids, times, labels,
features, split and negatives are compared with an independent parse (the csv module, pickle); the
store keeps the split and the negatives, and the event task evaluates exactly TGB's validation and
test events on them. Each bad input is refused in one line naming the file."""

import csv
import os
import pickle
import shlex

import numpy as np
import pandas as pd
import pytest

from dynagnn.data.ingest import ingest
from dynagnn.data.sources import read_source
from dynagnn.data.store import open_store
from dynagnn.data.types import EventStream
from dynagnn.errors import InputError
from dynagnn.tasks.events import EventLinkTask

NAME, K = "tgbl-toy", 5


def tgb_folder(root, layout="wiki", events=160, seed=0, shuffle=False, version="_v2"):
    """TGB's folder ``tgb/datasets/tgbl_toy/``: the edge list, and the negatives its own loader and
    generator would make from it (load_edgelist_wiki's dst shift or csv_to_pd_data_sc's ids by first
    appearance, generate_splits' quantiles, one key per distinct validation / test edge)."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.integers(0, 3000, events))
    a, b = rng.integers(0, 7, events), rng.integers(0, 4, events)
    for i in (events - 3, int(events * 0.8)):   # identical edges: one key names both
        a[i], b[i], t[i] = a[i - 1], b[i - 1], t[i - 1]
    rows = rng.permutation(events) if shuffle else np.arange(events)
    folder = root / NAME.replace("-", "_")
    folder.mkdir(parents=True)
    path = folder / f"{NAME}_edgelist{version}.csv"
    with open(path, "w") as f:
        if layout == "wiki":   # JODIE's wikipedia.csv: more feature fields than header names
            f.write("user_id,item_id,timestamp,state_label,comma_separated_list_of_features\n")
            for r in rows:
                f.write(f"{a[r]},{b[r]},{float(t[r])},{r % 2},{r * 0.5},{-r},{r % 3}\n")
        else:                  # tgbl-review / -coin: time,src,dst,weight with text ids
            f.write("time,src,dst,weight\n")
            for r in rows:
                f.write(f"{t[r]},0xu{a[r]:02x},0xi{b[r]:02x},{r % 5 + 0.5}\n")
    # TGB's processing of that file
    if layout == "wiki":
        df = pd.read_csv(path, skiprows=1, header=None)
        src, dst = df.iloc[:, 0].values, df.iloc[:, 1].values
        dst = dst + int(src.max()) + 1
        ts = df.iloc[:, 2].values.astype(int)
    else:
        node_ids, src, dst, ts = {}, [], [], []
        with open(path) as f:
            for row in list(csv.reader(f))[1:]:
                for v in row[1:3]:
                    node_ids.setdefault(v, len(node_ids))
                src.append(node_ids[row[1]]), dst.append(node_ids[row[2]]), ts.append(int(row[0]))
        src, dst, ts = np.array(src).astype(int), np.array(dst).astype(int), np.array(ts).astype(int)
    val_time, test_time = np.quantile(ts, [0.70, 0.85])
    for split, mask in (("val", (ts > val_time) & (ts <= test_time)), ("test", ts > test_time)):
        ns = {}
        for s, d, tt in zip(src[mask], dst[mask], ts[mask]):
            # hist_rnd concatenates an empty float array with the random draw: float values
            ns[(s, d, tt)] = np.concatenate((np.array([]), rng.choice(np.unique(dst), K)))
        with open(folder / f"{NAME}_{split}_ns{version}.pkl", "wb") as f:
            pickle.dump(ns, f, protocol=pickle.HIGHEST_PROTOCOL)
    return folder


def independent_parse(folder, layout="wiki", version="_v2"):
    """The edge list by the csv module, in time order (stable), with TGB's ids, split and negatives."""
    with open(folder / f"{NAME}_edgelist{version}.csv") as f:
        rows = list(csv.reader(f))[1:]
    if layout == "wiki":
        shift = max(int(r[0]) for r in rows) + 1
        tgb = [(int(r[0]), int(r[1]) + shift) for r in rows]
        ids = sorted({v for pair in tgb for v in pair})
        node_ids, dense = ids, {v: k for k, v in enumerate(ids)}
    else:
        first = {}
        for r in rows:
            first.setdefault(r[1], len(first)), first.setdefault(r[2], len(first))
        tgb = [(first[r[1]], first[r[2]]) for r in rows]
        node_ids = sorted(first)
        dense = {first[v]: k for k, v in enumerate(node_ids)}
    t = np.array([float(r[2] if layout == "wiki" else r[0]) for r in rows])
    order = np.argsort(t, kind="stable")
    ti = t.astype(int)
    val_time, test_time = np.quantile(ti, [0.70, 0.85])
    split = np.where(ti <= val_time, 0, np.where(ti <= test_time, 1, 2))[order]
    ns = {}
    for s in ("val", "test"):
        with open(folder / f"{NAME}_{s}_ns{version}.pkl", "rb") as f:
            ns.update(pickle.load(f))
    keys = [(tgb[r][0], tgb[r][1], int(ti[r])) for r in order]
    listed = [e for e, k in enumerate(keys) if split[e] > 0]
    negatives = np.array([[dense[int(v)] for v in ns[keys[e]]] for e in listed])
    return dict(rows=[rows[r] for r in order], src=[dense[tgb[r][0]] for r in order],
                dst=[dense[tgb[r][1]] for r in order], t=t[order], split=split, node_ids=node_ids,
                listed=np.array(listed), negatives=negatives)


@pytest.mark.parametrize("shuffle", [False, True], ids=["sorted", "unsorted"])
def test_the_wiki_layout_reads_as_an_independent_parse(tmp_path, shuffle):
    folder = tgb_folder(tmp_path, shuffle=shuffle)
    raw = read_source("tgb", folder)
    want, ev = independent_parse(folder), raw.events
    np.testing.assert_array_equal(ev.src, want["src"])
    np.testing.assert_array_equal(ev.dst, want["dst"])
    np.testing.assert_array_equal(ev.t, want["t"])
    assert ev.t.dtype == np.int64   # every time an integer, as TGB takes them
    np.testing.assert_array_equal(ev.label, [int(r[3]) for r in want["rows"]])
    np.testing.assert_allclose(ev.features, np.array([[float(v) for v in r[4:]] for r in want["rows"]], np.float32))
    np.testing.assert_array_equal(ev.split, want["split"])
    assert ev.split.dtype == np.int8 and set(np.unique(ev.split)) == {0, 1, 2}
    np.testing.assert_array_equal(ev.negatives[0], want["listed"])
    np.testing.assert_array_equal(ev.negatives[1], want["negatives"])
    assert raw.node_ids.tolist() == want["node_ids"] and raw.name == NAME
    assert raw.num_nodes == len(want["node_ids"]) and len(raw.sources) == 3


def test_the_time_first_layout_numbers_ids_by_first_appearance(tmp_path):
    folder = tgb_folder(tmp_path, layout="review", seed=1)
    raw = read_source("tgb", folder / f"{NAME}_edgelist_v2.csv")   # the edge list's path reads the same
    want, ev = independent_parse(folder, layout="review"), raw.events
    np.testing.assert_array_equal(ev.src, want["src"])
    np.testing.assert_array_equal(ev.dst, want["dst"])
    np.testing.assert_array_equal(ev.t, want["t"])
    np.testing.assert_allclose(ev.features[:, 0], [float(r[3]) for r in want["rows"]])
    assert ev.label is None
    np.testing.assert_array_equal(ev.split, want["split"])
    np.testing.assert_array_equal(ev.negatives[0], want["listed"])
    np.testing.assert_array_equal(ev.negatives[1], want["negatives"])
    assert raw.node_ids.tolist() == want["node_ids"]


def test_version_1_names_and_no_negatives(tmp_path):
    folder = tgb_folder(tmp_path, version="")
    assert len(read_source("tgb", folder).events.negatives[0]) > 0
    for s in ("val", "test"):
        (folder / f"{NAME}_{s}_ns.pkl").unlink()
    ev = read_source("tgb", folder).events
    assert ev.negatives is None and ev.split is not None


def test_ingest_keeps_the_split_and_the_negatives_and_the_task_evaluates_on_them(tmp_path):
    folder = tgb_folder(tmp_path)
    spec = {"format": "tgb", "path": str(folder), "snapshots": {"by": "time", "width": 500},
            "features": {"kind": "degree", "dim": 4}}
    store = open_store(ingest(spec, tmp_path / "s.zarr", name="toy"))
    want, events = independent_parse(folder), store.events()
    np.testing.assert_array_equal(store.read("events/split"), want["split"])
    assert store.read("events/split").dtype == np.int8
    np.testing.assert_array_equal(store.read("negatives/event"), want["listed"])
    np.testing.assert_array_equal(store.read("negatives/dst"), want["negatives"])
    task = EventLinkTask(events, store.num_nodes, batch_size=10)
    np.testing.assert_array_equal(task.val_events, np.flatnonzero(want["split"] == 1))
    np.testing.assert_array_equal(task.test_events, np.flatnonzero(want["split"] == 2))
    # the stored negatives cover exactly the validation and test events, K each
    np.testing.assert_array_equal(task.stored[0], np.concatenate([task.val_events, task.test_events]))
    assert task.negative_kind == "stored" and task.eval_negatives == K
    # TGB's split is the task's own time-quantile split
    plain = EventLinkTask(EventStream(events.src, events.dst, events.t), store.num_nodes, batch_size=10)
    np.testing.assert_array_equal(plain.val_events, task.val_events)
    np.testing.assert_array_equal(plain.test_events, task.test_events)


def _edit(folder, split, change):
    path = folder / f"{NAME}_{split}_ns_v2.pkl"
    with open(path, "rb") as f:
        ns = pickle.load(f)
    with open(path, "wb") as f:
        pickle.dump(change(folder, ns), f, protocol=pickle.HIGHEST_PROTOCOL)
    return path


def _shift_time(folder, ns):
    (s, d, t), neg = next(iter(ns.items()))
    return {**ns, (s, d, t + 100000): neg}


def _short_list(folder, ns):
    key = list(ns)[3]
    return {**ns, key: ns[key][:-1]}


def _unknown_node(folder, ns):
    key = next(iter(ns))
    return {**ns, key: np.array([10**6] * K)}


def _test_key_in_val(folder, ns):
    with open(folder / f"{NAME}_test_ns_v2.pkl", "rb") as f:
        test = pickle.load(f)
    return {**ns, **dict([next(iter(test.items()))])}


@pytest.mark.parametrize("change,message", [
    (_shift_time, r"the negatives file does not match its edge list: key \(\d+, \d+, \d+\) is no event of "
                  r"tgbl-toy_edgelist_v2.csv"),
    (_short_list, "negative lists of different lengths"),
    (_unknown_node, "negative destination 1000000 of key .* is no node of tgbl-toy_edgelist_v2.csv"),
    (_test_key_in_val, "does not match its edge list: key .* is a test event of tgbl-toy_edgelist_v2.csv .*not a "
                       "validation one"),
    (lambda folder, ns: [1, 2, 3], "expected TGB's negatives .* got list"),
])
def test_negatives_that_do_not_match_the_edge_list_are_one_line_naming_the_file(tmp_path, change, message):
    folder = tgb_folder(tmp_path)
    path = _edit(folder, "val", change)
    with pytest.raises(InputError, match=message) as err:
        read_source("tgb", folder)
    assert "\n" not in str(err.value) and str(err.value).startswith(str(path))


class _RunsACommand:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(str(self.marker))}",)


def test_a_pickle_that_would_run_code_is_refused_and_nothing_runs(tmp_path):
    folder = tgb_folder(tmp_path)
    marker = tmp_path / "it-ran"
    path = folder / f"{NAME}_test_ns_v2.pkl"
    path.write_bytes(pickle.dumps({(0, 7, 1): _RunsACommand(marker)}))
    with pytest.raises(InputError, match=r"refused: the pickle would call (posix|nt)\.system.*nothing was run") as err:
        read_source("tgb", folder)
    assert "\n" not in str(err.value) and str(err.value).startswith(str(path))
    assert not marker.exists()


@pytest.mark.parametrize("damage,where,message", [
    (lambda f: (f / f"{NAME}_test_ns_v2.pkl").unlink(), "folder", "tgbl-toy_test_ns_v2.pkl is missing"),
    (lambda f: (f / f"{NAME}_val_ns_v2.pkl").write_bytes(b"not a pickle"), f"{NAME}_val_ns_v2.pkl",
     "not a pickle of TGB's negatives"),
    (lambda f: (f / f"{NAME}_edgelist_v2.csv").unlink(), "folder", "no <name>_edgelist_v<k>.csv"),
    (lambda f: (f / f"{NAME}_edgelist_v2.csv").write_text("user_id,item_id,timestamp\n1,x,3\n"),
     f"{NAME}_edgelist_v2.csv", r"column 2 holds 'x' at data row 1: TGB's source-first layout has integer node "
     r"ids \(a first header field ts, time, timestamp, day or date marks the time-first layout"),
    (lambda f: (f / f"{NAME}_edgelist_v2.csv").write_text("user_id,item_id,timestamp\n1,2,soon\n"),
     f"{NAME}_edgelist_v2.csv", "the time column holds 'soon' at data row 1"),
    (lambda f: (f / f"{NAME}_edgelist_v2.csv").write_text("user_id,item_id,timestamp\n"),
     f"{NAME}_edgelist_v2.csv", "no data rows"),
    (lambda f: (f / "other_edgelist.csv").write_text("a,b,c\n1,2,3\n"), "folder", "2 edge lists here"),
])
def test_bad_input_is_one_line_naming_the_file(tmp_path, damage, where, message):
    folder = tgb_folder(tmp_path)
    damage(folder)
    with pytest.raises(InputError, match=message) as err:
        read_source("tgb", folder)
    path = folder if where == "folder" else folder / where
    assert "\n" not in str(err.value) and str(err.value).startswith(f"{path}:")


def test_a_missing_folder_is_one_line(tmp_path):
    with pytest.raises(InputError, match="not found: expected TGB's dataset folder") as err:
        read_source("tgb", tmp_path / "nowhere")
    assert str(tmp_path / "nowhere") in str(err.value)


def test_validation_events_without_negatives_are_one_line_naming_the_folder(tmp_path):
    folder = tgb_folder(tmp_path)
    _edit(folder, "val", lambda folder, ns: dict(list(ns.items())[1:]))
    message = (r"the negatives files list no negatives for 1 of the 48 validation and test events of "
               r"tgbl-toy_edgelist_v2.csv \(first: key \(\d+, \d+, \d+\), data row \d+\)")
    with pytest.raises(InputError, match=message) as err:
        read_source("tgb", folder)
    assert "\n" not in str(err.value) and str(err.value).startswith(f"{folder}:")
