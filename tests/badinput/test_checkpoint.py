"""Bad-input table, the checkpoint given to ``train --resume`` (issue 18): a file that is not a
model.pt of a training run is refused in plain words (torch.load's own text for a text file was "101")."""

from __future__ import annotations

import pickle

import pytest
import torch

from .common import assert_refused


def _truncated(p):
    torch.save({"version": 1, "state_dict": {"w": torch.zeros(100)}}, p)
    p.write_bytes(p.read_bytes()[:200])


CHECKPOINTS = {
    "text file": (lambda p: p.write_text("101 102\n"),
                  r"not a file torch\.save wrote \(no zip archive: it begins b'101 '; unpickling failed: "),
    "empty file": (lambda p: p.write_bytes(b""), r"the file is empty"),
    "truncated model.pt": (_truncated, r"the file is truncated or damaged"),
    "plain pickle": (lambda p: p.write_bytes(pickle.dumps({"version": 1})),
                     r"not a file torch\.save wrote \(no zip archive: it begins b'\\x80.*; unpickling failed: it holds objects "
                     r"other than tensors"),
    "a tensor": (lambda p: torch.save(torch.zeros(3), p), r"torch\.save wrote a Tensor there, not the dict"),
    "a dict of other keys": (lambda p: torch.save({"weights": torch.zeros(3)}, p),
                             r"a dict without the keys version, model, task, fingerprint"),
    "another version": (lambda p: torch.save({"version": 99}, p), r"checkpoint version 99, this dynagnn reads"),
    "a folder": (lambda p: p.mkdir(), r"not a file \(give the model\.pt a training run wrote\)"),
}


@pytest.mark.parametrize("case", CHECKPOINTS)
def test_bad_checkpoint_refused(capfd, tmp_path, intact, case):  # noqa: F811
    make, message = CHECKPOINTS[case]
    ck = tmp_path / "model.pt"
    make(ck)
    argv = ["train", str(intact), "--out-dir", str(tmp_path / "run"), "--model", "tgcn", "--epochs", "1",
            "--strategy", "sequential", "--resume", str(ck)]   # auto would refuse first: no auto.json to resume
    line = assert_refused(capfd, argv, tmp_path, message)
    assert line.startswith(f"dynagnn train: error: {ck}: ")
