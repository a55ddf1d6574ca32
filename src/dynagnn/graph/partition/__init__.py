"""Vertex partitioners and partition quality, one family per module.

Graphs are symmetric edge lists ``row, col`` (int64, sorted by (row, col), no self-loops) over N
vertices, e.g. the union graph of all snapshots. Partitioners return ``parts`` int64 [N] with values
in 0..P-1.

- :mod:`.static`: :func:`hash_partition`, :func:`range_partition` (the PowerGraph / DGL style
  baselines) and :func:`metis_partition` (METIS k-way min edge cut, the AliGraph-style baseline).
- :mod:`.bgl`: :func:`bgl_partition`, BGL (NSDI'23 §3.3) BFS-block coarsening + greedy block assignment.
- :mod:`.reflexbicut`: :func:`reflexbicut_partition`, Sven (TPDS) Algorithm 3, min-max communication.
- :mod:`.quality`: :func:`partition_quality`, :func:`snapshot_volume`: edge cut, communication
  volumes, balance.

The temporal splits (ESDG's even snapshot split, BLAD's min-max snapshot groups) are not vertex
partitions: they are :mod:`dynagnn.splits`.

Communication cost used throughout (ESDG §4.1 / Sven CBG-P): ``lam(v)`` = the number of parts other
than ``parts[v]`` that hold at least one neighbour of v (the connectivity-1 metric: v's feature or
memory must be sent once to each of them). ``comm_volume = sum_v lam(v)``; the send cost of part i
is ``sum_{v in part i} lam(v)`` and ``max_part_comm`` is its maximum over parts (Sven's zeta(W)).
"""

from .base import check_edges, check_parts
from .bgl import bfs_blocks, bgl_partition
from .quality import partition_quality, snapshot_volume
from .reflexbicut import part_send_cost, reflexbicut_partition
from .static import hash_partition, metis_partition, range_partition

__all__ = [
    "hash_partition", "range_partition", "metis_partition", "bgl_partition", "bfs_blocks",
    "reflexbicut_partition", "partition_quality", "snapshot_volume", "part_send_cost",
    "check_parts", "check_edges",
]
