"""The experts of one MoE layer that live on this expert-parallel rank.

`local_experts.<i>` is local expert i; its global id is `local_expert_indices[i]` (the
attribute name Megatron-LM uses), which ttrace uses for canonical names."""

from __future__ import annotations

from torch import nn

from .context import LayerContext
from .expert_mlp import ExpertMLP


class Experts(nn.Module):
    def __init__(self, hidden: int, ffn: int, num_experts: int, ctx: LayerContext) -> None:
        super().__init__()
        if num_experts % ctx.ep_size:
            raise ValueError(f"{num_experts} experts not divisible by ep {ctx.ep_size}")
        n_local = num_experts // ctx.ep_size
        self.local_expert_indices = [ctx.ep_rank * n_local + i for i in range(n_local)]
        self.local_experts = nn.ModuleList(ExpertMLP(hidden, ffn, ctx) for _ in range(n_local))
        for p in self.parameters():
            # Megatron's marker for expert weights: not reduced over the full dp group.
            p.allreduce = False
