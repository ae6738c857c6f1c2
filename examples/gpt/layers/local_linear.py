"""A plain (not tensor-parallel) bias-free linear that honours the precision recipe; used
inside experts."""

from __future__ import annotations

import torch
from torch import nn

from .context import LayerContext


class LocalLinear(nn.Module):
    def __init__(self, input_size: int, output_size: int, ctx: LayerContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.weight = nn.Parameter(torch.empty(output_size, input_size, dtype=ctx.params_dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ctx.gemm(x, self.weight, shared_input=False)
