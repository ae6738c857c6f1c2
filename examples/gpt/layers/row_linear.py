"""Row-parallel linear: weight split along its input dimension; the partial products are
summed over the tensor-parallel group (reduce-scattered along s under sequence parallelism)."""

from __future__ import annotations

import torch
from torch import nn

from .. import comm
from .context import LayerContext


class RowParallelLinear(nn.Module):
    def __init__(self, input_size: int, output_size: int, ctx: LayerContext) -> None:
        super().__init__()
        if input_size % ctx.tp_size:
            raise ValueError(f"input size {input_size} not divisible by tp {ctx.tp_size}")
        self.ctx = ctx
        self.input_size = input_size
        self.output_size = output_size
        self.input_size_per_partition = input_size // ctx.tp_size
        self.input_is_parallel = True
        self.sequence_parallel = ctx.sp
        self.weight = nn.Parameter(
            torch.empty(output_size, self.input_size_per_partition, dtype=ctx.params_dtype)
        )
        self.weight.tensor_model_parallel = True
        self.weight.partition_dim = 1
        self.weight.partition_stride = 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.ctx.gemm(x, self.weight, weight_group=self.ctx.tp_group)
        if self.sequence_parallel:
            return comm.reduce_scatter_along(y, 0, self.ctx.tp_group)
        return comm.reduce_from_region(y, self.ctx.tp_group)
