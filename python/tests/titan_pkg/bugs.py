"""Bugs injected into torchtitan's own functions at run time (its files are untouched).

- `tp`: `Module._redistribute_outputs` of `layers.0.feed_forward.w2` (row parallel: a Partial
  DTensor reduce-scattered to the sequence split) scales tensor-parallel rank 1's partial sum by
  1 + 1e-3 before the reduction: a wrong reduction in that module.
- `fsdp`: `disable_fsdp_gradient_division`, which `apply_fsdp_to_decoder` calls so that FSDP
  sums gradients (the loss is already divided by the global token count), skips block 0: its
  gradients are averaged over the data-parallel ranks, the others summed.
"""

from __future__ import annotations

from typing import Any

from torch import nn
from torch.distributed.tensor import DTensor, Partial

BUG_SCALE = 1.0 + 1e-3


def break_row_parallel_reduction(target: nn.Module) -> None:
    from torchtitan.protocols.module import Module

    original = Module._redistribute_outputs

    def buggy(self: Module, parallel_dims: Any, outputs: Any) -> Any:
        if self is target and isinstance(outputs, DTensor):
            tp = outputs.device_mesh.mesh_dim_names.index("tp")
            if isinstance(outputs.placements[tp], Partial):
                factor = BUG_SCALE if outputs.device_mesh.get_local_rank("tp") == 1 else 1.0
                local = outputs.to_local() * factor
                outputs = DTensor.from_local(
                    local, outputs.device_mesh, outputs.placements, run_check=False
                )
        return original(self, parallel_dims, outputs)

    Module._redistribute_outputs = buggy  # type: ignore[method-assign]


def average_block_zero_gradients() -> None:
    import torchtitan.distributed.fsdp as fsdp
    from torch.distributed.fsdp import FSDPModule

    def buggy(model: nn.Module) -> None:
        block_zero = model.layers["0"]
        for module in model.modules():
            if isinstance(module, FSDPModule) and module is not block_zero:
                module.set_gradient_divide_factor(1.0)

    fsdp.disable_fsdp_gradient_division = buggy
