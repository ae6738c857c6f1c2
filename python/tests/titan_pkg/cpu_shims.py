"""What torchtitan 0.3.0 needs to run on CPU processes over gloo. Device choices only: none
replaces a reduction, a placement or any of the model's math.

- `torchtitan.tools.utils.device_type` is "cuda" whenever no accelerator is found (its
  fallback); `ParallelDims.build_mesh` builds its world mesh on it, so it is "cpu" here.
- The Llama 3 configs' FlexAttention has no backward on CPU (torch raises
  "FlexAttention does not support backward on CPU"), and the varlen backend is CUDA only;
  each block's inner attention is torchtitan's own `ScaledDotProductAttention` (causal), which
  torchtitan's trainer documents as the maskless backend (one document per row: the same
  attention the block mask would give).
- Gloo has no `ReduceOp.PREMUL_SUM`, the reduce-scatter FSDP2 runs for a gradient divide
  factor on NCCL; FSDP2's own `set_force_sum_reduction_for_comms(True)` makes it a sum followed
  by the division by the same factor (1 as torchtitan sets it: a plain sum).
"""

from __future__ import annotations

from typing import Any


def use_cpu_device() -> None:
    import torchtitan.distributed.parallel_dims as parallel_dims

    parallel_dims.device_type = "cpu"


def causal_sdpa_attention(model_config: Any) -> None:
    """Every block of `model_config` attends with torchtitan's causal SDPA module."""
    from torchtitan.models.common.attention import ScaledDotProductAttention

    for layer in model_config.layers:
        layer.attention.inner_attention = ScaledDotProductAttention.Config()


def gloo_sum_reduction(model: Any) -> None:
    from torch.distributed.fsdp import FSDPModule

    for module in model.modules():
        if isinstance(module, FSDPModule):
            module.set_force_sum_reduction_for_comms(True)
