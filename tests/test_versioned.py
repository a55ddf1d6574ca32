"""The one reader of versioned JSON artefacts: every refusal in its exact words, and a round trip."""

import json

import pytest

from dynagnn.atomic import write_text
from dynagnn.errors import CostError, InputError
from dynagnn.versioned import read_versioned

KIND = "dynagnn.test.artefact"
ARGS = dict(kind=KIND, version=2, what="test artefact", producer="the test stage")


def refusal(source, error=InputError, **kw):
    with pytest.raises(error) as info:
        read_versioned(source, **ARGS, error=error, **kw)
    assert type(info.value) is error
    return str(info.value)


def test_round_trip(tmp_path):
    d = {"kind": KIND, "version": 2, "rows": [1, 2.5, None], "meta": {"name": "é"}}
    path = write_text(tmp_path / "a.json", json.dumps(d))
    assert read_versioned(path, **ARGS) == d
    assert read_versioned(str(path), **ARGS) == d
    assert read_versioned("<text>", text=json.dumps(d), **ARGS) == d


def test_missing_file(tmp_path):
    p = tmp_path / "none.json"
    assert refusal(p) == f"{p}: test artefact not found (run the test stage first)"


def test_unreadable_file(tmp_path):
    assert refusal(tmp_path) == f"{tmp_path}: not a readable test artefact JSON (Is a directory)"
    p = tmp_path / "latin1.json"
    p.write_bytes(b'{"kind": "\xe9"}')
    assert refusal(p) == f"{p}: not a readable test artefact JSON (not UTF-8 text: byte 10)"


def test_not_json_names_the_line(tmp_path):
    p = tmp_path / "a.json"
    p.write_text('{"kind": 1,\n "version": 2,\n')
    assert refusal(p) == (f"{p}: not a readable test artefact JSON (not valid JSON: "
                          "Expecting property name enclosed in double quotes, line 3)")


def test_not_an_object(tmp_path):
    p = tmp_path / "a.json"
    p.write_text("[1, 2]")
    assert refusal(p) == f"{p}: not a test artefact (expected a JSON object, got an array)"


def test_another_kind_or_none(tmp_path):
    p = tmp_path / "a.json"
    p.write_text(json.dumps({"kind": "dynagnn.other", "version": 2}))
    assert refusal(p) == f"{p}: not a test artefact (kind 'dynagnn.other', expected '{KIND}')"
    p.write_text(json.dumps({"version": 2}))
    assert refusal(p) == f"{p}: not a test artefact (kind None, expected '{KIND}')"


def test_another_version_says_what_to_rerun(tmp_path):
    p = tmp_path / "a.json"
    p.write_text(json.dumps({"kind": KIND, "version": 1}))
    assert refusal(p) == f"{p}: test artefact version 1, this dynagnn reads version 2; re-run the test stage"
    p.write_text(json.dumps({"kind": KIND}))
    assert refusal(p) == f"{p}: test artefact version None, this dynagnn reads version 2; re-run the test stage"


def test_the_caller_chooses_the_error_class(tmp_path):
    p = tmp_path / "none.json"
    assert refusal(p, CostError) == f"{p}: test artefact not found (run the test stage first)"
    with pytest.raises(InputError) as info:
        read_versioned(p, **ARGS)
    assert info.value.path == p


def test_text_is_named_by_its_source():
    assert refusal("<plan json>", text="{") == ("<plan json>: not a readable test artefact JSON (not valid JSON: "
                                                "Expecting property name enclosed in double quotes, line 1)")
    assert refusal("<plan json>", CostError, text="3") == (
        "<plan json>: not a test artefact (expected a JSON object, got a number)")
