"""`ParallelInfo` read from Megatron-core's `DistributedDataParallel`, without importing
Megatron: the wrapper keeps the process groups it reduces over (`tp_group`, `dp_group`,
`dp_cp_group`, `pp_group`), and its `config` (the model's `TransformerConfig`) says how the
loss is normalized.

Megatron-core averages gradients over data parallelism unless the loss is normalized per
token over the whole batch (`calculate_per_token_loss`): `grad_reduce` follows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch.distributed as dist
from torch import nn

from .parallel_info import ParallelInfo

_GROUPS = ("tp_group", "dp_group", "pp_group")


def megatron_ddp(roots: Sequence[nn.Module]) -> nn.Module | None:
    for root in roots:
        module: Any = root
        for _ in range(4):
            if type(module).__name__ == "DistributedDataParallel" and hasattr(module, "ddp_config"):
                return module
            module = getattr(module, "module", None)
            if not isinstance(module, nn.Module):
                break
    return None


def _size_rank(group: Any) -> tuple[int, int]:
    if group is None:
        return 1, 0
    return dist.get_world_size(group), dist.get_rank(group)


def _tp_only(roots: Sequence[nn.Module]) -> ParallelInfo | None:
    """Tensor parallelism from a Megatron layer's `tp_group` (a model not yet wrapped in
    DDP, as `seeded_init` sees it); data-parallel replicas do not matter there."""
    for root in roots:
        for m in root.modules():
            group = getattr(m, "tp_group", None)
            weight = getattr(m, "weight", None)
            if isinstance(group, dist.ProcessGroup) and getattr(
                weight, "tensor_model_parallel", False
            ):
                tp, tp_rank = _size_rank(group)
                return ParallelInfo(tp=tp, tp_rank=tp_rank)
    return None


def megatron_parallel(roots: Sequence[nn.Module], tp_only: bool = False) -> ParallelInfo | None:
    """The layout of a run wrapped in Megatron-core's DDP (`tp_only`: or of Megatron layers
    alone), or None if there is none. Raises ValueError for layouts this reader cannot
    place (context parallelism)."""
    if not (dist.is_available() and dist.is_initialized()):
        return None
    ddp = megatron_ddp(roots)
    if ddp is None:
        return _tp_only(roots) if tp_only else None
    tp, tp_rank = _size_rank(getattr(ddp, "tp_group", None))
    dp, dp_rank = _size_rank(getattr(ddp, "dp_group", None))
    pp, pp_rank = _size_rank(getattr(ddp, "pp_group", None))
    dp_cp, _ = _size_rank(getattr(ddp, "dp_cp_group", None))
    if dp_cp != dp:
        raise ValueError(
            f"ttrace: Megatron-core DDP over dp x cp = {dp_cp} ranks, dp = {dp}: pass "
            "Tracer(parallel=ttrace.capture.ParallelInfo(..., cp=..., cp_rank=...))"
        )
    config = getattr(ddp, "config", None)
    per_token = bool(getattr(config, "calculate_per_token_loss", False))
    return ParallelInfo(
        tp=tp,
        tp_rank=tp_rank,
        dp=dp,
        dp_rank=dp_rank,
        pp=pp,
        pp_rank=pp_rank,
        grad_reduce="sum" if per_token else "mean",
    )
