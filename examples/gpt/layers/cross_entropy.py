"""Vocab-parallel cross entropy over logits split along the vocabulary."""

from __future__ import annotations

import torch
from torch import nn

from .. import comm
from .context import LayerContext


class VocabParallelCrossEntropy(nn.Module):
    def __init__(self, vocab_size: int, ctx: LayerContext) -> None:
        super().__init__()
        self.ctx = ctx
        per = vocab_size // ctx.tp_size
        self.vocab_start_index = ctx.tp_rank * per
        self.vocab_end_index = self.vocab_start_index + per

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """logits [s, b, V/tp], labels [s, b] -> per-token loss [s, b] (fp32)."""
        group = self.ctx.tp_group
        logits = logits.float()
        lmax = logits.detach().max(dim=-1).values
        lmax = comm.all_reduce(lmax, group, comm.dist.ReduceOp.MAX)
        shifted = logits - lmax.unsqueeze(-1)
        sum_exp = shifted.exp().sum(dim=-1)
        if not self.ctx.has_bug("vocab-ce-missing-allreduce"):
            # Bug zoo: without this all-reduce each rank normalizes over its vocab slice only.
            sum_exp = comm.reduce_from_region(sum_exp, group)
        outside = (labels < self.vocab_start_index) | (labels >= self.vocab_end_index)
        local = (labels - self.vocab_start_index).masked_fill(outside, 0)
        target = shifted.gather(-1, local.unsqueeze(-1)).squeeze(-1).masked_fill(outside, 0.0)
        target = comm.reduce_from_region(target, group)
        return torch.log(sum_exp) - target
