"""Auto on a machine other jobs share (issue 54): its candidates fill only the cores the others leave
(cpu_load.py), nothing is timed on a busy core, such a choice is not remembered, and a remembered
choice that needs more cores than are free is chosen anew."""

import json

import pytest

from dynagnn import cpu_load
from dynagnn.choose import remember
from dynagnn.choose.request import Request
from dynagnn.data.store import open_store

from tests.testing.stores import small_store

TINY = dict(model="tgcn", hidden=6, window=3, epochs=2, seed=3, cores=2)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return small_store(tmp_path_factory.mktemp("busy") / "link.zarr", num_snapshots=12)


def _all_but_one_busy(monkeypatch):
    """Every CPU of this process's but one kept busy by others (a machine of one CPU has no other)."""
    if len(cpu_load._cpus() or [0]) < 2:
        pytest.skip("one CPU: no core for another job to keep busy")
    monkeypatch.setenv("DYNAGNN_OTHERS_BUSY", str(len(cpu_load._cpus() or [0]) - 1))


def test_a_busy_machine_chooses_among_the_free_cores_and_remembers_nothing(store, monkeypatch, choices_folder):
    from dynagnn.choose import frame_timing
    from dynagnn.choose.resolve import resolve

    from dynagnn.cost import step_times

    timed_threads = []
    steps, frames = step_times.step_seconds, frame_timing.frame_seconds

    def spy_steps(store, model, hidden, t, thread_counts, *args, **kwargs):
        timed_threads.extend(thread_counts)
        return steps(store, model, hidden, t, thread_counts, *args, **kwargs)

    def spy_frames(store, config, model, threads, *args, **kwargs):
        timed_threads.append(threads)
        return frames(store, config, model, threads, *args, **kwargs)
    monkeypatch.setattr(step_times, "step_seconds", spy_steps)
    monkeypatch.setattr(frame_timing, "frame_seconds", spy_frames)
    _all_but_one_busy(monkeypatch)
    got = resolve(store, Request.of(**TINY))
    rep = got.report
    assert rep["cores"] == 1 and rep["cores_asked"] == 2 and rep["others_busy_cores"] == len(cpu_load._cpus()) - 1
    runnable = [r for r in rep["candidates"] if r["reason"] is None]
    assert runnable and all(r["workers"] * r["processes_per_worker"] * r["threads"] == 1 for r in runnable)
    assert got.config.threads == 1 and set(timed_threads) == {1}
    assert not list(choices_folder.iterdir())   # a choice under load is not the machine's


def test_a_remembered_choice_needing_busy_cores_is_chosen_anew(store, monkeypatch, choices_folder, caplog):
    from dynagnn.choose.resolve import resolve

    first = resolve(store, Request.of(**TINY))
    path = remember.path_of(remember.what(open_store(store), Request.of(**TINY), 2))
    entry = json.loads(path.read_text())
    entry["chosen"] = {**entry["chosen"], "threads": 2, "workers": 1}
    path.write_text(json.dumps(entry))
    assert first.report["source"] == "prediction"
    _all_but_one_busy(monkeypatch)
    with caplog.at_level("INFO", logger="dynagnn"):
        again = resolve(store, Request.of(**TINY))
    assert again.report["source"] == "prediction" and again.config.threads == 1
    assert "needs 2 cores; other jobs leave 1 free now: choosing anew" in caplog.text
    monkeypatch.setenv("DYNAGNN_OTHERS_BUSY", "0")   # free again: the remembered choice holds
    assert resolve(store, Request.of(**TINY)).report["source"] == "remembered"
