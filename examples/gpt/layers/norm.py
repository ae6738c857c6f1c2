"""RMSNorm; under sequence parallelism its weight gradient is a partial sum over the
tensor-parallel group (Megatron marks it `sequence_parallel` and all-reduces it)."""

from __future__ import annotations

import torch
from torch import nn

from .context import LayerContext


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, ctx: LayerContext, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.sequence_parallel = ctx.sp
        self.weight = nn.Parameter(torch.empty(hidden, dtype=ctx.params_dtype))
        self.weight.sequence_parallel = ctx.sp

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * self.weight.float()).to(x.dtype)
