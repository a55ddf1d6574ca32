"""dynagnn.atomic, the one writer (issue 34, "Data loss"): an output replaces only its own kind, a full
disk is named and changes nothing, and the temporaries of dead writers are removed."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from dynagnn import atomic
from dynagnn.atomic import (NoSpaceError, ReplaceRefused, folder_refusal, is_dynagnn_store, remove_stale_temporaries,
                            remove_stale_temporaries_in, replace_refusal, write_all, write_atomic, write_text)
from dynagnn.tables import write_table
from tests.badinput.common import dead_pid, snapshot


def fake_store(path: Path, attrs: dict | None = None) -> Path:
    path.mkdir(parents=True)
    attributes = {"schema_version": 2, "name": "x"} if attrs is None else attrs
    (path / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": attributes}))
    (path / "snapshots").mkdir()
    (path / "snapshots" / "c.0").write_bytes(b"old")
    return path


def make_dir(tmp: Path) -> None:
    tmp.mkdir()
    (tmp / "new").write_text("new")


# ------------------------------------------------------------------ an output replaces only its own kind

def test_a_folder_that_is_not_a_store_is_never_replaced(tmp_path):
    """The ingest accident: ``--out results/mygraph`` held trained models; the store writer would have
    renamed the folder aside and deleted it."""
    mine = tmp_path / "mygraph"
    (mine / "tgcn" / "sequential-1").mkdir(parents=True)
    (mine / "tgcn" / "sequential-1" / "model.pt").write_bytes(b"weights")
    (mine / "notes.txt").write_text("keep me")
    before = snapshot(tmp_path)
    with pytest.raises(ReplaceRefused, match=r"mygraph: a folder holding 2 entries \(notes\.txt, tgcn\) is there, "
                                             r"not a dynagnn store .* such as .*mygraph/store\.zarr"):
        write_atomic(mine, make_dir)
    assert snapshot(tmp_path) == before  # nothing written, no temporary left


@pytest.mark.parametrize("attrs", [{}, {"name": "someone else's"}])
def test_a_zarr_group_of_another_program_is_not_a_store(tmp_path, attrs):
    other = fake_store(tmp_path / "other.zarr", attrs)
    assert not is_dynagnn_store(other)
    with pytest.raises(ReplaceRefused, match="not a dynagnn store"):
        write_atomic(other, make_dir)
    assert (other / "snapshots" / "c.0").read_bytes() == b"old"


def test_a_store_and_an_empty_folder_are_replaced(tmp_path):
    store = fake_store(tmp_path / "store.zarr")
    assert is_dynagnn_store(store)
    write_atomic(store, make_dir)
    assert sorted(p.name for p in store.iterdir()) == ["new"]
    (tmp_path / "empty").mkdir()
    write_atomic(tmp_path / "empty", make_dir)
    assert (tmp_path / "empty" / "new").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "store.zarr"]


def test_a_file_output_never_replaces_a_folder_and_a_folder_never_a_file(tmp_path):
    # a table written over a store (by the Python API, where no flag check stands in front)
    store = fake_store(tmp_path / "store.zarr")
    before = snapshot(tmp_path)
    with pytest.raises(ReplaceRefused, match=r"store\.zarr: .* is in the way of the file"):
        write_table(pd.DataFrame({"a": [1]}), store, "")
    with pytest.raises(ReplaceRefused, match=r"is in the way of the file"):
        write_text(tmp_path / "store.zarr", "x")
    (tmp_path / "plain").write_text("data")
    before = snapshot(tmp_path)
    with pytest.raises(ReplaceRefused, match=r"plain: a file is in the way of the store"):
        write_atomic(tmp_path / "plain", make_dir)
    assert snapshot(tmp_path) == before


def test_a_set_of_outputs_is_refused_before_any_is_written(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x").write_text("x")
    before = snapshot(tmp_path)
    with pytest.raises(ReplaceRefused):
        write_all({tmp_path / "a.txt": lambda t: t.write_text("a"), tmp_path / "b": make_dir})
    assert snapshot(tmp_path) == before


def test_a_path_without_a_name_is_refused_in_one_line(tmp_path, monkeypatch):
    """``--out .`` (a ValueError traceback from with_name before) names the folder it means."""
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "results").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    for path in (".", "results/..", Path(".")):
        reason = replace_refusal(path, "store")
        assert reason.startswith(f"{tmp_path / 'work'}: a folder holding 1 entry (results)"), reason
        with pytest.raises(ReplaceRefused):
            write_atomic(path, make_dir)
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["results"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]


def test_folder_refusal_names_what_is_not_the_stages(tmp_path):
    known = ("metrics.parquet", "model.pt")
    assert folder_refusal(tmp_path / "absent", known) is None
    run = tmp_path / "run"
    run.mkdir()
    assert folder_refusal(run, known) is None
    (run / "model.pt").write_bytes(b"")
    (run / ".model.pt.tmp-1-0123abcd").write_bytes(b"")  # hidden: a temporary, not a foreign file
    assert folder_refusal(run, known) is None
    (run / "thesis.tex").write_text("")
    assert folder_refusal(run, known, "a training run's out-dir") == (
        f"{run}: not a training run's out-dir: it holds 1 other entry (thesis.tex) besides the files it would hold "
        "(metrics.parquet, model.pt); nothing was changed: give a new or empty folder")
    (tmp_path / "f").write_text("")
    assert "a file is in the way" in folder_refusal(tmp_path / "f", known)


# ------------------------------------------------------------------ a full disk

def _full(tmp):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("fail", [
    _full,
    lambda tmp: (_ for _ in ()).throw(OSError("[Errno 28] Error writing bytes to file. Detail: [errno 28] "
                                              "No space left on device")),  # pyarrow: no errno attribute
    lambda tmp: (_ for _ in ()).throw(OSError(errno.EDQUOT, "Disk quota exceeded")),
], ids=["ENOSPC", "pyarrow's text", "EDQUOT"])
def test_a_full_disk_is_named_and_changes_nothing(tmp_path, fail):
    (tmp_path / "a.txt").write_text("old a")
    (tmp_path / "b.bin").write_bytes(b"old b")
    before = snapshot(tmp_path)
    with pytest.raises(NoSpaceError, match=rf"^no space left on device writing {tmp_path / 'b.bin'}\b") as info:
        write_all({tmp_path / "a.txt": lambda t: t.write_text("new a"), tmp_path / "b.bin": fail})
    assert info.value.errno == errno.ENOSPC and info.value.path == tmp_path / "b.bin"
    assert snapshot(tmp_path) == before


def test_torchs_write_failure_is_a_full_disk_only_when_the_disk_is_full(tmp_path, monkeypatch):
    """torch.save says "enforce fail ... unexpected pos" and no errno: the disk is asked."""
    def torch_fails(tmp):
        tmp.write_bytes(b"PK\x03\x04half")
        raise RuntimeError("[enforce fail at inline_container.cc:595] . unexpected pos 1088 vs 1024")

    monkeypatch.setattr(atomic, "free_bytes", lambda folder: 4096)
    with pytest.raises(NoSpaceError, match=r"no space left on device writing .*model\.pt \(0\.0 MiB free there\)"):
        write_atomic(tmp_path / "model.pt", torch_fails)
    monkeypatch.setattr(atomic, "free_bytes", lambda folder: 10 * 2**30)
    with pytest.raises(RuntimeError, match="enforce fail") as info:
        write_atomic(tmp_path / "model.pt", torch_fails)
    assert not isinstance(info.value, NoSpaceError)
    assert list(tmp_path.iterdir()) == []


def test_a_writers_own_error_passes_unchanged(tmp_path):
    with pytest.raises(ValueError, match="bad value"):
        write_atomic(tmp_path / "x", lambda t: (_ for _ in ()).throw(ValueError("bad value")))
    with pytest.raises(PermissionError):
        write_atomic(tmp_path / "x", lambda t: (_ for _ in ()).throw(PermissionError(errno.EACCES, "denied")))
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ temporaries of dead writers

def test_stale_temporaries_of_dead_writers_are_removed_by_the_next_write(tmp_path):
    dead = dead_pid()
    stale = [tmp_path / f".model.pt.tmp-{dead}-0123abcd", tmp_path / f".model.pt.old-{dead}-4567cdef"]
    stale[0].write_bytes(b"PK half a checkpoint")
    stale[1].mkdir()
    live = tmp_path / f".model.pt.tmp-{os.getpid()}-89abcdef"  # a running writer's
    live.write_bytes(b"")
    other = tmp_path / f".metrics.parquet.tmp-{dead}-0123abcd"  # another target's: its own writer's business
    other.write_bytes(b"")
    odd = [tmp_path / f".model.pt.tmp-{dead}-xyz", tmp_path / f"model.pt.tmp-{dead}-0123abcd"]  # not ours
    for p in odd:
        p.write_bytes(b"")
    write_text(tmp_path / "model.pt", "new")
    assert not any(os.path.lexists(p) for p in stale)
    assert live.exists() and other.exists() and all(p.exists() for p in odd)
    assert remove_stale_temporaries(tmp_path / "metrics.parquet") == [other]


def test_stale_temporaries_in_a_folder(tmp_path):
    dead = dead_pid()
    names = [f".metrics.parquet.tmp-{dead}-0123abcd", f".store.zarr.old-{dead}-0123abcd",
             f".plan-2.json.tmp-{dead}-aaaabbbb"]
    for name in names:
        (tmp_path / name).write_bytes(b"")
    keep = [f".x.tmp-{os.getpid()}-0123abcd", "metrics.parquet", f".x.tmp-{dead}-0123abcZ"]
    for name in keep:
        (tmp_path / name).write_bytes(b"")
    removed = remove_stale_temporaries_in(tmp_path)
    assert sorted(p.name for p in removed) == sorted(names)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(keep)
    assert remove_stale_temporaries_in(tmp_path / "absent") == []
