"""Causal self-attention with RoPE and grouped-query attention; heads split over tensor
parallelism, sequence split over context parallelism (keys/values all-gathered)."""

from __future__ import annotations

import math

import torch
from torch import nn

from .. import comm
from ..config import GPTConfig
from ..cp_layout import two_chunk_indices
from .column_linear import ColumnParallelLinear
from .context import LayerContext
from .rope import apply_rope, rope_tables
from .row_linear import RowParallelLinear


class Attention(nn.Module):
    def __init__(self, cfg: GPTConfig, ctx: LayerContext) -> None:
        super().__init__()
        if cfg.heads % cfg.kv_heads or cfg.kv_heads % ctx.tp_size:
            raise ValueError("heads must divide into kv groups and kv groups over tp")
        self.ctx = ctx
        self.head_dim = cfg.head_dim
        self.groups_local = cfg.kv_heads // ctx.tp_size
        self.q_per_group = cfg.heads // cfg.kv_heads
        # qkv weight rows are ordered per kv group [q heads of g, k of g, v of g] so that a
        # contiguous split over tp hands each rank whole groups (Megatron's layout).
        qkv_out = cfg.kv_heads * (self.q_per_group + 2) * cfg.head_dim
        self.linear_qkv = ColumnParallelLinear(cfg.hidden, qkv_out, ctx)
        self.linear_proj = RowParallelLinear(cfg.heads * cfg.head_dim, cfg.hidden, ctx)
        # Global positions of this rank's tokens, and the order that puts all-gathered keys
        # back in sequence order.
        pos = two_chunk_indices(cfg.seq_len, ctx.cp_rank, ctx.cp_size)
        if ctx.has_bug("rope-cp-offset"):
            # Bug zoo: rotary positions as if this rank held one contiguous chunk, while the
            # data uses the load-balanced two-chunk layout (the causal mask stays right).
            rope_pos = torch.arange(len(pos)) + ctx.cp_rank * len(pos)
        else:
            rope_pos = pos
        gathered = torch.cat(
            [two_chunk_indices(cfg.seq_len, r, ctx.cp_size) for r in range(ctx.cp_size)]
        )
        self.register_buffer("positions", pos, persistent=False)
        self.register_buffer("key_order", torch.argsort(gathered), persistent=False)
        self.register_buffer("key_positions", gathered[torch.argsort(gathered)], persistent=False)
        cos, sin = rope_tables(rope_pos, cfg.head_dim, cfg.rope_base)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        qkv = self.linear_qkv(x)  # [s, b, groups_local * (q_per_group + 2) * d]
        s, b, _ = qkv.shape
        qkv = qkv.view(s, b, self.groups_local, self.q_per_group + 2, self.head_dim)
        q = qkv[:, :, :, : self.q_per_group].reshape(s, b, -1, self.head_dim)
        k = qkv[:, :, :, self.q_per_group]
        v = qkv[:, :, :, self.q_per_group + 1]
        q = apply_rope(q, self.cos, self.sin)
        k = apply_rope(k, self.cos, self.sin)
        if self.ctx.cp_size > 1:
            # All-gather K/V over cp (backward reduce-scatters their gradients) and restore
            # sequence order so that softmax sums run in the reference's order.
            # Bug zoo (cp-attn-backward): a backward that keeps only the local dK/dV instead
            # of reduce-scattering every rank's contribution to them.
            gather = (
                comm.gather_along_split_grad
                if self.ctx.has_bug("cp-attn-backward")
                else comm.gather_along
            )
            k = gather(k, 0, self.ctx.cp_group).index_select(0, self.key_order)
            v = gather(v, 0, self.ctx.cp_group).index_select(0, self.key_order)
        k = k.repeat_interleave(self.q_per_group, dim=2)
        v = v.repeat_interleave(self.q_per_group, dim=2)
        scores = torch.einsum("sbhd,tbhd->bhst", q, k) / math.sqrt(self.head_dim)
        mask = self.positions[:, None] >= self.key_positions[None, :]
        scores = scores.float().masked_fill(~mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1).to(v.dtype)
        out = torch.einsum("bhst,tbhd->sbhd", probs, v).reshape(s, b, -1)
        return self.linear_proj(out)
