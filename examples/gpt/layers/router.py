"""Top-1 router: a replicated linear scoring each token against every expert."""

from __future__ import annotations

import torch
from torch import nn

from .context import LayerContext


class TopKRouter(nn.Module):
    def __init__(self, hidden: int, num_experts: int, ctx: LayerContext) -> None:
        super().__init__()
        self.sequence_parallel = ctx.sp
        self.weight = nn.Parameter(torch.empty(num_experts, hidden, dtype=ctx.params_dtype))
        # Replicated over tp; under sequence parallelism its gradient is a partial sum, which
        # finalize_grads all-reduces for every weight marked `sequence_parallel`.
        # Bug zoo (moe-router-not-synced): the marker is missing (as on Megatron's router
        # before it was added), so the partial sums stay unreduced and tp replicas drift.
        self.weight.sequence_parallel = ctx.sp and not ctx.has_bug("moe-router-not-synced")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Scored in fp32 (Megatron's --moe-router-dtype fp32): a top-1 choice between two
        # nearly tied experts must not flip on low-precision round-off, or the candidate's
        # experts receive other tokens than the reference's and cannot be compared.
        return torch.nn.functional.linear(x.float(), self.weight.float())  # [s, b, E] logits
