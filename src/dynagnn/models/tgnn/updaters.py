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
Each applies its input projections by blocks (stored mails, learned time encoding), so that the
backward pass computes no gradient of the stored inputs (issue 32).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dynagnn.models.tgnn.embedding import rows_of
from dynagnn.models.tgnn.memory import MemoryRows
from dynagnn.models.tgnn.time_encoding import TimeEncoding, time_delta


class CellUpdater(nn.Module):
    """A recurrent cell (``cell_cls``: nn.GRUCell or nn.RNNCell) over the last mail.

    The cell's input projection is applied by blocks, ``W_mail mail + W_time Φ``, instead of to the
    concatenation ``[mail ‖ Φ]`` (the same sum): the mails and memory are stored, not learned, so
    the backward pass computes the input gradient of the Φ block alone, a third of the whole
    ``[mail ‖ Φ]`` gradient at DyGLib's widths.
    """

    cell_cls: type[nn.Module] = nn.GRUCell

    def __init__(self, mail_dim: int, memory_dim: int, time_enc: TimeEncoding):
        super().__init__()
        self.time_enc, self.mail_dim = time_enc, int(mail_dim)
        self.cell = self.cell_cls(mail_dim + time_enc.dim, memory_dim)

    def forward(self, rows: MemoryRows, t: torch.Tensor | None = None):
        mail, mail_ts, valid = rows.mail[:, -1], rows.mail_ts[:, -1], rows.mail_valid[:, -1]
        idx = valid.nonzero().squeeze(1)
        if idx.numel() == 0:
            return rows.memory, rows.memory_ts
        phi = self.time_enc(time_delta(mail_ts[idx], rows.memory_ts[idx]))
        w_mail, w_time = self.cell.weight_ih.split([self.mail_dim, phi.shape[1]], dim=1)
        x_proj = mail[idx] @ w_mail.T + phi @ w_time.T + self.cell.bias_ih
        new = self._step(x_proj, rows.memory[idx])
        memory = rows.memory.index_put((idx,), new)
        return memory, rows.memory_ts.index_put((idx,), mail_ts[idx])

    def _step(self, x_proj: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """The cell's new state from its projected input ``W_ih x + b_ih`` and its state h."""
        raise NotImplementedError


class GRUUpdater(CellUpdater):
    cell_cls = nn.GRUCell

    def _step(self, x_proj, h):
        """nn.GRUCell's equations (reset, update, new gates in that order of its weights)."""
        h_proj = h @ self.cell.weight_hh.T + self.cell.bias_hh
        x_r, x_z, x_n = x_proj.chunk(3, dim=1)
        h_r, h_z, h_n = h_proj.chunk(3, dim=1)
        reset, update = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
        new = torch.tanh(x_n + reset * h_n)
        return new + update * (h - new)


class RNNUpdater(CellUpdater):
    cell_cls = nn.RNNCell

    def _step(self, x_proj, h):
        """nn.RNNCell's equation (tanh)."""
        return torch.tanh(x_proj + h @ self.cell.weight_hh.T + self.cell.bias_hh)


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

    def forward(self, rows: MemoryRows, t: torch.Tensor, expand: torch.Tensor | None = None):
        """``expand`` int64 [R] or None: return row i of distinct row ``expand[i]`` (APAN's
        distinct roots, copied to their repeats before the dropout, so that each draws its own mask
        as without the copy).

        The key and value projections are applied by blocks, the mails' per mail and the time
        encoding's once per distinct gap: the mails are stored, not learned, so no gradient of
        theirs is computed (see :class:`CellUpdater`)."""
        valid = rows.mail_valid
        has = valid.any(dim=1)
        idx = has.nonzero().squeeze(1)
        base = rows.memory if expand is None else rows.memory.index_select(0, expand)
        ts = t.to(torch.float64) if expand is None else t.to(torch.float64)[expand]
        if idx.numel() == 0:
            return base, ts
        s, mail, mail_ts, valid = rows.memory[idx], rows.mail[idx], rows.mail_ts[idx], valid[idx]
        u, m, dm = mail.shape
        h = self.heads
        gaps, gap_idx = torch.unique(time_delta(t[idx].unsqueeze(1), mail_ts), return_inverse=True)
        w_mail, w_time = torch.cat([self.w_k.weight, self.w_v.weight]).split([dm, self.time_enc.dim], dim=1)
        b_kv = torch.cat([self.w_k.bias, self.w_v.bias])
        kv = mail @ w_mail.T + rows_of(self.time_enc(gaps) @ w_time.T + b_kv, gap_idx)
        k, v = (x.reshape(u, m, h, -1) for x in kv.split(self.w_k.out_features, dim=2))
        q = self.w_q(s).reshape(u, 1, h, -1)
        score = F.leaky_relu((q * k).sum(-1), 0.2).masked_fill(~valid.unsqueeze(-1), float("-inf"))
        att = torch.softmax(score, dim=1)                     # [u, m, h] over the mails
        out = (att.unsqueeze(-1) * v).sum(1).reshape(u, -1)
        pre = self.w_o(self.norm(out + s))
        if expand is not None:
            slot = torch.full_like(has, -1, dtype=torch.int64)
            slot[idx] = torch.arange(idx.numel(), device=idx.device)
            slot = slot[expand]
            idx = (slot >= 0).nonzero().squeeze(1)
            pre = pre.index_select(0, slot[idx])
        return base.index_put((idx,), F.relu(self.dropout(pre))), ts
