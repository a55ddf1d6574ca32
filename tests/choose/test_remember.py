"""Remembered choices (issue 54): the second run of the same job recalls its choice and times nothing;
what determines a choice is its key; a damaged, stale or untrainable entry is ignored with a log line;
``choose_again`` chooses anew and replaces it."""

import json
import logging

import pytest

from dynagnn.choose import remember
from dynagnn.choose.request import Request
from dynagnn.data.store import open_store

from tests.testing.stores import small_store

TINY = dict(model="tgcn", hidden=6, window=3, epochs=2, seed=3, cores=2)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return small_store(tmp_path_factory.mktemp("remember") / "link.zarr", num_snapshots=12)


def _forbid_choosing(monkeypatch):
    from dynagnn.choose import predict, resolve

    def nothing(*args, **kwargs):
        raise AssertionError("a remembered choice builds and measures nothing")
    for module, name in ((predict, "quick_base"), (resolve, "run_candidates"), (resolve, "plain_model")):
        monkeypatch.setattr(module, name, nothing)


def test_the_second_run_of_the_same_job_recalls_the_choice(store, tmp_path, monkeypatch, choices_folder):
    from dynagnn import api
    from dynagnn.choose.resolve import resolve

    first = resolve(store, Request.of(**TINY))
    assert first.report["source"] == "prediction" and len(list(choices_folder.iterdir())) == 1
    _forbid_choosing(monkeypatch)
    # another seed and learning rate: the same epochs to choose for
    again = resolve(store, Request.of(**{**TINY, "seed": 9, "lr": 0.1}))
    rep = again.report
    assert rep["source"] == "remembered" and rep["remembered_chosen_by"] == "prediction"
    assert rep["chosen"] == first.report["chosen"] and again.config.strategy == first.config.strategy
    assert again.config.options == first.config.options and again.config.threads == first.config.threads
    assert rep["remembered_from"].startswith(str(choices_folder)) and rep["trial_seconds_total"] == 0.0
    assert "remembered" in again.line and "--choose-again" in again.line
    # through the API: auto.json says where the choice came from
    api.train(store, tmp_path / "run", Request.of(**TINY), progress=False)
    doc = json.loads((tmp_path / "run" / "auto.json").read_text())
    assert doc["source"] == "remembered" and doc["chosen"] == first.report["chosen"]


def test_what_determines_a_choice_is_its_key(store, tmp_path):
    s = open_store(store)
    key = remember.what(s, Request.of(**TINY), 2)
    assert remember.what(s, Request.of(**{**TINY, "seed": 1, "lr": 0.5, "patience": 9}), 2) == key
    for other in (remember.what(s, Request.of(**{**TINY, "epochs": 30}), 2),
                  remember.what(s, Request.of(**{**TINY, "hidden": 8}), 2),
                  remember.what(s, Request.of(**{**TINY, "frame_size": 2}), 2),
                  remember.what(s, Request.of(**TINY), 1),
                  remember.what(open_store(small_store(tmp_path / "other.zarr", num_snapshots=13)), Request.of(**TINY), 2)):
        assert remember.path_of(other) != remember.path_of(key)
    assert key["torch"] and key["device"] == "cpu"


@pytest.mark.parametrize("spoil, words", [
    (lambda path, entry: path.write_text("{not json"), "is damaged"),
    (lambda path, entry: path.write_text(json.dumps({**entry, "chosen": {"strategy": "sequential"}})), "is damaged"),
    (lambda path, entry: path.write_text(json.dumps({**entry, "what": {**entry["what"], "cores": 64}})),
     "is stale"),
    (lambda path, entry: path.write_text(json.dumps({**entry, "chosen": {**entry["chosen"], "strategy": "gone"}})),
     "cannot be trained now"),
])
def test_a_damaged_stale_or_untrainable_entry_is_ignored_with_a_log_line(store, caplog, spoil, words):
    from dynagnn.choose.resolve import resolve

    resolve(store, Request.of(**TINY))
    path = remember.path_of(remember.what(open_store(store), Request.of(**TINY), 2))
    spoil(path, json.loads(path.read_text()))
    caplog.set_level(logging.INFO, logger="dynagnn")
    again = resolve(store, Request.of(**TINY))
    assert again.report["source"] == "prediction"
    assert any(words in m and "anew" in m for m in caplog.messages)
    # chosen anew, and remembered again: the next run recalls it
    assert json.loads(path.read_text())["chosen"]["label"] == again.report["chosen"]
    assert resolve(store, Request.of(**TINY)).report["source"] == "remembered"


def test_choose_again_chooses_anew_and_replaces_the_entry(store):
    from dynagnn.choose.resolve import resolve

    resolve(store, Request.of(**TINY))
    path = remember.path_of(remember.what(open_store(store), Request.of(**TINY), 2))
    entry = json.loads(path.read_text())
    entry["report"]["marker"] = 1
    path.write_text(json.dumps(entry))
    again = resolve(store, Request.of(**TINY, choose_again=True))
    assert again.report["source"] == "prediction" and "marker" not in json.loads(path.read_text())["report"]
    # choose_again is not part of the key: the run without it recalls the new choice
    assert resolve(store, Request.of(**TINY)).report["source"] == "remembered"


def test_a_folder_that_cannot_be_written_costs_only_the_memory(store, monkeypatch, tmp_path, caplog):
    from dynagnn.choose.resolve import resolve

    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder would be")
    monkeypatch.setenv(remember.ENV, str(blocked / "choices"))
    caplog.set_level(logging.INFO, logger="dynagnn")
    assert resolve(store, Request.of(**TINY)).report["source"] == "prediction"
    assert any("the choice is not remembered" in m for m in caplog.messages)
