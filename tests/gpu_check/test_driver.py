"""``make gpu-check``'s driver, forced to the CPU with tiny stores: it writes the JSON and the Markdown
table with every rung present (measured, or skipped with a reason), and a failing rung is a row, not
a crash."""

import json

import pytest

from benchmarks import gpu_check

SYSTEMS = gpu_check.SYSTEMS


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu-check")
    import os

    old = os.environ.get("DYNAGNN_BENCH_DIR")
    os.environ["DYNAGNN_BENCH_DIR"] = str(out / "bench")
    try:
        code = gpu_check.main(["--device", "cpu", "--tiny", "--no-tests", "--out", str(out)])
    finally:
        if old is None:
            del os.environ["DYNAGNN_BENCH_DIR"]
        else:
            os.environ["DYNAGNN_BENCH_DIR"] = old
    return code, out, json.loads((out / "gpu-check.json").read_text()), (out / "gpu-check.md").read_text()


@pytest.mark.slow
def test_every_rung_writes_its_rows(report):
    code, _, data, md = report
    assert code == 0
    assert data["environment"]["device"] == "cpu" and data["tiny"] is True
    assert set(data["rung_seconds"]) == set(SYSTEMS)
    rows = data["rows"]
    for system in SYSTEMS.values():
        mine = [r for r in rows if r["system"] == system]
        assert any(r["status"] == "measured" and r["value"] is not None for r in mine), system
        assert all(r["status"] in ("measured", "skipped") for r in mine), mine
    # the rows that need a GPU say why on the CPU
    skipped = {r["rung"]: r["note"] for r in rows if r["status"] == "skipped"}
    assert "needs a GPU" in skipped["group 1x2 under MPS"]
    assert "nccl needs one per worker" in skipped["tgnn over nccl, 2 GPUs"]
    # ratios agree with the epochs they come from
    epoch = {(r["system"], r["rung"]): r["value"] for r in rows if r["measure"] == "epoch"}
    pipad = next(r for r in rows if r["system"] == "PiPAD" and r["measure"] == "speed-up over the PyG-T loop"
                 and r["rung"].endswith(": PiPAD"))
    label = pipad["rung"].rsplit(": ", 1)[0]
    assert pipad["value"] == pytest.approx(epoch[("PiPAD", f"{label}: pyg")] / epoch[("PiPAD", f"{label}: PiPAD")])
    # the table holds one line per row
    table = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| system")]
    assert len(table) == len(rows)


def test_a_failing_rung_is_a_row_and_the_exit_code(tmp_path, monkeypatch):
    def broken(c):
        raise RuntimeError("device lost\nsecond line")

    monkeypatch.setitem(gpu_check.LADDER, "esdg", broken)
    code = gpu_check.main(["--device", "cpu", "--tiny", "--no-tests", "--rungs", "esdg", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "gpu-check.json").read_text())
    assert code == 1
    assert data["rows"] == [{"system": "ESDG", "rung": "esdg", "measure": "-", "value": None, "unit": "",
                             "note": "RuntimeError: device lost", "status": "failed"}]


def test_a_spent_budget_skips_the_rest_with_a_reason(tmp_path):
    code = gpu_check.main(["--device", "cpu", "--tiny", "--no-tests", "--rungs", "blad,sven", "--budget", "0",
                           "--out", str(tmp_path)])
    data = json.loads((tmp_path / "gpu-check.json").read_text())
    assert code == 0
    assert [(r["system"], r["status"]) for r in data["rows"]] == [("BLAD", "skipped"), ("Sven", "skipped")]
    assert all("budget" in r["note"] for r in data["rows"])


def test_unknown_rung_and_missing_cuda_are_refused(tmp_path, capsys):
    assert gpu_check.main(["--device", "cpu", "--rungs", "pipad,nope", "--out", str(tmp_path)]) == 2
    assert "unknown ['nope']" in capsys.readouterr().err
    import torch

    if not torch.cuda.is_available():
        assert gpu_check.main(["--out", str(tmp_path)]) == 2
        assert "--device cpu" in capsys.readouterr().err


def test_a_merged_record_names_each_rows_run_and_its_note():
    # docs/gpu-check/ keeps records merged from runs on one machine: the table says which run a row is
    env = {"device": "cuda", "gpu": "G", "torch": "t", "python": "p", "cpus": 1}
    row = {"system": "BLAD", "rung": "group 1x2", "measure": "epoch", "value": 0.5, "unit": "s", "note": "",
           "status": "measured"}
    md = gpu_check.markdown({"environment": env, "rows": [{**row, "run": 1}, {**row, "run": 2}],
                             "note": "run 2 is BLAD again"})
    lines = md.splitlines()
    assert "| system | rung | measure | value | note | run |" in lines
    assert "| BLAD | group 1x2 | epoch | 0.5 s |  | 1 |" in lines and "| BLAD | group 1x2 | epoch | 0.5 s |  | 2 |" in lines
    assert lines[-1] == "run 2 is BLAD again"
    plain = gpu_check.markdown({"environment": env, "rows": [row]}).splitlines()
    assert "| system | rung | measure | value | note |" in plain and plain[-1] == "| BLAD | group 1x2 | epoch | 0.5 s |  |"
