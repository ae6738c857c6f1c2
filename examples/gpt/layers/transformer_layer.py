"""Pre-norm transformer block. `layer_number` is the 1-based global layer number (as in
Megatron-LM), which ttrace uses to give layers the same name on every pipeline stage."""

from __future__ import annotations

import torch
from torch import nn

from ..config import GPTConfig
from .attention import Attention
from .context import LayerContext
from .mlp import MLP
from .moe import MoELayer
from .norm import RMSNorm


class TransformerLayer(nn.Module):
    def __init__(self, cfg: GPTConfig, ctx: LayerContext, layer_number: int) -> None:
        super().__init__()
        self.layer_number = layer_number
        self.input_layernorm = RMSNorm(cfg.hidden, ctx, cfg.norm_eps)
        self.self_attention = Attention(cfg, ctx)
        self.pre_mlp_layernorm = RMSNorm(cfg.hidden, ctx, cfg.norm_eps)
        is_moe = cfg.num_experts > 0 and (layer_number - 1) % cfg.moe_every == 1
        self.mlp = (
            MoELayer(cfg.hidden, cfg.ffn_hidden, cfg.num_experts, ctx, layer_number)
            if is_moe
            else MLP(cfg.hidden, cfg.ffn_hidden, ctx)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attention(self.input_layernorm(x))
        return x + self.mlp(self.pre_mlp_layernorm(x))
