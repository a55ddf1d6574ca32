r"""Communication volume of each way to spread dynamic-GNN training over P workers: closed forms,
and the same quantity counted by enumeration on a real partition.

Every ``*_volume`` function is a closed form; every ``count_*`` function enumerates what is sent
(per snapshot, vertex, chunk or batch occurrence) on an actual partition, without using the closed
form, so that tests and the ``volume`` table can hold one against the other. Convention: a volume
is what crosses the network, each element counted **once, at its sender** (a worker's data for
itself costs nothing). A :class:`Volume` carries ``units`` (rows: feature vectors, N&M rows,
parameters, snapshots), the ``width`` of a unit in elements and the ``dtype_size`` of an element,
hence ``elements`` and ``bytes``.

Model (BLAD eq. 1, ESDG §2): L layers, each a GCN per snapshot (weights F_{l-1} x h + h) then an RNN
per vertex along time (``cell`` lstm: 4 gates, gru: 3; weights gates·(h·h + h·h + 2h)); layer 1
reads F input features, later layers h; T snapshots over N vertices; P workers.

* **Snapshot partitioning (ESDG §4.2).** Worker p owns a contiguous range of t_p snapshots
  (:func:`~dynagnn.splits.even_ranges`) and, for the RNN, a contiguous chunk of
  n_p vertices (:func:`~dynagnn.graph.partition.range_partition`). Redistribution 1 sends Y_t[V_q]
  from the owner of t to q, redistribution 2 sends Z_t[V_q] back; (t, v) moves unless both owners
  are the same worker, so one redistribution moves exactly ``T·N − Σ_p t_p·n_p`` rows
  (:func:`snapshot_redistribution_volume`). With q, r = divmod: Σ_p t_p n_p = P·q_T·q_N + q_T·r_N +
  q_N·r_T + min(r_T, r_N) (both splits make the first parts larger). ESDG's T·N·(P−1)/P is the
  special case P | T and P | N. Two redistributions per layer forward, two backward (gradients).
* **Vertex partitioning (ESDG §4.1, BLAD Table 3 "Vertex").** Per GCN layer and snapshot, v's row
  goes to every *other* worker holding a neighbour: Σ_t Σ_v λ_t(v) rows (connectivity − 1; the
  count is :func:`~dynagnn.graph.partition.snapshot_volume`), the same again backward (gradients
  of the remote rows return to their owners). BLAD writes ``T · prob · N_khop · F`` with prob the
  chance that a neighbour is remote. Made exact for a hash partition (a uniformly random
  permutation mod P, part sizes n_q): given parts[v] = p, the d distinct neighbours of v are d of
  the other N−1 vertices drawn without replacement, so part q ≠ p holds none of them with
  probability C(N−1−n_q, d)/C(N−1, d), and

      E[λ(v)] = Σ_q (1 − n_q/N) · (1 − C(N−1−n_q, d_v) / C(N−1, d_v))

  (:func:`vertex_volume_hash`; an *expectation* over the permutation, equal to the mean count over
  all N! permutations, tested so). BLAD's ``prob·N_khop`` counts every remote neighbour slot,
  (P−1)/P · Σ_t nnz_t, not the distinct (vertex, worker) pairs: an upper bound.
* **Parameter synchronisation.** A ring all-reduce of W parameters moves exactly 2(P−1)·W
  elements (:func:`ring_allreduce_volume`; counted chunk by chunk by :func:`count_ring_allreduce`).
  BLAD's Table 3 writes p·W. It also leaves the GNN parameters out of the snapshot row, which is
  wrong: ESDG replicates the GCN weights on every worker, so their gradients are all-reduced too;
  the only saving of the group scheme over the snapshot scheme is the features.
* **Snapshot-group partitioning (BLAD §5.1).** Worker p trains whole groups (snapshot S with its l
  predecessors) for its contiguous range of S (:func:`~dynagnn.splits.minmax_ranges`):
  no features cross workers during training; the input snapshots before a range's start must be
  replicated once: Σ_p min(l, t0_p) snapshots (:func:`group_halo_volume`).
* **Sven (TPDS §3.2 / HPDC §3.1.3), memory-based TGNN on M trainers.** A batch of bs events is
  split into M contiguous chunks, one per trainer; the node memory and messages (N&M) of v live on
  ``owner[v]``; d_msg = 2·d_mem + d_edge, a raw N&M row is w = d_msg + d_mem wide. Per trainer i:
  N1_i sampled occurrences (U1_i distinct), N2_i batch occurrences (U2_i distinct).

  - DepCache: full replicas; aggregation all-gathers every trainer's deduplicated updates to the
    M−1 others: (M−1)·Σ_i U2_i·w. Exact.
  - DepComm: dispatch sends the *updated* memory (d_mem) for every remote sampled occurrence, no
    dedup; aggregation sends each remote distinct updated vertex once: Σ_i ρ_i (N1_i·d_mem +
    U2_i·w).
  - Sven (redundancy-free): dispatch sends the raw N&M of each remote distinct sampled vertex once,
    aggregation as DepComm: Σ_i ρ_i (U1_i + U2_i)·w.

  ρ_i is the chance that a vertex is not owned by trainer i: 1 − n_i/N under a hash partition (so
  the Sven and DepComm models are expectations; conditioned on the partition the count is
  ``R``, the remote rows). The paper's formulas (J 7–9) carry 2(M−1)/M (DepCache 2(M−1)²/M): they
  count each element at sender and receiver; kept as ``paper_*`` for comparison.

  **The wrong condition (J 11 / C 11).** The paper claims C_Sven < C_DepComm whenever
  η1 > 2/3 − d_mem/d_edge. The aggregation terms are equal and cancel; what is left is
  (1 − η1)·(d_msg + d_mem) < d_mem, i.e. (1−η1)(3·d_mem + d_edge) < d_mem, i.e.

      η1 > (2·Π + 1) / (3·Π + 1),    Π = d_mem / d_edge      (η1 > 2/3 when d_edge = 0),

  always ≥ 2/3 (the paper's threshold is below 2/3 and even negative for Π > 2/3: with d_mem = 100,
  d_edge = 172 it says 0.085, the truth is 0.788). Conditioned on a partition the exact statement
  is the same with η1 replaced by the redundancy of the *remote* sampled occurrences,
  η1ʳ = 1 − R1u/R1o (R1u remote distinct, R1o remote occurrences); under a hash partition
  E[R1u]/E[R1o] = 1 − η1. :func:`sven_beats_depcomm` gives the corrected test,
  :func:`paper_sven_beats_depcomm` the printed one. The DepCache condition (J 10, M > τ + 2 with
  τ = U1/U2) is right under the paper's own factors; with the one-count convention and equal parts
  it reads M > τ + 1 (:func:`sven_beats_depcache`).
"""

