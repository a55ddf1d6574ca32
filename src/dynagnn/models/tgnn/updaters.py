"""Memory updaters: s_v ← upd(s_v, pending mail) for the rows a batch reads.

- :class:`GRUUpdater` (TGN) and :class:`RNNUpdater` (JODIE): one recurrent cell over the input
  ``[mail ‖ Φ(t_mail − t_mem)]`` (the identity message of TGN, whose Δt is the time since the memory
  was last updated); the new memory time is the mail's time. Rows without a mail keep their memory.
- :class:`AttentionUpdater` (APAN, TGL's form): the memory attends over the node's mailbox, the
  query ``W_q s``, keys and values ``W_{k,v} [mail ‖ Φ(t − t_mail)]`` with ``H`` heads, scores
  LeakyReLU(0.2) of the per-head dot product, softmax over the valid mails; then
  ``relu(W_o LayerNorm(s + attended))`` (dropout before the relu). Here t is the query time of
  each row, and the new memory time is t. Rows with an empty mailbox keep their memory.

Every updater: ``forward(rows, t) -> (memory float32 [U, d_mem], memory_ts float64 [U])`` with
rows a :class:`~dynagnn.models.tgnn.memory.MemoryRows` of U rows, t float64 [U] (used by APAN).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dynagnn.models.tgnn.memory import MemoryRows
from dynagnn.models.tgnn.time_encoding import TimeEncoding, time_delta


class CellUpdater(nn.Module):
    """A recurrent cell (``cell_cls``: nn.GRUCell or nn.RNNCell) over the last mail."""

    cell_cls: type[nn.Module] = nn.GRUCell

    def __init__(self, mail_dim: int, memory_dim: int, time_enc: TimeEncoding):
        super().__init__()
        self.time_enc = time_enc
        self.cell = self.cell_cls(mail_dim + time_enc.dim, memory_dim)

    def forward(self, rows: MemoryRows, t: torch.Tensor | None = None):
        mail, mail_ts, valid = rows.mail[:, -1], rows.mail_ts[:, -1], rows.mail_valid[:, -1]
        idx = valid.nonzero().squeeze(1)
        if idx.numel() == 0:
            return rows.memory, rows.memory_ts
        x = torch.cat([mail[idx], self.time_enc(time_delta(mail_ts[idx], rows.memory_ts[idx]))], dim=1)
        new = self.cell(x, rows.memory[idx])
        memory = rows.memory.index_put((idx,), new)
        return memory, rows.memory_ts.index_put((idx,), mail_ts[idx])


class GRUUpdater(CellUpdater):
    cell_cls = nn.GRUCell


class RNNUpdater(CellUpdater):
    cell_cls = nn.RNNCell


class AttentionUpdater(nn.Module):
    """APAN's mailbox attention (see the module docstring); ``memory_dim`` divisible by ``heads``."""

    def __init__(self, mail_dim: int, memory_dim: int, time_enc: TimeEncoding, heads: int = 2,
                 dropout: float = 0.1):
        super().__init__()
        if memory_dim % heads:
            raise ValueError(f"memory dimension {memory_dim} is not divisible by {heads} heads")
        self.time_enc, self.heads = time_enc, int(heads)
        self.w_q = nn.Linear(memory_dim, memory_dim)
        self.w_k = nn.Linear(mail_dim + time_enc.dim, memory_dim)
        self.w_v = nn.Linear(mail_dim + time_enc.dim, memory_dim)
        self.norm = nn.LayerNorm(memory_dim)
        self.w_o = nn.Linear(memory_dim, memory_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, rows: MemoryRows, t: torch.Tensor):
        valid = rows.mail_valid
        has = valid.any(dim=1)
        idx = has.nonzero().squeeze(1)
        if idx.numel() == 0:
            return rows.memory, t.to(torch.float64)
        s, mail, mail_ts, valid = rows.memory[idx], rows.mail[idx], rows.mail_ts[idx], valid[idx]
        u, m = mail.shape[:2]
        h = self.heads
        x = torch.cat([mail, self.time_enc(time_delta(t[idx].unsqueeze(1), mail_ts))], dim=2)
        q = self.w_q(s).reshape(u, 1, h, -1)
        k = self.w_k(x).reshape(u, m, h, -1)
        v = self.w_v(x).reshape(u, m, h, -1)
        score = F.leaky_relu((q * k).sum(-1), 0.2).masked_fill(~valid.unsqueeze(-1), float("-inf"))
        att = torch.softmax(score, dim=1)                     # [u, m, h] over the mails
        out = (att.unsqueeze(-1) * v).sum(1).reshape(u, -1)
        new = F.relu(self.dropout(self.w_o(self.norm(out + s))))
        memory = rows.memory.index_put((idx,), new)
        return memory, t.to(torch.float64)
