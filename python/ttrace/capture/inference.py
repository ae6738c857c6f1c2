"""Placement of every captured tensor, inferred from module and parameter attributes.

Order of precedence: a DTensor's own placements; a hand annotation (`annotate`); the
Megatron-style layer rules (`layer_rules`); for composite modules, the first/last callee's
layout; otherwise the tensor is taken as replicated over tensor parallelism.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from ttrace.bundle import Placement

from .annotate import ModuleAnnotation, annotation_of, tied_across_pp
from .call_structure import CallStructure
from .dtensor_placement import dtensor_placement, is_dtensor
from .layer_rules import layer_rule
from .layout import Layout
from .naming import ModuleNames
from .parallel_info import ParallelInfo
from .shard_math import DimMap, placement_from_dims, two_chunk_indices

PARAM_KINDS = ("parameter", "param_grad", "main_grad", "param_after_step", "optimizer_state")


class PlacementInference:
    def __init__(self, names: ModuleNames, info: ParallelInfo, calls: CallStructure) -> None:
        self.names = names
        self.info = info
        self.calls = calls

    # --- activations ------------------------------------------------------------------------

    def layout(self, module: nn.Module, direction: str, index: int, depth: int = 0) -> Layout:
        """Layout of forward input/output `index` of `module` ("in" / "out")."""
        if module in self.names.experts:
            return Layout("whole")
        ann = annotation_of(module)
        if isinstance(ann, ModuleAnnotation):
            spec = ann.pick(direction, index)
            if isinstance(spec, str):
                return Layout.parse(spec)
        rule = layer_rule(module)
        if rule is not None:
            return rule(direction, index)
        callees = [c for c in self.calls.callees(module) if c not in self.names.experts]
        if callees and depth < 64:
            callee = callees[0] if direction == "in" else callees[-1]
            # Only position 0 is inherited: extra inputs (labels, masks) keep the default.
            if index == 0:
                return self.layout(callee, direction, 0, depth + 1)
        return Layout("replica")

    def activation(
        self,
        module: nn.Module,
        direction: str,
        index: int,
        tensor: torch.Tensor,
        gradient: bool = False,
    ) -> tuple[torch.Tensor, Placement]:
        """(local tensor to store, its placement) for an input ("in") or output ("out")."""
        if is_dtensor(tensor):
            return dtensor_placement(tensor)
        ann = annotation_of(module)
        if isinstance(ann, ModuleAnnotation):
            spec = ann.pick(direction, index)
            if isinstance(spec, Placement):
                return tensor, spec
            if callable(spec) and not isinstance(spec, str):
                return tensor, spec(tensor)
        layout = self.layout(module, direction, index)
        if gradient:
            layout = layout.for_gradient()
        return tensor, self.from_layout(tuple(tensor.shape), layout, gradient)

    def from_layout(self, shape: tuple[int, ...], layout: Layout, gradient: bool) -> Placement:
        info = self.info
        if layout.mode == "whole":
            return Placement.full(shape)
        if len(shape) == 0:
            # A scalar (a loss): a partial sum over the ranks that saw different data.
            parts = info.dp * info.cp
            if parts > 1 and not gradient:
                return Placement.full(()).with_partial(info.dp_rank * info.cp + info.cp_rank)
            return Placement.full((), "replica" if info.world_size > 1 else "copy")
        dims: list[DimMap] = []
        for role, n in zip(layout.roles(len(shape)), shape, strict=True):
            if role == "s":
                dims.append(self._seq_map(n, layout.mode == "seq"))
            elif role == "b":
                dims.append(DimMap.split(n, info.dp_rank, info.dp))
            elif role == "h" and layout.mode == "last":
                dims.append(DimMap.split(n, info.tp_rank, info.tp))
            else:
                dims.append(DimMap.whole(n))
        if info.tp > 1 and layout.mode == "replica":
            return placement_from_dims(shape, dims, "replica")
        if info.tp > 1 and layout.mode == "sum":
            return placement_from_dims(shape, dims, "sum", info.tp_rank)
        return placement_from_dims(shape, dims, "copy")

    def _seq_map(self, local: int, tp_split: bool) -> DimMap:
        info = self.info
        tp = info.tp if tp_split else 1
        total = local * tp * info.cp
        if info.cp_layout == "two_chunk":
            cp_local = two_chunk_indices(total, info.cp_rank, info.cp)
        else:
            n = total // info.cp
            cp_local = list(range(info.cp_rank * n, (info.cp_rank + 1) * n))
        dim = DimMap.of(total, cp_local)
        return dim.then_split(info.tp_rank, tp) if tp > 1 else dim

    # --- parameters -------------------------------------------------------------------------

    def is_expert_param(self, param: nn.Parameter, owner: nn.Module | None) -> bool:
        return owner in self.names.experts or not getattr(param, "allreduce", True)

    def parameter(
        self, tensor: torch.Tensor, param: nn.Parameter, owner: nn.Module | None, kind: str
    ) -> tuple[torch.Tensor, Placement, float]:
        """(local tensor, placement, scale) of `tensor`, a parameter-shaped tensor of `param`
        (the parameter itself, its gradient, its main gradient).

        `scale` multiplies captured per-rank gradients when the program averages them
        (ParallelInfo.grad_reduce == "mean"), so that partial sums add up to the reference.
        """
        if is_dtensor(tensor):
            local, placement = dtensor_placement(tensor)
            return local, placement, 1.0
        ann = annotation_of(param)
        if isinstance(ann, Placement):
            return tensor, ann, 1.0
        placement, scale = self.param_placement(param, tuple(param.shape), owner, kind)
        return tensor, placement, scale

    def tied_across_pp(self, param: torch.Tensor) -> bool:
        return self.info.pp > 1 and tied_across_pp(param)

    def param_placement(
        self, param: torch.Tensor, shape: Sequence[int], owner: nn.Module | None, kind: str
    ) -> tuple[Placement, float]:
        info = self.info
        shape = tuple(shape)
        tp_split = bool(getattr(param, "tensor_model_parallel", False)) and info.tp > 1
        dims = [DimMap.whole(n) for n in shape]
        if tp_split:
            pd = int(getattr(param, "partition_dim", 0))
            dims[pd] = DimMap.split(shape[pd], info.tp_rank, info.tp)
        expert = self.is_expert_param(param, owner)
        data_groups = (
            [(info.edp, info.edp_rank)]
            if expert
            else [
                (info.dp, info.dp_rank),
                (info.cp, info.cp_rank),
            ]
        )
        tp_replicas = 1 if tp_split else info.tp
        # A copy tied across the first and last pipeline stage (tied embeddings): the two
        # stages hold partial sums of its gradient and replicas of everything else.
        pp_groups = [(2, 0 if info.pp_rank == 0 else 1)] if self.tied_across_pp(param) else []
        replicas = math.prod(n for n, _ in data_groups + pp_groups) * tp_replicas
        if kind == "param_grad":
            groups = list(data_groups) + pp_groups
            if getattr(param, "sequence_parallel", False) and not tp_split:
                groups.append((info.tp, info.tp_rank))
            parts = math.prod(n for n, _ in groups)
            if parts > 1:
                index = 0
                for n, r in groups:
                    index = index * n + r
                # Averaging divides by the data-parallel count only; sequence-parallel partial
                # sums over tp are plain sums either way.
                data = math.prod(n for n, _ in data_groups)
                scale = 1.0 / data if info.grad_reduce == "mean" else 1.0
                return placement_from_dims(shape, dims, "sum", index), scale
        combine = "replica" if replicas > 1 else "copy"
        return placement_from_dims(shape, dims, combine), 1.0
