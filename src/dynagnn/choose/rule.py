"""The chooser's rule and its report.

:func:`choose` is the rule the choice ends with: the fastest candidate whose peak memory fits the
budget, by its trial (or, where the trials' share timed none, by its prediction); a tie (within
:data:`TIE`) goes to the simpler one (fewer processes, then the plainer strategy:
:meth:`~dynagnn.choose.candidates.Candidate.simplicity`); a budget below every candidate is one line
naming the smallest budget that would fit. :func:`report` is what ``auto.json`` holds and
:func:`summary_line` the log line.
"""

from __future__ import annotations

from dynagnn.choose.candidates import Candidate
from dynagnn.errors import ConfigError

TIE = 0.02          # measured epochs within 2% of each other are a tie


def choose(measured: dict[Candidate, float], peak_bytes: dict[Candidate, float], budget: float | None,
           tie: float = TIE, key=None) -> tuple[Candidate, dict[Candidate, str]]:
    """(the chosen candidate, {candidate: why it was not chosen}) from the measured epoch seconds and
    peak memory of the candidates that ran (module docstring). ConfigError, in one line, when the
    budget fits none: it names the smallest budget that would fit and the candidate that needs it.
    ``key``: the tie-break (default :meth:`~dynagnn.choose.candidates.Candidate.simplicity`)."""
    key = key or (lambda c: c.simplicity())
    if not measured:
        raise ConfigError("auto: no candidate could run (each one's reason is in auto.json)")
    fits = {c: t for c, t in measured.items() if budget is None or peak_bytes.get(c, 0.0) <= budget}
    if not fits:
        smallest = min(measured, key=lambda c: peak_bytes.get(c, 0.0))
        raise ConfigError(f"memory budget {_mib(budget)} fits no candidate; the smallest, {smallest.label()}, "
                          f"needs {_mib(peak_bytes[smallest])}: give at least that (--memory-budget)")
    best = min(fits.values())
    chosen = min((c for c, t in fits.items() if t <= best * (1 + tie)), key=key)
    why = {}
    for c, t in measured.items():
        if c == chosen:
            continue
        if c not in fits:
            why[c] = f"peak {_mib(peak_bytes[c])} over the budget {_mib(budget)}"
        elif t <= best * (1 + tie):
            why[c] = f"{t:.3g} s/epoch ties {chosen.label()} ({measured[chosen]:.3g} s), which is simpler"
        else:
            why[c] = f"{t:.3g} s/epoch, {t / measured[chosen]:.2f}x the chosen"
    return chosen, why


def _mib(n: float | None) -> str:
    return "none" if n is None else f"{n / 2**20:.1f} MiB"




def report(cands: list[Candidate], seconds: dict[Candidate, float], peak: dict[Candidate, float],
           chosen: Candidate, why: dict[Candidate, str], budget: float | None) -> dict:
    """``auto.json``: every candidate in enumeration order with its measured epoch seconds and peak
    bytes (null where it was not timed), whether it was chosen, whether it can run (its strategy
    serves the run at its workers), and one line of reason for each one not chosen (it cannot run, or
    the choice's reason)."""
    rows = []
    for c in cands:
        rows.append({"strategy": c.strategy, "workers": c.workers, "processes_per_worker": c.procs,
                     "threads": c.threads, "options": dict(c.options), "label": c.label(),
                     "epoch_seconds": seconds.get(c), "peak_bytes": peak.get(c), "chosen": c == chosen,
                     "can_run": c.reason is None,
                     "reason": None if c == chosen else (c.reason or why.get(c, "not timed"))})
    return {"version": 1, "memory_budget_bytes": budget, "chosen": chosen.label(), "candidates": rows}


def summary_line(seconds: dict[Candidate, float], chosen: Candidate, cands: list[Candidate], shown: int = 3) -> str:
    """``auto: frames 1x1x2t (frame_size=4) 0.31 s/epoch; sequential 1x1x2t 0.42; ...; snapshot refused:
    <its reason>``: the chosen one first, then the next fastest, then each refused strategy once."""
    order = sorted(seconds, key=seconds.get)
    parts = [f"{chosen.label()} {seconds[chosen]:.3g} s/epoch"]
    parts += [f"{c.label()} {seconds[c]:.3g}" for c in order if c != chosen][:shown - 1]
    refused: dict[str, str] = {}
    for c in cands:   # the reason at the most workers: at 1, a splitting strategy's is only that it has one
        if c.reason and all(o.reason for o in cands if o.strategy == c.strategy):
            refused[c.strategy] = c.reason
    parts += [f"{name} refused: {reason}" for name, reason in refused.items()]
    return "auto: " + "; ".join(parts)
