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
    # Routing replay (routing_replay.RoutingReplay): records or replays MoE expert choices.
    routing: object | None = None

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

    def gemm(
        self, x: torch.Tensor, w: torch.Tensor, weight_group=None, shared_input: bool = True
    ) -> torch.Tensor:
        """x @ w.T; under fp8 both inputs are rounded through float8_e4m3fn with a per-tensor
        scale whose amax is reduced over every rank holding a piece of the same tensor, so
        the candidate quantizes exactly like the single-device reference."""
        if self.precision == "fp8":
            # `shared_input=False`: x is whole on this rank (an expert's tokens), so its amax
            # must not be mixed with other ranks' (other experts') inputs.
            x_group = self.amax_group if shared_input else None
            x = fp8_cast(x, lambda a: comm.all_reduce(a, x_group, comm.dist.ReduceOp.MAX))
            # Bug zoo (fp8-amax-not-reduced): each tp rank scales its weight shard by the
            # shard's own amax, so shards are quantized on different grids.
            w_group = None if self.has_bug("fp8-amax-not-reduced") else weight_group
            w = fp8_cast(w, lambda a: comm.all_reduce(a, w_group, comm.dist.ReduceOp.MAX))
        return F.linear(x, w)
