"""What every layer needs to know about the run: groups, flags, precision, injected bugs."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from ttrace.capture.precision import fp8_cast

from .. import comm


@dataclass
class LayerContext:
    tp_group: object | None = None
    cp_group: object | None = None
    ep_group: object | None = None
    amax_group: object | None = None
    sequence_parallel: bool = False
    precision: str = "fp32"
    bugs: set[str] = field(default_factory=set)
    params_dtype: torch.dtype = torch.float32

    @property
    def tp_size(self) -> int:
        return comm.group_size(self.tp_group)

    @property
    def tp_rank(self) -> int:
        return comm.group_rank(self.tp_group)

    @property
    def cp_size(self) -> int:
        return comm.group_size(self.cp_group)

    @property
    def cp_rank(self) -> int:
        return comm.group_rank(self.cp_group)

    @property
    def ep_size(self) -> int:
        return comm.group_size(self.ep_group)

    @property
    def ep_rank(self) -> int:
        return comm.group_rank(self.ep_group)

    @property
    def sp(self) -> bool:
        return self.sequence_parallel and self.tp_size > 1

    def has_bug(self, name: str) -> bool:
        return name in self.bugs

    def gemm(self, x: torch.Tensor, w: torch.Tensor, weight_group=None) -> torch.Tensor:
        """x @ w.T; under fp8 both inputs are rounded through float8_e4m3fn with a per-tensor
        scale whose amax is reduced over every rank holding a piece of the same tensor, so
        the candidate quantizes exactly like the single-device reference."""
        if self.precision == "fp8":
            x = fp8_cast(x, lambda a: comm.all_reduce(a, self.amax_group, comm.dist.ReduceOp.MAX))
            w = fp8_cast(w, lambda a: comm.all_reduce(a, weight_group, comm.dist.ReduceOp.MAX))
        return F.linear(x, w)
