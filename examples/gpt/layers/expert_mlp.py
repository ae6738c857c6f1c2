"""One expert: a small MLP over a flat list of tokens [n, h]."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .context import LayerContext
from .local_linear import LocalLinear


class ExpertMLP(nn.Module):
    def __init__(self, hidden: int, ffn_hidden: int, ctx: LayerContext) -> None:
        super().__init__()
        self.linear_fc1 = LocalLinear(hidden, ffn_hidden, ctx)
        self.linear_fc2 = LocalLinear(ffn_hidden, hidden, ctx)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear_fc2(F.gelu(self.linear_fc1(x)))
