"""Column-parallel linear: weight split along its output dimension (Megatron's
ColumnParallelLinear, without bias)."""

from __future__ import annotations

import torch
from torch import nn

from .. import comm
from .context import LayerContext


class ColumnParallelLinear(nn.Module):
    def __init__(
        self, input_size: int, output_size: int, ctx: LayerContext, gather_output: bool = False
    ) -> None:
        super().__init__()
        if output_size % ctx.tp_size:
            raise ValueError(f"output size {output_size} not divisible by tp {ctx.tp_size}")
        self.ctx = ctx
        self.input_size = input_size
        self.output_size = output_size
        self.output_size_per_partition = output_size // ctx.tp_size
        self.gather_output = gather_output
        self.sequence_parallel = ctx.sp
        self.weight = nn.Parameter(
            torch.empty(self.output_size_per_partition, input_size, dtype=ctx.params_dtype)
        )
        # The attributes Megatron-LM sets on tensor-parallel weights.
        self.weight.tensor_model_parallel = True
        self.weight.partition_dim = 0
        self.weight.partition_stride = 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        group = self.ctx.tp_group
        # Input [s, b, h]: sequence-parallel inputs are gathered along s first.
        x = (
            comm.gather_along(x, 0, group)
            if self.sequence_parallel
            else comm.copy_to_region(x, group)
        )
        y = self.ctx.gemm(x, self.weight, weight_group=group)
        return comm.gather_last_dim(y, group) if self.gather_output else y
