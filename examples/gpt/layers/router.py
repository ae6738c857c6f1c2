"""Top-1 router: a replicated linear scoring each token against every expert."""

from __future__ import annotations

import torch
from torch import nn

from .context import LayerContext


class TopKRouter(nn.Module):
    def __init__(self, hidden: int, num_experts: int, ctx: LayerContext) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_experts, hidden, dtype=ctx.params_dtype))
        # Replicated over tp; under sequence parallelism its gradient is a partial sum.
        self.weight.sequence_parallel = ctx.sp

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.linear(x, self.weight)  # [s, b, E] logits