from .base import CELLS, Volume, gnn_params, layer_widths, rnn_params
from .closed import (blad_paper_vertex_volume, esdg_paper_volume, group_halo_volume, hash_part_sizes,
                     paper_sven_beats_depcomm, paper_sven_volumes, ring_allreduce_volume,
                     snapshot_redistribution_volume, sven_beats_depcache, sven_beats_depcomm, sven_threshold,
                     sven_volumes, vertex_volume_hash)
from .counted import (SvenBatches, count_group_halo, count_ring_allreduce, count_snapshot_redistribution,
                      count_sven_volumes, count_vertex_volume, sampled_occurrences, sven_batches, sven_stats,
                      sven_trainer_stats)
from .table import COLUMNS, volume_table

__all__ = ["CELLS", "COLUMNS", "SvenBatches", "Volume", "blad_paper_vertex_volume", "count_group_halo",
           "count_ring_allreduce", "count_snapshot_redistribution", "count_sven_volumes", "count_vertex_volume",
           "esdg_paper_volume", "gnn_params", "group_halo_volume", "hash_part_sizes", "layer_widths",
           "paper_sven_beats_depcomm", "paper_sven_volumes", "ring_allreduce_volume", "rnn_params",
           "sampled_occurrences", "snapshot_redistribution_volume", "sven_batches", "sven_beats_depcache",
           "sven_beats_depcomm", "sven_stats", "sven_trainer_stats", "sven_threshold", "sven_volumes", "vertex_volume_hash",
           "volume_table"]
