"""How the job reduces gradients over data parallelism, read from what it declares, with
where it was read (docs/tolerance.md, "Gradient conventions").

The reduction divides the sum of the per-rank gradients by a factor: the number of partials
when it averages (DDP, FSDP2 by default, Megatron-core unless the loss is normalized per
token over the whole batch), 1 when it sums (FSDP2 with `set_gradient_divide_factor(1.0)`,
Megatron-core's `calculate_per_token_loss`), or what FSDP2's divide factor says. A correct job
pairs that factor with its loss normalization, so the capture divides every per-rank gradient
it stores by the same factor to get partial sums of the reference's gradients. What the job
does not declare (no DDP, FSDP2 or Megatron-core wrapper, yet data parallelism) is recorded as
undetermined, and the gradients are taken as plain sums.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from .parallel_info import ParallelInfo


@dataclass(frozen=True)
class GradConvention:
    """`reduction`: "mean", "sum", "divide" (by `divide_factor`, neither) or "none" (no data
    parallelism); `determined`: read from a declaration, not assumed; `source`: where it was
    read; `declared`: the settings read, by their names in the framework."""

    reduction: str
    divide_factor: float
    source: str
    determined: bool = True
    declared: dict[str, Any] = field(default_factory=dict)

    @property
    def grad_reduce(self) -> str:
        return "mean" if self.reduction == "mean" else "sum"

    def manifest_section(self, micro_batches: int) -> dict[str, Any]:
        return {
            "reduction": self.reduction,
            "divide_factor": self.divide_factor,
            "determined": self.determined,
            "source": self.source,
            "declared": dict(self.declared),
            "micro_batches": micro_batches,
        }


def _is_ddp(module: nn.Module) -> bool:
    from torch.nn.parallel import DistributedDataParallel

    return isinstance(module, DistributedDataParallel)


def _fsdp_groups(roots: Sequence[nn.Module]) -> list[Any] | None:
    """Every FSDP2 parameter group of the model, or None without FSDP2."""
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:
        return None
    modules = [m for r in roots for m in r.modules() if isinstance(m, FSDPModule)]
    if not modules:
        return None
    return [g for m in modules for g in m._get_fsdp_state()._fsdp_param_groups]


def _reduce_dtype(groups: list[Any]) -> str | None:
    """The dtype the reduce-scatter runs in when a mixed-precision policy declares one
    (`MixedPrecisionPolicy(reduce_dtype=...)`): it rounds every reduced gradient."""
    names = sorted({str(g.mp_policy.reduce_dtype) for g in groups if _declared_reduce(g)})
    return ", ".join(names) if names else None


def _declared_reduce(group: Any) -> bool:
    policy = getattr(group, "mp_policy", None)
    return getattr(policy, "reduce_dtype", None) is not None


def _fsdp(info: ParallelInfo, groups: list[Any]) -> GradConvention:
    convention = _fsdp_factor(info, [getattr(g, "gradient_divide_factor", None) for g in groups])
    declared = {**convention.declared, "reduce_dtype": _reduce_dtype(groups)}
    return dataclasses.replace(convention, declared=declared)


def _fsdp_factor(info: ParallelInfo, factors: list[float | None]) -> GradConvention:
    parts = info.dp * info.cp
    distinct = sorted({f for f in factors if f is not None})
    if len(distinct) > 1 or (distinct and None in factors):
        return GradConvention(
            "sum",
            1.0,
            f"fsdp2: parameter groups divide by different factors {distinct} (and the "
            "default): undetermined, gradients taken as plain sums",
            determined=False,
            declared={"gradient_divide_factor": distinct},
        )
    factor = distinct[0] if distinct else None
    if factor is None:
        return GradConvention(
            "mean",
            float(parts),
            f"fsdp2: no gradient divide factor set: the reduce-scatter averages over its "
            f"{parts} ranks",
            declared={"gradient_divide_factor": None},
        )
    reduction = "sum" if factor == 1.0 else "mean" if factor == parts else "divide"
    return GradConvention(
        reduction,
        float(factor),
        f"fsdp2: set_gradient_divide_factor({factor:g})",
        declared={"gradient_divide_factor": factor},
    )


def _megatron(info: ParallelInfo, ddp: nn.Module) -> GradConvention:
    config = getattr(ddp, "config", None)
    per_token = bool(getattr(config, "calculate_per_token_loss", False))
    in_collective = getattr(getattr(ddp, "ddp_config", None), "average_in_collective", None)
    parts = info.dp * info.cp
    declared = {"calculate_per_token_loss": per_token, "average_in_collective": in_collective}
    if per_token:
        source = "megatron-core: calculate_per_token_loss=True: gradients summed"
        return GradConvention("sum", 1.0, source, declared=declared)
    how = "in the collective" if in_collective else "by scaling before the collective"
    source = f"megatron-core: averaged over {parts} ranks {how}"
    return GradConvention("mean", float(parts), source, declared=declared)


def read_convention(
    roots: Sequence[nn.Module], info: ParallelInfo, declared_reduce: str | None
) -> GradConvention:
    """The job's convention: what the program declares through `ParallelInfo(grad_reduce=)`
    first, then its wrapper's settings."""
    from .megatron_parallel import megatron_ddp

    parts = info.dp * info.cp
    if declared_reduce is not None:
        return GradConvention(
            declared_reduce,
            float(parts) if declared_reduce == "mean" else 1.0,
            f"declared: ParallelInfo(grad_reduce={declared_reduce!r})",
            declared={"grad_reduce": declared_reduce},
        )
    if parts == 1:
        return GradConvention("none", 1.0, "no data parallelism")
    ddp = megatron_ddp(roots)
    if ddp is not None:
        return _megatron(info, ddp)
    groups = _fsdp_groups(roots)
    if groups:
        return _fsdp(info, groups)
    if any(_is_ddp(r) for r in roots):
        return GradConvention("mean", float(parts), f"ddp: averages over its {parts} ranks")
    return GradConvention(
        "sum",
        1.0,
        "undetermined: no DDP, FSDP2 or Megatron-core wrapper declares the reduction; "
        "gradients taken as plain sums",
        determined=False,
    )
