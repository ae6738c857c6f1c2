"""Dense MLP: column-parallel up projection, GELU, row-parallel down projection."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .column_linear import ColumnParallelLinear
from .context import LayerContext
from .row_linear import RowParallelLinear


class MLP(nn.Module):
    def __init__(self, hidden: int, ffn_hidden: int, ctx: LayerContext) -> None:
        super().__init__()
        self.linear_fc1 = ColumnParallelLinear(hidden, ffn_hidden, ctx)
        self.linear_fc2 = RowParallelLinear(ffn_hidden, hidden, ctx)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear_fc2(F.gelu(self.linear_fc1(x)))
