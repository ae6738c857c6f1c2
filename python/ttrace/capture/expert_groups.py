"""Where a mixture-of-experts job keeps its experts: global expert ids and the process groups
an expert's parameters and tokens live in, read from the framework's own modules.

Megatron-core (0.16: `megatron.core.transformer.moe`):
- the experts container (`SequentialMLP`; `GroupedMLP`/`TEGroupedMLP` fuse the local experts
  into one weight and are not read here) holds `num_local_experts` experts in its
  `local_experts` list, and the groups it was built with: `ep_group` (expert parallel),
  `tp_group` (expert tensor parallel, `expert_tensor_parallel_size`, which may differ from
  the attention's TP) and `dp_group` (expert data parallel);
- the MoE layer above it keeps the experts' global ids as `local_expert_indices`
  (`ep_rank * num_local_experts + i`).
The ids are read from the nearest enclosing module that keeps `local_expert_indices`, else
from the container's own `ep_group` (the offset Megatron's checkpointing uses); an expert list
with neither is an error naming the module: its experts cannot be told apart across ranks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch.distributed as dist
from torch import nn

from .errors import TracerError

EXPERT_LIST = "local_experts"


@dataclass(frozen=True)
class ExpertGroups:
    """Sizes and this rank's coordinates in an expert's process groups."""

    etp: int = 1
    etp_rank: int = 0
    edp: int = 1
    edp_rank: int = 0
    ep: int = 1
    ep_rank: int = 0


def _size_rank(group: object) -> tuple[int, int]:
    if not isinstance(group, dist.ProcessGroup):
        return 1, 0
    return dist.get_world_size(group), dist.get_rank(group)


def expert_groups(container: nn.Module) -> ExpertGroups | None:
    """The groups of the experts in `container` (a module holding `local_experts`), or None
    when it declares none (then the job's `ParallelInfo` places them)."""
    attrs = ("tp_group", "dp_group", "ep_group")
    if not any(isinstance(getattr(container, a, None), dist.ProcessGroup) for a in attrs):
        return None
    etp, etp_rank = _size_rank(getattr(container, "tp_group", None))
    edp, edp_rank = _size_rank(getattr(container, "dp_group", None))
    ep, ep_rank = _size_rank(getattr(container, "ep_group", None))
    return ExpertGroups(etp, etp_rank, edp, edp_rank, ep, ep_rank)


def is_expert_list(parent: nn.Module | None, module: nn.Module) -> bool:
    """Is `module` the list of local experts of `parent` (an experts container)?"""
    return isinstance(module, nn.ModuleList) and getattr(parent, EXPERT_LIST, None) is module


def global_expert_ids(chain: Sequence[nn.Module], path: str) -> list[int]:
    """Global ids of the experts in `chain[-1]` (the expert list; `chain[-2]` its container,
    the rest its ancestors, outermost first). `path` names the list in errors."""
    container = chain[-2]
    count = len(chain[-1])
    for module in reversed(chain[:-1]):
        ids = getattr(module, "local_expert_indices", None)
        if ids is not None:
            ids = [int(i) for i in ids]
            if len(ids) != count:
                raise TracerError(
                    f"ttrace: {type(module).__name__} above the expert list {path} keeps "
                    f"{len(ids)} local_expert_indices for {count} local experts"
                )
            return ids
    group = getattr(container, "ep_group", None)
    if isinstance(group, dist.ProcessGroup) or not (dist.is_available() and dist.is_initialized()):
        _, ep_rank = _size_rank(group)
        return [ep_rank * count + i for i in range(count)]
    raise TracerError(
        f"ttrace: the expert list {path} ({type(container).__name__}.{EXPERT_LIST}) has no "
        "global expert ids: no enclosing module keeps local_expert_indices and its container "
        "has no ep_group"
    )
