"""Bad PyTorch Geometric Temporal inputs (issue 18, items 8 and 9): a layout the reader does not
know, a file of a known layout with a broken value, options that do not fit the layout. Each row
runs ``dynagnn ingest`` on a fixture of the real layouts (tests/data/fixtures/pyg_*.json), changed
where the row says, and asserts the refusal contract (tests/badinput/common.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.badinput.common import assert_refused

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"


def changed(name: str, change=None):
    """The fixture ``name`` written under the test's folder after ``change(data)``."""
    def make(tmp: Path) -> str:
        data = json.loads((FIXTURES / name).read_text())
        if change is not None:
            change(data)
        (tmp / name).write_text(json.dumps(data))
        return str(tmp / name)
    return make


def _without(key: str):
    return lambda data: data.pop(key)


# (id, input, reader options, message regex)
ROWS = [
    ("chickenpox without FX", changed("pyg_chickenpox.json", _without("FX")), {},
     r"pyg_chickenpox\.json: not a PyTorch Geometric Temporal layout: found the keys 'edges', "
     r"'node_ids'; known layouts .*chickenpox \('edges', 'FX'\)"),
    ("node-link without links", changed("pyg_montevideo_bus.json", _without("links")), {},
     r"found the keys 'directed', 'graph', 'multigraph', 'nodes'.*montevideo_bus \('nodes', 'links'\)"),
    ("link to no node", changed("pyg_montevideo_bus.json",
                                lambda d: d["links"][0].__setitem__("source", 42)), {},
     r"pyg_montevideo_bus\.json: links\[0\]\.source: no node 42"),
    ("NaN block", changed("pyg_windmill.json", lambda d: d["block"][4].__setitem__(1, float("nan"))),
     {}, r"pyg_windmill\.json: block\[4\]\[1\]: nan is not a finite number"),
    ("bad MTM frame", changed("pyg_mtm.json", lambda d: d["0"].__setitem__("1", "(1, x, 2)")), {},
     r"pyg_mtm\.json: 0\['1'\]: expected '\(x, y, z\)'"),
    ("options on MTM", changed("pyg_mtm.json"), {"horizon": 2},
     r"pyg_mtm\.json: options horizon do not apply to the mtm layout"),
    ("too few steps", changed("pyg_pedalme.json"), {"lags": 5, "horizon": 2},
     r"pyg_pedalme\.json: 6 time steps leave no snapshot for lags 5 and horizon 2"),
    ("feature_mode off Tennis", changed("pyg_wikivital.json"), {"feature_mode": "raw"},
     r"option feature_mode applies to the twitter_tennis layout; this file is wikivital_mathematics"),
    ("horizon 0 with lags", changed("england_covid_small.json"), {"horizon": 0},
     r"options lags 8 and horizon 0: .*horizon must be >= 1 when lags >= 1"),
    ("bad lags", changed("england_covid_small.json"), {"lags": "8"},
     r"config key datasets\.d\.options\.lags: '8' is not of type 'integer'"),
    ("bad transform", changed("england_covid_small.json"), {"transform": "log"},
     r"options\.transform: 'log' is not one of \['none', 'log1p', 'standardize'.*\(did you mean 'log1p'\?\)"),
    ("log1p of -1", changed("pyg_chickenpox.json"), {"transform": "log1p"},
     r"transform log1p needs values above -1: the series has -1\.0 at step 1, node 2"),
    ("unknown option", changed("pyg_chickenpox.json"), {"lag": 2},
     r"datasets\.d\.options: unknown key 'lag' \(did you mean 'lags'\?\); "
     r"allowed: lags, horizon, transform, feature_mode"),
]


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_bad_pyg_temporal_input(capfd, tmp_path, row):
    _, make, options, message = row
    spec = {"format": "pyg-temporal-json", "path": make(tmp_path), "options": options,
            "snapshots": {"by": "source"}}
    out = tmp_path / "results" / "d" / "store.zarr"
    assert_refused(capfd, ["ingest", "--dataset", "d", "--spec", json.dumps(spec), "--out", str(out)],
                   tmp_path, message)


@pytest.mark.parametrize("options, message", [
    ("{transform: standardise}", r"options\.transform: .*did you mean 'standardize'"),
    ("{lags: -2}", r"options\.lags: -2 is less than the minimum of 0"),
    ("{feature_mode: diagonal}", r"options\.feature_mode: 'diagonal' is not one of \['encoded', 'raw'"),
])
def test_bad_option_values_in_check_config(capfd, tmp_path, options, message):
    """check-config refuses a bad value of the reader's options without reading the file."""
    config = tmp_path / "config.yaml"
    config.write_text(f"datasets:\n  d: {{format: pyg-temporal-json, path: absent.json, "
                      f"options: {options}}}\n")
    assert_refused(capfd, ["check-config", str(config)], tmp_path, message)
