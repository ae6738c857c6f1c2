"""`ParallelInfo` read from the model when the program gives none, and the gradient
convention when it does not say.

- a root wrapped in Megatron-core's `DistributedDataParallel`: its process groups and loss
  convention (`megatron_parallel`);
- a root wrapped in `DistributedDataParallel`: data parallelism over the default group;
- parameters sharded by FSDP2 (`fully_shard`): data parallelism over their mesh;
- DTensor parameters on a device mesh with named dimensions spanning the job (a
  torchtitan-style `(dp_shard, tp)` mesh): every dimension, from its name
  (`ParallelInfo.from_mesh`);
- other DTensor parameters (torch `parallelize_module`, transformers' `tp_plan`): tensor
  parallelism over their 1-d mesh.
How gradients are reduced (`grad_reduce`) comes from `grad_convention`: what the program
declares, else its wrapper's settings (DDP averages; FSDP2 averages unless its gradient divide
factor says otherwise; Megatron-core averages unless the loss is normalized per token).

DDP's `dim` (`DistributedDataParallel(dim=0)`, the dimension it would scatter inputs along)
suggests the activation order of a run that does not set `ParallelInfo(batch_dim=/seq_dim=)`:
batch-first (`dim=0`) or sequence-first (`dim=1`). It is not a declaration of every
activation's layout (a sequence-first `[s, b, h]` model may run under DDP with `dim=0`), so
it is kept as `order_hint`: capture lays activations out by it, records them as inferred, and
records the other order as an alternative for the comparison to resolve.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from torch import nn

from .dtensor_placement import is_dtensor
from .grad_convention import GradConvention, read_convention
from .megatron_parallel import megatron_parallel
from .mesh_dims import mesh_roles
from .parallel_info import ParallelInfo


def _is_ddp(module: nn.Module) -> bool:
    from torch.nn.parallel import DistributedDataParallel

    return isinstance(module, DistributedDataParallel)


def _fsdp_modules(roots: Sequence[nn.Module]) -> list[nn.Module]:
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:
        return []
    return [m for r in roots for m in r.modules() if isinstance(m, FSDPModule)]


def _mesh_of(params: list[nn.Parameter]) -> tuple[int, int] | None:
    for p in params:
        if is_dtensor(p) and p.device_mesh.ndim == 1:
            mesh = p.device_mesh
            return mesh.size(), mesh.get_local_rank()
    return None


def _spans_job(mesh: Any, world_size: int) -> bool:
    """A multi-dimensional mesh over every rank whose dimension names all say a role."""
    if not mesh.mesh_dim_names or mesh.size() != world_size or mesh.ndim < 2:
        return False
    try:
        mesh_roles(mesh)
    except ValueError:
        return False
    return True


def _named_world_mesh(roots: Sequence[nn.Module], world_size: int) -> Any:
    """A named device mesh spanning the job that some DTensor parameter lives on (a
    torchtitan-style `(dp_shard, tp)` mesh), or None: its root mesh, else the parameter's own
    mesh (torchtitan unflattens a 1-d `("world",)` root into `(fsdp, tp)` and the like, so
    the root names no role)."""
    for r in roots:
        for p in r.parameters():
            if not is_dtensor(p):
                continue
            mesh = p.device_mesh
            root = mesh._get_root_mesh() if hasattr(mesh, "_get_root_mesh") else mesh
            for candidate in (root, mesh):
                if _spans_job(candidate, world_size):
                    return candidate
    return None


def _ddp_group(roots: Sequence[nn.Module], rank: int, world_size: int) -> tuple[int, int] | None:
    """(size, rank) of the group a `DistributedDataParallel` root reduces over (the default
    group unless it was given one); None without DDP."""
    import torch.distributed as dist

    for r in roots:
        if _is_ddp(r):
            group = getattr(r, "process_group", None)
            if group is None or not dist.is_initialized():
                return world_size, rank
            return dist.get_world_size(group), dist.get_rank(group)
    return None


def _from_named_mesh(mesh: Any, pipeline: tuple[int, int]) -> ParallelInfo:
    info = ParallelInfo.from_mesh(mesh)
    if pipeline != (1, 0) and (info.pp, info.pp_rank) != pipeline:
        raise ValueError(
            f"ttrace: the device mesh {mesh.mesh_dim_names} puts this rank at pipeline "
            f"{info.pp_rank} of {info.pp}, its pipelining stages at {pipeline[1]} of "
            f"{pipeline[0]}; pass Tracer(parallel=ttrace.capture.ParallelInfo(...))"
        )
    return dataclasses.replace(info, pp=pipeline[0], pp_rank=pipeline[1]) if info.pp == 1 else info


def detect_parallel(
    roots: Sequence[nn.Module], rank: int, world_size: int, pipeline: tuple[int, int] = (1, 0)
) -> ParallelInfo:
    """The layout of a single-level DDP / FSDP2 / tensor-parallel run; raises ValueError
    naming what it found when the sizes do not multiply to the world size. `pipeline`:
    (size, rank) of the pipeline dimension the job's pipelining stages declare."""
    if world_size == 1:
        return ParallelInfo.single()
    megatron = megatron_parallel(roots)
    if megatron is not None:
        return megatron
    mesh = _named_world_mesh(roots, world_size)
    if mesh is not None:
        return _from_named_mesh(mesh, pipeline)
    dp, dp_rank, tp, tp_rank = 1, 0, 1, 0
    fsdp = _fsdp_modules(roots)
    fsdp_ids = {id(p) for m in fsdp for p in m.parameters()}
    ddp = _ddp_group(roots, rank, world_size)
    if ddp is not None:
        dp, dp_rank = ddp
    elif fsdp:
        found = _mesh_of([p for m in fsdp for p in m.parameters()])
        if found:
            dp, dp_rank = found
    plain = [p for r in roots for p in r.parameters() if id(p) not in fsdp_ids]
    found = _mesh_of(plain)
    if found:
        tp, tp_rank = found
    pp, pp_rank = pipeline
    if dp * tp * pp != world_size:
        staged = f", pp={pp} (pipelining stages)" if pp > 1 else ""
        raise ValueError(
            f"ttrace: found dp={dp} (DDP/FSDP2) and tp={tp} (DTensor parameters){staged} on "
            f"{world_size} ranks; pass Tracer(parallel=ttrace.capture.ParallelInfo(...))"
        )
    return ParallelInfo(tp=tp, tp_rank=tp_rank, dp=dp, dp_rank=dp_rank, pp=pp, pp_rank=pp_rank)


def declared_batch_dim(roots: Sequence[nn.Module]) -> int | None:
    """The input batch dimension a `DistributedDataParallel` root declares, if any."""
    for r in roots:
        if _is_ddp(r):
            dim = int(getattr(r, "dim", 0))
            return dim if dim in (0, 1) else None
    return None


def resolve_parallel(
    given: ParallelInfo | None, roots: Sequence[nn.Module], rank: int, world_size: int
) -> tuple[ParallelInfo, GradConvention]:
    """The layout and the gradient convention (`grad_convention`): what the program
    declares in `given` first, then what its wrappers say."""
    info = given if given is not None else detect_parallel(roots, rank, world_size)
    if info.batch_dim is None and info.seq_dim is None:
        batch_dim = declared_batch_dim(roots)
        if batch_dim is not None:
            info = dataclasses.replace(info, order_hint="bs" if batch_dim == 0 else "sb")
    declared = given.grad_reduce if given is not None else None
    convention = read_convention(roots, info, declared)
    factor = convention.divide_factor if convention.reduction == "divide" else None
    info = dataclasses.replace(info, grad_reduce=convention.grad_reduce, grad_divide_factor=factor)
    return info, convention
