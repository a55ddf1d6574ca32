"""TGN, JODIE and APAN: a memory updater, an embedding module and the messages they write.

A model holds only parameters; the memory and mailbox live in a
:class:`~dynagnn.models.tgnn.memory.NodeMemory` that the training loop owns. One batch (Sven,
Algorithm 1; the order of work of issue 14):

1. ``rows = memory.read(batch.nodes)``: the rows of the batch's distinct nodes;
2. ``out = model(batch, rows, efeat)``: the pending mails are applied to the rows read (the
   updated memory, with gradients), the roots are embedded from it (:class:`BatchOutput`.z), and
   the memory and mail writes are prepared, detached;
3. the loss is taken from the head's scores of ``z`` and back-propagated, the optimiser steps;
4. ``apply_writes(memory, out)``: the positive endpoints' updated memory and the batch's messages
   go into the store. Nothing of batch b reaches a prediction of batch b: its messages are written
   only after all of its embeddings were computed.

The message of an event i → j at t is the identity message ``[s_i ‖ s_j ‖ e_ij]`` (the time
encoding of the memory's age is added by the updater), with s the memory after this batch's update
(TGN, JODIE) or the embedding (APAN); each node keeps its most recent message (TGN, JODIE) or its
last ``mailbox`` messages (APAN, whose messages also go to the 10 most recent neighbours of both
endpoints, APAN's mail propagation, as TGL delivers them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from dynagnn.timing import section
from dynagnn.models.tgnn.batch import EventBatch
from dynagnn.models.tgnn.embedding import TemporalAttention, TimeProjection
from dynagnn.models.tgnn.memory import MemoryRows, NodeMemory, latest_per_node
from dynagnn.models.tgnn.time_encoding import TimeEncoding, time_delta
from dynagnn.models.tgnn.updaters import AttentionUpdater, GRUUpdater, RNNUpdater


@dataclass
class Writes:
    """Rows to store after the step: ``ids`` int64 [U] distinct nodes, ``values`` [U, D] detached,
    ``ts`` float64 [U]. ``order`` int64 [U]: the stream position of the occurrence each row comes
    from, ``4·eid + 2·(endpoint) + (destination side)``, which orders rows as the batch's "most
    recent" choice does, so that writes of one node made on several workers resolve to the one a
    single worker keeps (the largest order wins)."""

    ids: torch.Tensor
    values: torch.Tensor
    ts: torch.Tensor
    order: np.ndarray | None = None


def occurrence_order(batch: EventBatch, occurrence: np.ndarray, endpoint: bool | np.ndarray = True) -> np.ndarray:
    """:attr:`Writes.order` of positive occurrences (int [n], 2i = source of event i, 2i+1 its
    destination): an endpoint's own row, or (``endpoint`` False) a row delivered to its neighbour."""
    occurrence = np.asarray(occurrence, dtype=np.int64)
    return 4 * batch.eid[occurrence // 2] + 2 * np.asarray(endpoint, dtype=np.int64) + occurrence % 2


@dataclass
class BatchOutput:
    """z float32 [R, d]: embedding of every root of the batch (sources, destinations, negatives);
    memory, mail: the :class:`Writes` of the positive endpoints' memory and of the batch's mails."""

    z: torch.Tensor
    memory: Writes
    mail: Writes


def apply_writes(memory: NodeMemory, out: BatchOutput) -> None:
    """Store the batch's memory and mails (step 4: after the optimiser step)."""
    memory.write_memory(out.memory.ids, out.memory.values, out.memory.ts)
    memory.write_mail(out.mail.ids, out.mail.values, out.mail.ts)


def _edge_rows(efeat: torch.Tensor | None, eid: np.ndarray, device) -> torch.Tensor | None:
    """Edge features of events ``eid`` (any shape, -1 = none: zeros), or None without features."""
    if efeat is None or efeat.shape[1] == 0:
        return None
    idx = torch.from_numpy(np.maximum(eid, 0)).to(device)
    rows = efeat[idx]
    return rows * torch.from_numpy(eid >= 0).to(device).unsqueeze(-1).to(rows.dtype)


class TGNNModel(nn.Module):
    """What TGN, JODIE and APAN share: the time encoding, the message layout and its writes.

    num_nodes N, edge_dim d_e (0: no edge features), memory_dim d_mem, time_dim d_t; ``mail_dim``
    = 2 d_mem + d_e (Sven's d_msg). Class attributes: ``neighbors`` sampled per root (0: none),
    ``sample`` (whose neighbours: see :func:`~dynagnn.models.tgnn.batch.make_batch`),
    ``mailbox`` size M, ``dedup`` (whether the batch lists each distinct (node, time) root once).
    """

    name = ""
    sample = "none"
    mailbox = 1
    # embed each distinct (node, time) root once (make_batch's emb_rows); False: every root, as TGL
    dedup = True

    def __init__(self, num_nodes: int, edge_dim: int = 0, memory_dim: int = 100, time_dim: int = 100,
                 neighbors: int = 10, heads: int = 2, dropout: float = 0.1):
        super().__init__()
        self.num_nodes, self.edge_dim, self.memory_dim = int(num_nodes), int(edge_dim), int(memory_dim)
        self.mail_dim = 2 * self.memory_dim + self.edge_dim
        self.neighbors = int(neighbors) if self.sample != "none" else 0
        self.time_enc = TimeEncoding(time_dim)
        self.out_dim = self.memory_dim

    def new_memory(self, device: torch.device | str = "cpu") -> NodeMemory:
        return NodeMemory(self.num_nodes, self.memory_dim, self.mail_dim, self.mailbox, device)

    def forward(self, batch: EventBatch, rows: MemoryRows, efeat: torch.Tensor | None = None) -> BatchOutput:
        raise NotImplementedError

    def _messages(self, batch: EventBatch, s_src: torch.Tensor, s_dst: torch.Tensor, efeat):
        """Per positive occurrence, sources and destinations interleaved (src_0, dst_0, src_1, ...):
        (node ids int64 [2B], mails [2B, d_mail], times float64 [2B], event index [2B])."""
        b = batch.size
        dev = s_src.device
        e = _edge_rows(efeat, batch.eid, dev)
        src_mail = [s_src, s_dst] + ([e] if e is not None else [])
        dst_mail = [s_dst, s_src] + ([e] if e is not None else [])
        mails = torch.stack([torch.cat(src_mail, 1), torch.cat(dst_mail, 1)], 1).reshape(2 * b, -1)
        ids = np.stack([batch.src, batch.dst], 1).ravel()
        return ids, mails.detach(), np.repeat(batch.t, 2), np.repeat(np.arange(b), 2)


class _UniqueMemoryModel(TGNNModel):
    """TGN and JODIE: the updated memory is a function of the node alone (its last mail), so it is
    computed once per distinct node of the batch and gathered for the roots and neighbours."""

    updater_cls: type[nn.Module] = GRUUpdater

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.updater = self.updater_cls(self.mail_dim, self.memory_dim, self.time_enc)

    def embed(self, batch, mem, mem_ts, efeat):
        raise NotImplementedError

    def forward(self, batch, rows, efeat=None):
        with section("memory"):
            mem, mem_ts = self.updater(rows)
        with section("embed"):
            z = self.embed(batch, mem, mem_ts, efeat)
        b = batch.size
        dev = mem.device
        src_rows = torch.from_numpy(batch.root_idx[:b]).to(dev)
        dst_rows = torch.from_numpy(batch.root_idx[b:2 * b]).to(dev)
        ids, mails, ts, _ = self._messages(batch, mem[src_rows], mem[dst_rows], efeat)
        uniq, last = latest_per_node(ids)
        pos = torch.from_numpy(batch.positions(uniq)).to(dev)
        uniq_t = torch.from_numpy(uniq).to(dev)
        order = occurrence_order(batch, last)
        memory = Writes(uniq_t, mem[pos].detach(), mem_ts[pos], order)
        mail = Writes(uniq_t, mails[torch.from_numpy(last).to(dev)], torch.from_numpy(ts[last]).to(dev), order)
        return BatchOutput(z, memory, mail)


class TGN(_UniqueMemoryModel):
    """TGN (Rossi et al. 2020) as TGL trains it: GRU memory, temporal attention with ``heads``
    heads over the ``neighbors`` most recent neighbours."""

    name = "tgn"
    sample = "all"
    updater_cls = GRUUpdater

    def __init__(self, *args, heads: int = 2, dropout: float = 0.1, **kw):
        super().__init__(*args, heads=heads, dropout=dropout, **kw)
        self.attention = TemporalAttention(self.memory_dim, self.edge_dim, self.time_enc, self.memory_dim,
                                           heads, dropout)

    # distinct roots embedded once, the attention's node rows projected once per distinct root and
    # neighbour, its time encoding once per distinct Δt (TemporalAttention.forward_indexed); False:
    # every root and neighbour gathered, as TGL does
    indexed = True

    def embed(self, batch, mem, mem_ts, efeat):
        dev = mem.device
        if not self.indexed:
            root_idx = torch.from_numpy(batch.root_idx).to(dev)
            nbr_idx = torch.from_numpy(batch.nbr_idx).to(dev)
            dt = time_delta(torch.from_numpy(batch.root_t[:, None]), torch.from_numpy(batch.nbr_t)).to(dev)
            valid = torch.from_numpy(batch.nbr_valid).to(dev)
            return self.attention(mem[root_idx], mem[nbr_idx], _edge_rows(efeat, batch.nbr_eid, dev), dt, valid)
        rows = batch.emb_rows
        t = lambda a: torch.from_numpy(a).to(dev)  # noqa: E731
        return self.attention.forward_indexed(
            mem, t(batch.root_idx[rows]), t(batch.nbr_nodes), t(batch.nbr_pos[rows]),
            _edge_rows(efeat, batch.nbr_eid[rows], dev), t(batch.gaps), t(batch.gap_idx[rows]),
            t(batch.nbr_valid[rows]), t(batch.emb_inv))


class JODIE(_UniqueMemoryModel):
    """JODIE (Kumar et al. 2019) as TGL trains it: RNN memory, time-projection embedding, no
    neighbour sampling. ``dt_shift``, ``dt_scale``: standardisation of the memory's age."""

    name = "jodie"
    sample = "none"
    updater_cls = RNNUpdater
    dedup = False  # its embedding is elementwise per root: nothing to share

    def __init__(self, *args, dt_shift: float = 0.0, dt_scale: float = 1.0, dropout: float = 0.1, **kw):
        super().__init__(*args, dropout=dropout, **kw)
        self.projection = TimeProjection(self.memory_dim, dt_shift, dt_scale, dropout)

    def embed(self, batch, mem, mem_ts, efeat):
        idx = torch.from_numpy(batch.root_idx).to(mem.device)
        dt = time_delta(torch.from_numpy(batch.root_t).to(mem.device), mem_ts[idx])
        return self.projection(mem[idx], dt)


class APAN(TGNNModel):
    """APAN (Wang et al. 2021) as TGL trains it: mailbox of ``mailbox`` mails attended by the
    memory at the query time, the memory as the embedding, mails delivered to both endpoints and
    to their ``neighbors`` most recent neighbours.

    Its memory, like TGN's, depends on the weights' whole trajectory through an epoch, not only on
    the events and the final weights: replaying the training events with the final weights rebuilds
    a different memory (on CollegeMsg, cosine 0.2-0.5 to the trained one; TGN's: 0.17). TGN's
    scores do not move (validation AP 0.822 either way); APAN's embedding is its memory, and from a
    replayed memory it scores near chance (0.45-0.60 against 0.69-0.73). So APAN is evaluated from
    the memory its training left (as the engine does), never from a replay."""

    name = "apan"
    sample = "positive"
    mailbox = 10

    def __init__(self, *args, heads: int = 2, dropout: float = 0.1, **kw):
        super().__init__(*args, heads=heads, dropout=dropout, **kw)
        self.updater = AttentionUpdater(self.mail_dim, self.memory_dim, self.time_enc, heads, dropout)

    def forward(self, batch, rows, efeat=None):
        dev = rows.memory.device
        ridx = torch.from_numpy(batch.root_idx[batch.emb_rows]).to(dev)  # the distinct (node, time) roots
        per_root = MemoryRows(*(x.index_select(0, ridx) for x in (rows.memory, rows.memory_ts, rows.mail,
                                                                  rows.mail_ts, rows.mail_valid)))
        with section("memory"):  # APAN's embedding is its updated memory
            z, _ = self.updater(per_root, torch.from_numpy(batch.root_t[batch.emb_rows]).to(dev),
                                torch.from_numpy(batch.emb_inv).to(dev))
        b = batch.size
        zd = z.detach()
        ids, mails, ts, ev = self._messages(batch, zd[:b], zd[b:2 * b], efeat)
        # memory: each positive node's embedding at its latest occurrence
        uniq, last = latest_per_node(ids)
        occ_row = np.stack([np.arange(b), b + np.arange(b)], 1).ravel()  # root row of each occurrence
        memory = Writes(torch.from_numpy(uniq).to(dev), zd[torch.from_numpy(occ_row[last]).to(dev)],
                        torch.from_numpy(ts[last]).to(dev), occurrence_order(batch, last))
        # mails to the endpoints and their sampled neighbours; per node the latest event's, an
        # endpoint's own mail before a neighbour's of the same event
        nbr = batch.nbr[:2 * b]
        occ_nbr = np.stack([nbr[:b], nbr[b:]], 1).reshape(2 * b, -1)  # interleaved as the occurrences
        occ_of, slot = np.nonzero(occ_nbr >= 0)
        targets = np.concatenate([ids, occ_nbr[occ_of, slot]])
        source = np.concatenate([np.arange(2 * b), occ_of])            # which occurrence's mail
        key = np.concatenate([2 * ev + 1, 2 * ev[occ_of]])
        uniq_m, pick = latest_per_node(targets, key)
        src_occ = torch.from_numpy(source[pick]).to(dev)
        mail = Writes(torch.from_numpy(uniq_m).to(dev), mails[src_occ], torch.from_numpy(ts[source[pick]]).to(dev),
                      occurrence_order(batch, source[pick], pick < 2 * b))
        return BatchOutput(z, memory, mail)
