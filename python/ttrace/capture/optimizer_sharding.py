"""Whether the optimizer's state is sharded over data parallelism, as the job declares it, for
the manifest's `optimizer_sharding` section (docs/bundle-format.md).

Only a sharded optimizer can gather updated parameters from wrong offsets of its flat buffer
(the bug class `dist-opt-wrong-offset`): the diff names that class only where the job declares
such an optimizer. Declared by:

- a distributed optimizer's range map (`_get_model_param_range_map`: Megatron-core's
  `DistributedOptimizer`, the example's), torch's `ZeroRedundancyOptimizer`: sharded;
- a model sharded by FSDP (FSDP2's `fully_shard`, FSDP1's `FullyShardedDataParallel`): its
  optimizer holds each rank's shard of the parameters, sharded;
- otherwise, when every optimizer is torch's own (`torch.optim`) or one of Megatron-core's
  unsharded wrappers (`FP32Optimizer`, `Float16OptimizerWithFloat16Params`): not sharded.

Any other optimizer declares nothing, and the diff falls back to what the placements show.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Any

from torch import nn

from .optimizer_view import leaf_optimizers

_MEGATRON_UNSHARDED = ("FP32Optimizer", "Float16OptimizerWithFloat16Params")


def _name(obj: Any) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _loaded(module: str, *names: str) -> tuple[type, ...]:
    """Classes of a module the job has imported, never importing it here: a job that uses
    them has (importing `torch.distributed.optim` scripts functional optimizers with
    TorchScript, which fails in some environments)."""
    found = sys.modules.get(module)
    return tuple(c for n in names if isinstance(c := getattr(found, n, None), type))


def _fsdp_modules(roots: Sequence[nn.Module]) -> Iterator[nn.Module]:
    kinds = _loaded("torch.distributed.fsdp", "FSDPModule", "FullyShardedDataParallel")
    if not kinds:
        return
    for root in roots:
        for module in root.modules():
            if isinstance(module, kinds):
                yield module


def _sharded_leaf(leaf: Any) -> bool:
    if getattr(leaf, "_get_model_param_range_map", None) is not None:
        return True
    zero = _loaded("torch.distributed.optim.zero_redundancy_optimizer", "ZeroRedundancyOptimizer")
    return bool(zero) and isinstance(leaf, zero)


def _unsharded_leaf(leaf: Any) -> bool:
    module = type(leaf).__module__
    return module.startswith("torch.optim") or (
        module.startswith("megatron.core.optimizer") and type(leaf).__name__ in _MEGATRON_UNSHARDED
    )


def optimizer_sharding(optimizer: Any, roots: Sequence[nn.Module]) -> dict[str, Any] | None:
    """The manifest section: {"sharded": bool, "source": what declares it}; None when nothing
    does (no optimizer given, or one ttrace does not know)."""
    if optimizer is None:
        return None
    leaves = list(leaf_optimizers(optimizer))
    for leaf in leaves:
        if _sharded_leaf(leaf):
            return {"sharded": True, "source": _name(leaf)}
    for module in _fsdp_modules(roots):
        return {"sharded": True, "source": f"fsdp: {_name(module)}"}
    if leaves and all(_unsharded_leaf(leaf) for leaf in leaves):
        return {"sharded": False, "source": ", ".join(sorted({_name(x) for x in leaves}))}
    return None
