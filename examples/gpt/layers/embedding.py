"""Vocab-parallel embedding: each tensor-parallel rank holds a contiguous range of rows."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .. import comm
from .context import LayerContext


class VocabParallelEmbedding(nn.Module):
    def __init__(self, vocab_size: int, hidden: int, ctx: LayerContext) -> None:
        super().__init__()
        if vocab_size % ctx.tp_size:
            raise ValueError(f"vocab {vocab_size} not divisible by tp {ctx.tp_size}")
        self.ctx = ctx
        per = vocab_size // ctx.tp_size
        self.num_embeddings = vocab_size
        self.vocab_start_index = ctx.tp_rank * per
        self.vocab_end_index = self.vocab_start_index + per
        self.reduce_scatter_embeddings = ctx.sp
        self.sequence_parallel = ctx.sp
        self.weight = nn.Parameter(torch.empty(per, hidden, dtype=ctx.params_dtype))
        self.weight.tensor_model_parallel = True
        self.weight.partition_dim = 0
        self.weight.partition_stride = 1

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        # ids [b, s] -> output [s, b, h] (Megatron's layout)
        if self.ctx.has_bug("vocab-embedding-off-by-one"):
            # Bug zoo: `>` where `>=` belongs at the range start drops each range's first id.
            outside = ~((ids > self.vocab_start_index) & (ids < self.vocab_end_index))
        else:
            outside = (ids < self.vocab_start_index) | (ids >= self.vocab_end_index)
        local = (ids - self.vocab_start_index).masked_fill(outside, 0)
        out = F.embedding(local, self.weight)
        out = out.masked_fill(outside.unsqueeze(-1), 0.0)
        out = out.transpose(0, 1).contiguous()
        if self.reduce_scatter_embeddings:
            return comm.reduce_scatter_along(out, 0, self.ctx.tp_group)
        return comm.reduce_from_region(out, self.ctx.tp_group)
