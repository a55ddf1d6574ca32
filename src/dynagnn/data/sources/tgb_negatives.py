"""TGB's pre-generated evaluation negatives, matched to the events of their edge list.

``<name>_val_ns_v<k>.pkl`` and ``<name>_test_ns_v<k>.pkl`` are what TGB's ``NegativeEdgeGenerator``
(tgb/linkproppred/negative_generator.py) saves with ``pickle.dump``, and its ``NegativeEdgeSampler``
(negative_sampler.py) loads and queries by ``eval_set[(pos_s, pos_d, pos_t)]``: a dict from each
validation (test) edge's ``(src, dst, t)``, in TGB's node ids and integer times, to its K negative
destinations (a numpy array, float when the historical draw was empty; identical edges share one key).
They load with :func:`.safe_pickle.load_plain_pickle`: a pickle that would call anything but plain
containers, numbers and numpy arrays is refused, unrun.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dynagnn.errors import InputError

from .safe_pickle import load_plain_pickle

SPLITS = ("training", "validation", "test")
WHAT = "TGB's negatives (a dict {(src, dst, t): negative destinations})"


def read_negatives(files: dict[str, Path], csv: Path, keys_of_rows, pos: np.ndarray, split: np.ndarray,
                   id_map: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(event int64 [M] increasing, dst int64 [M, K] dense ids) of TGB's ``files`` {"val": path,
    "test": path}: each key matched to every event of the edge list ``csv`` it names, and in its
    split; one K; destinations that are nodes; every validation and test event listed. ``keys_of_rows``:
    (src, dst, t) int64 [E] of each file row in TGB's ids; ``pos``: the event index of each row;
    ``split``: each event's (0, 1, 2); ``id_map``: (TGB's node ids sorted, their dense ids).
    InputError in one line naming the file otherwise."""
    rows = pd.DataFrame(dict(zip("sdt", keys_of_rows)))
    rows["row"] = np.arange(len(rows), dtype=np.int64)
    events, dsts = [], []
    for which, f in files.items():
        keys, neg = _entries(f)
        if dsts and neg.shape[1] != dsts[0].shape[1]:
            raise InputError(f"{neg.shape[1]} negatives per edge, but {dsts[0].shape[1]} in {files['val'].name}: "
                             "TGB gives every edge one number of negatives", f)
        matched = pd.DataFrame({"s": keys[:, 0], "d": keys[:, 1], "t": keys[:, 2],
                                "key": np.arange(len(keys))}).merge(rows, on=["s", "d", "t"], how="left")
        if matched["row"].isna().any():
            k = int(matched["key"][matched["row"].isna()].iloc[0])
            raise InputError(f"the negatives file does not match its edge list: key {_key(keys[k])} is no event of "
                             f"{csv.name} (keys are TGB's node ids and integer times)", f)
        key, row = matched["key"].to_numpy(np.int64), matched["row"].to_numpy(np.int64)
        want = 1 if which == "val" else 2
        wrong = np.flatnonzero(split[pos[row]] != want)
        if wrong.size:
            i = int(wrong[0])
            raise InputError(f"the negatives file does not match its edge list: key {_key(keys[key[i]])} is a "
                             f"{SPLITS[split[pos[row[i]]]]} event of {csv.name} (TGB's split), not a {SPLITS[want]} "
                             "one", f)
        dense = _dense(neg, *id_map)
        if (dense < 0).any():
            k, j = (int(v) for v in np.argwhere(dense < 0)[0])
            raise InputError(f"negative destination {int(neg[k, j])} of key {_key(keys[k])} is no node of "
                             f"{csv.name}", f)
        events.append(pos[row])
        dsts.append(dense[key])
    event, dst = np.concatenate(events), np.concatenate(dsts)
    order = np.argsort(event, kind="stable")
    event, dst = event[order], dst[order]
    needed = np.flatnonzero(split > 0)
    if not np.array_equal(event, needed):
        missing = np.setdiff1d(needed, event)
        first = int(np.flatnonzero(pos == missing[0])[0])
        raise InputError(f"the negatives files list no negatives for {missing.size} of the {needed.size} validation "
                         f"and test events of {csv.name} (first: key {_key(rows.iloc[first][['s', 'd', 't']])}, data "
                         f"row {first + 1})", csv.parent)
    return event, dst


def _dense(ids: np.ndarray, tgb_ids: np.ndarray, dense: np.ndarray) -> np.ndarray:
    """The dense id of each of TGB's node ids in ``ids`` (-1 for one that is no node)."""
    at = np.minimum(np.searchsorted(tgb_ids, ids), tgb_ids.shape[0] - 1)
    return np.where(tgb_ids[at] == ids, dense[at], -1)


def _key(values) -> str:
    return "(" + ", ".join(str(int(v)) for v in values) + ")"


def _entries(f: Path) -> tuple[np.ndarray, np.ndarray]:
    """(keys int64 [M, 3], negatives int64 [M, K]) of one of TGB's negatives pickles."""
    d = load_plain_pickle(f, WHAT)
    if not isinstance(d, dict) or not d:
        raise InputError(f"expected {WHAT}, got {'an empty dict' if isinstance(d, dict) else type(d).__name__}", f)
    keys, values = list(d), list(d.values())
    bad = next((k for k in keys if not (isinstance(k, tuple) and len(k) == 3)), None)
    if bad is not None:
        raise InputError(f"key {bad!r} is not a (src, dst, t) triple: expected {WHAT}", f)
    sizes = np.array([np.size(v) for v in values])
    if (sizes != sizes[0]).any():
        i = int(np.argmax(sizes != sizes[0]))
        raise InputError(f"negative lists of different lengths ({sizes[0]} for key {keys[0]}, {sizes[i]} for key "
                         f"{keys[i]}): expected one number K for every edge, as TGB samples", f)
    if sizes[0] == 0:
        raise InputError("every negative list is empty: expected K >= 1 destinations per edge", f)
    return _integers(np.array(keys), f, "keys"), _integers(np.array(values).reshape(len(values), -1), f, "negatives")


def _integers(a: np.ndarray, f: Path, what: str) -> np.ndarray:
    if a.dtype.kind in "iu":
        return a.astype(np.int64)
    try:
        num = a.astype(np.float64)
    except (TypeError, ValueError):
        num = np.full(a.shape, np.nan)
    bad = ~np.isfinite(num) | (num != np.round(num))
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        raise InputError(f"{what} hold {a[i]!r}: expected integer node ids and times", f)
    return num.astype(np.int64)
