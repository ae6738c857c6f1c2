"""Placement of every captured tensor, inferred from module and parameter attributes.

Order of precedence for an activation: a DTensor's own placements; a hand annotation
(`annotate`); the Megatron-style layer rules (`layer_rules`); a tensor-parallel style read
back from the module (`tp_styles`: torch's `parallelize_module`, transformers' `tp_plan`, a
DTensor weight); the layout of the module that produced the tensor (an elementwise module,
or any input, takes its producer's layout); for composite modules, the first/last callee's
layout; otherwise, by shape, or replicated over tensor parallelism with a note saying so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils.weak import WeakIdKeyDictionary

from ttrace.bundle import Placement

from .annotate import ModuleAnnotation, annotation_of, tied_across_pp
from .call_structure import CallStructure
from .dtensor_placement import dtensor_placement, is_dtensor
from .expert_groups import ExpertGroups, expert_groups
from .layer_rules import layer_rule
from .layout import Layout
from .layout_note import LayoutNote
from .layout_shapes import ShapeFacts
from .lineage import lineage_layout, lineage_source, tag
from .megatron_rules import MegatronRules
from .mesh_compose import Outer, compose_activation, compose_parameter
from .mesh_dims import covered_roles
from .naming import ModuleNames
from .parallel_info import ParallelInfo
from .placement_memo import ParamSource, PlacementMemo
from .run_order import activation_order, order_declared
from .shard_math import DimMap, placement_from_dims, two_chunk_indices
from .token_rows import rows_placement
from .tp_styles import StyleLayouts, module_style


@dataclass(frozen=True)
class CallEntry:
    """What one forward call's inputs say about its outputs."""

    layout: Layout | None  # the primary input's
    shape: tuple[int, ...]
    replicated: bool  # every tensor input replicated over tensor parallelism
    # every tensor input replicated or split on its sequence dimension only, as declared
    # (no fallback): a module without tensor-parallel parameters cannot split its outputs
    # on any other dimension
    seq_only: bool = False


@dataclass(frozen=True)
class Decision:
    """The layout chosen for a forward tensor (None: placed by its DTensor or an
    annotation), the note saying how, when inference fell back, and where the placement
    came from (`Placement.SOURCES`)."""

    layout: Layout | None
    note: LayoutNote | None
    source: str = "inferred"
    # tokens chosen by a router (`token_routing.RowsDecision`): router outputs, expert rows
    rows: Any = None
    # Whether the tensor-parallel layout itself was inferred (`source` is also "inferred"
    # when only the activation order was): then the other layouts are alternatives.
    layout_inferred: bool = False


# Rules of `decide` whose layout the job states: Megatron's module types and attributes,
# its expert subtrees, torch's and transformers' parallel styles, a marked parameter passed as an
# argument.
DECLARED_RULES = frozenset({"expert", "megatron", "style", "parameter"})


PARAM_KINDS = ("parameter", "param_grad", "main_grad", "param_after_step", "optimizer_state")


def vector_param_layout(tensor: torch.Tensor | None, tp: int) -> tuple[Layout, str] | None:
    """(layout, rule) of a 1-d parameter handed to a module as an argument (an attention
    sink's per-head `softmax_offset`): laid out as Megatron's attributes declare the
    parameter, split over tp when it is marked tensor-parallel. Unmarked under tp it is
    undeclared: a replica by inference, with the splits as alternatives the reference's shape
    settles (a module's rule for its extra arguments must not declare it a replica: the
    missing mark is often the bug). (A 1-d tensor has no batch dimension, so the activation
    rules place it, and its gradient over dp, as they place a bias.)"""
    if not isinstance(tensor, nn.Parameter) or tensor.dim() != 1 or is_dtensor(tensor):
        return None  # a DTensor declares its own placement
    if getattr(tensor, "tensor_model_parallel", False):
        return Layout("split", dim=int(getattr(tensor, "partition_dim", 0))), "parameter"
    if tp > 1:
        return Layout("replica"), "undeclared parameter"
    return None


class PlacementInference:
    def __init__(self, names: ModuleNames, info: ParallelInfo, calls: CallStructure) -> None:
        self.names = names
        self.info = info
        self.calls = calls
        self.order = activation_order(info, names.names)
        self.order_declared = order_declared(info, names.names)
        self.facts = ShapeFacts(names, info)
        self.megatron = MegatronRules(names.names, info.tp)
        self._styles: dict[nn.Module, StyleLayouts | None] = {}
        # Layout of every local tensor a captured module produced (or was handed), so that
        # its consumers (inputs, elementwise modules) take the producer's layout.
        self.produced: WeakIdKeyDictionary = WeakIdKeyDictionary()
        self.produced_source: WeakIdKeyDictionary = WeakIdKeyDictionary()
        self._buffers: WeakIdKeyDictionary | None = None  # filled at first use
        self._outer: dict[int, Outer] = {}  # by id of a DTensor's device mesh
        self.memo = PlacementMemo()
        self._expert_groups: dict[nn.Module, ExpertGroups | None] = {}
        # the job's token routing (`token_routing.TokenRouting`), set by the tracer
        self.routing: Any = None

    @property
    def grad_scale(self) -> float:
        """Factor applied to captured per-rank gradients (and per-rank losses) so that their
        partial sums add up to the reference: 1/(dp x cp) when gradients are averaged, one
        over the declared divide factor (`grad_convention`)."""
        return self.info.reduction_scale(self.info.dp * self.info.cp)

    def style(self, module: nn.Module) -> StyleLayouts | None:
        if module not in self._styles:
            self._styles[module] = module_style(module, self.facts.data_parallel_params)
        return self._styles[module]

    # --- activations ------------------------------------------------------------------------

    def layout(self, module: nn.Module, direction: str, index: int | str) -> Layout:
        """Layout of forward input/output `index` of `module` from the module alone."""
        return self.decide(module, direction, index)[0]

    def decide(
        self,
        module: nn.Module,
        direction: str,
        index: int | str,
        tensor: torch.Tensor | None = None,
        primary: bool | None = None,
        depth: int = 0,
        entry: CallEntry | None = None,
    ) -> tuple[Layout, str]:
        """(layout, where it came from) of forward input/output `index` of `module`.
        `primary`: the module's first tensor input / first output (default: index 0).
        `entry`: this call's inputs: the primary input's layout and shape, which an
        elementwise module (no parameters, no callees, output shaped like its input) passes
        on, and whether every input is replicated over tp (then so are the outputs of a
        module without tensor-parallel parameters: rotary tables, masks)."""
        primary = index in (0, "0") if primary is None else primary
        if module in self.names.experts:
            return Layout("whole"), "expert"
        ann = annotation_of(module)
        if isinstance(ann, ModuleAnnotation):
            spec = ann.pick(direction, index)
            if isinstance(spec, str):
                return Layout.parse(spec), "annotation"
        vector_param = vector_param_layout(tensor, self.info.tp)
        if vector_param is not None:
            return vector_param
        megatron = self.megatron.decide(
            module, direction, index, tensor.dim() if tensor is not None else None
        )
        if megatron is not None:
            return megatron, "megatron"
        rule = layer_rule(module)
        if rule is not None:
            return rule(direction, int(index) if str(index).isdigit() else 0), "megatron"
        style = self.style(module)
        if style is not None and primary:
            chosen = style.inputs if direction == "in" else style.outputs
            if chosen is not None:
                return chosen, "style"
        if tensor is not None and tensor in self.produced:
            return self.produced[tensor], "producer"
        if tensor is not None:
            carried = lineage_layout(tensor)
            if carried is not None:
                return carried, "lineage"
        callees = [c for c in self.calls.callees(module) if c not in self.names.experts]
        if entry is not None and direction == "out" and not callees and tensor is not None:
            if (
                entry.layout is not None
                and tuple(tensor.shape) == entry.shape
                and next(module.parameters(), None) is None
            ):
                return entry.layout, "elementwise"
            if not self.facts.has_tp_params(module):
                if entry.replicated:
                    return Layout("replica"), "replicated inputs"
                if entry.seq_only:
                    return Layout("replica"), "sequence-split inputs"
        if callees and depth < 64 and primary:
            # Only the primary input/output is inherited: extra inputs keep the default.
            callee = callees[0] if direction == "in" else callees[-1]
            return self.decide(callee, direction, 0, None, True, depth + 1)
        heads = self.megatron.heads_layout(tensor)
        if heads is not None:
            return heads, "megatron heads"
        return Layout("replica"), "default"

    def activation(
        self,
        module: nn.Module,
        direction: str,
        index: int | str,
        tensor: torch.Tensor,
        gradient: bool = False,
        decided: Decision | None = None,
        primary: bool | None = None,
        entry: CallEntry | None = None,
        origin: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, Placement, Decision]:
        """(local tensor to store, its placement, the decision) for an input ("in") or
        output ("out"). `decided`: the forward tensor's decision, for its gradient;
        `origin`: the live tensor `tensor` copies (for the producer lookup)."""
        annotated = self._annotated(module, direction, index, tensor)
        if annotated is not None:
            return annotated
        routed = self._routed(module, direction, tensor, decided, origin, gradient)
        if routed is not None:
            return routed
        if is_dtensor(tensor):
            return self._declared_dtensor(tensor)
        if not gradient and self.is_buffer(tensor):
            # A constant table the model holds (a rotary `freqs_cis`, a causal mask): whole
            # on every rank, whatever its first dimension looks like; replicas must agree.
            combine = "replica" if self.info.world_size > 1 else "copy"
            source = "declared" if self.info.world_size == 1 else "inferred"
            placement = Placement.full(tuple(tensor.shape), combine).with_source(source)
            return tensor, placement, Decision(None, None, source)
        shape = tuple(tensor.shape)
        if decided is None or decided.layout is None:
            lookup = origin if origin is not None else tensor
            decided = self._decide_layout(module, direction, index, tensor, lookup, primary, entry)
        assert decided.layout is not None
        layout = decided.layout.for_gradient() if gradient else decided.layout
        placement, batch_note = self.place(shape, layout, gradient, direction)
        note = decided.note
        if batch_note and note is None:
            note = LayoutNote(batch_note, "")
        source = "inferred" if batch_note else decided.source
        placement = placement.with_source(source)
        if source == "inferred" and not batch_note:
            placement = self.hypotheses(placement, shape, decided, gradient, direction)
        return (
            tensor,
            placement,
            Decision(decided.layout, note, source, layout_inferred=decided.layout_inferred),
        )

    def _annotated(
        self, module: nn.Module, direction: str, index: int | str, tensor: torch.Tensor
    ) -> tuple[torch.Tensor, Placement, Decision] | None:
        """The placement an explicit annotation gives, if the module has one for this slot."""
        ann = annotation_of(module)
        if not isinstance(ann, ModuleAnnotation):
            return None
        # An explicit placement refines even a DTensor's (it states the whole job's layout,
        # which a DTensor on a sub-mesh cannot); it applies to the local shard.
        spec = ann.pick(direction, index)
        local = tensor.to_local() if is_dtensor(tensor) else tensor
        done = Decision(None, None, "annotated")
        if isinstance(spec, Placement):
            return local, spec.with_source("annotated"), done
        if callable(spec) and not isinstance(spec, str):
            return local, spec(local).with_source("annotated"), done
        return None

    def _declared_dtensor(self, tensor: torch.Tensor) -> tuple[torch.Tensor, Placement, Decision]:
        """A DTensor's own placements, composed with the mesh dimensions it is replicated
        over (data parallel outside its sub-mesh)."""
        local, placement = dtensor_placement(tensor)
        roles = Layout("replica").roles(tensor.dim(), self.order)
        batch = roles.index("b") if "b" in roles else None
        seq = roles.index("s") if "s" in roles else None
        outer = self.outer(tensor.device_mesh)
        source = self.with_order("declared", tensor.dim(), outer.parts > 1)
        placement = compose_activation(placement, outer, batch, seq).with_source(source)
        return local, placement, Decision(None, None, source)

    def _decide_layout(
        self,
        module: nn.Module,
        direction: str,
        index: int | str,
        tensor: torch.Tensor,
        lookup: torch.Tensor,
        primary: bool | None,
        entry: CallEntry | None,
    ) -> Decision:
        """The layout of a tensor nothing declares: what the job says of its module, else
        its shape; a module output's layout is tagged on the tensor for its consumers."""
        shape = tuple(tensor.shape)
        layout, source = self.decide(module, direction, index, lookup, primary, 0, entry)
        note = None
        if source in ("default", "sequence-split inputs") and tensor.is_floating_point():
            # Inputs split on the sequence only leave the sequence as the one dimension the
            # outputs may be split on.
            modes = ("seq",) if source != "default" else ("seq", "last")
            layout, note = self.facts.by_shape(module, direction, index, shape, self.order, modes)
        # Integer tensors nothing placed (ids, positions, masks) are replicas over tp.
        origin_of = self.source_of(source, lookup)
        decided = Decision(
            layout,
            note,
            self.with_order(origin_of, len(shape)),
            layout_inferred=origin_of == "inferred",
        )
        if direction == "out" and note is None and source != "default":
            tag(lookup, layout, self.order, decided.source)
            self.produced_source[lookup] = decided.source
        return decided

    def hypotheses(
        self,
        placement: Placement,
        shape: tuple[int, ...],
        decided: Decision,
        gradient: bool,
        direction: str,
    ) -> Placement:
        """`placement`, an inferred one, with the alternatives nothing here excludes: the
        other activation order when no order is declared, the other tensor-parallel layouts
        (replica, sequence-split, hidden-split) when the layout was inferred. The comparison
        keeps the one that rebuilds the reference's shape (docs/bundle-format.md)."""
        assert decided.layout is not None
        info = self.info
        declared_order = self.order_declared
        base = decided.layout.order or self.order
        orders = [base] if declared_order else [base, "bs" if base == "sb" else "sb"]
        chosen = decided.layout
        primary = Layout(chosen.mode, base, chosen.dim)
        layouts = [primary]
        if info.tp > 1 and decided.layout_inferred:
            layouts += [Layout(m) for m in ("replica", "seq", "last") if m != chosen.mode]
        alternatives: list[tuple[str, Placement]] = []
        for candidate in layouts:
            for order in orders:
                alt = Layout(candidate.mode, order, candidate.dim)
                if alt == primary:
                    continue
                laid = alt.for_gradient() if gradient else alt
                try:
                    alt_placement, alt_note = self.place(shape, laid, gradient, direction)
                except ValueError:
                    # A layout this local shape cannot have (a mesh's index map that does
                    # not fit it) is excluded by the shape: never a failed capture.
                    continue
                if not alt_note:
                    alternatives.append((self.label(alt), alt_placement))
        alternatives += self._dp_replica(shape, primary, gradient, direction)
        return placement.with_alternatives(self.label(primary), alternatives)

    def _dp_replica(
        self, shape: tuple[int, ...], layout: Layout, gradient: bool, direction: str
    ) -> list[tuple[str, Placement]]:
        """A forward activation the same on every data-parallel rank: a one-row batch's
        `[1, s]` position ids, which a model builds alike on every rank, has the shape of a
        one-row split. Its batch dimension whole, a replica over dp, is an alternative the
        reference's shape and the replicas' bytes settle. Only for a batch dimension of one
        row: a larger one that rebuilds the reference's batch is a split."""
        if gradient or self.info.dp == 1 or len(shape) < 2:
            return []
        laid = Layout(layout.mode, layout.order or self.order, layout.dim)
        if shape[laid.roles(len(shape), self.order).index("b")] != 1:
            return []
        key = ("act-dp-replica", shape, laid, direction, self.facts.batch_local)
        hit = self.memo.get(self.info, key)
        if hit is None:
            try:
                hit = self.memo.put(key, self._place(shape, laid, False, direction, True))
            except ValueError:
                return []
        placement, note = hit
        return [] if note else [(self.label(laid) + ", replica over dp", placement)]

    def label(self, layout: Layout) -> str:
        """A hypothesis's name: the layout over tp, and the activation order."""
        order = "batch-first (bs)" if layout.order == "bs" else "sequence-first (sb)"
        if self.info.tp == 1:
            return order
        head = f"split dim {layout.dim} over tp" if layout.mode == "split" else layout.mode
        return f"{head}, {order}"

    def _routed(
        self,
        module: nn.Module,
        direction: str,
        tensor: torch.Tensor,
        decided: Decision | None,
        origin: torch.Tensor | None,
        gradient: bool,
    ) -> tuple[torch.Tensor, Placement, Decision] | None:
        """A router's output or an expert's tensor: its rows are tokens (`token_rows`)."""
        if self.routing is None or is_dtensor(tensor):
            return None
        if decided is not None:
            rows = decided.rows
        else:
            rows = self.routing.decide(module, direction, origin if origin is not None else tensor)
        if rows is None:
            return None
        shape = tuple(tensor.shape)
        placement = rows_placement(shape, rows.rows, rows.layout, rows.over, gradient)
        return (
            tensor,
            placement.with_source("declared"),
            Decision(rows.layout, None, "declared", rows),
        )

    def source_of(self, rule: str, tensor: torch.Tensor | None) -> str:
        """The placement source of a layout `decide` found by `rule`."""
        if rule == "annotation":
            return "annotated"
        if self.info.tp == 1 or rule in DECLARED_RULES:
            return "declared"  # without tensor parallelism there is no tp layout to infer
        if rule == "producer" and tensor is not None:
            return self.produced_source.get(tensor, "inferred")
        if rule == "lineage" and tensor is not None:
            return lineage_source(tensor)
        return "inferred"

    def with_order(self, source: str, ndim: int, outer: bool = True) -> str:
        """`source`, unless the tensor's batch dimension is split over data (or context)
        parallelism along an activation order that was inferred, not declared (by
        `ParallelInfo` or Megatron's sequence-first convention)."""
        info = self.info
        split = outer and ndim >= 2 and info.dp * info.cp > 1
        if split and not self.order_declared and source == "declared":
            return "inferred"
        return source

    def alias(self, alias: torch.Tensor, tensor: torch.Tensor) -> None:
        """`alias` (a view the hooks hand on instead of `tensor`) is laid out like it."""
        self.remember(alias, self.produced[tensor])
        if tensor in self.produced_source:
            self.produced_source[alias] = self.produced_source[tensor]

    def outer(self, mesh: object) -> Outer:
        """The job's dp / cp coordinates that a DTensor on `mesh` does not span."""
        key = id(mesh)
        if key not in self._outer:
            info = self.info
            covered = covered_roles(mesh, info.sizes(), info.world_size)
            dp = (info.dp, info.dp_rank) if "dp" not in covered else (1, 0)
            cp = (info.cp, info.cp_rank) if "cp" not in covered else (1, 0)
            self._outer[key] = Outer(dp[0], dp[1], cp[0], cp[1], info.cp_layout, info.dp_rows)
        return self._outer[key]

    def is_buffer(self, tensor: torch.Tensor) -> bool:
        """Is `tensor` one of the captured model's buffers (the object itself)?"""
        if self._buffers is None:
            self._buffers = WeakIdKeyDictionary()
            for module in self.names.names:
                for b in module.buffers(recurse=False):
                    self._buffers[b] = True
        return tensor in self._buffers

    def seq_or_replica(self, tensor: torch.Tensor, decided: Decision) -> bool:
        """Is this placed input, by declaration, replicated or split on its sequence
        dimension only over tensor parallelism?"""
        layout = decided.layout
        if is_dtensor(tensor) or layout is None or decided.note is not None:
            return False
        if layout.mode in ("replica", "seq"):
            return True
        d = layout.split_dim(tensor.dim())
        return d is not None and layout.roles(tensor.dim(), self.order)[d] == "s"

    def remember(self, tensor: torch.Tensor, layout: Layout | None) -> None:
        if layout is not None and not is_dtensor(tensor):
            self.produced[tensor] = layout

    def from_layout(
        self, shape: tuple[int, ...], layout: Layout, gradient: bool, direction: str = "out"
    ) -> Placement:
        return self.place(shape, layout, gradient, direction)[0]

    def place(
        self, shape: tuple[int, ...], layout: Layout, gradient: bool, direction: str = "out"
    ) -> tuple[Placement, str]:
        """The placement of a local tensor of `shape` laid out as `layout`, and a note when
        the batch dimension was judged not split by its size (memoized: the same tensors
        come back every step, and building a placement costs more than the copy)."""
        key = ("act", shape, layout, gradient, direction, self.facts.batch_local)
        hit = self.memo.get(self.info, key)
        if hit is None:
            hit = self.memo.put(key, self._place(shape, layout, gradient, direction))
        return hit

    def _place(
        self,
        shape: tuple[int, ...],
        layout: Layout,
        gradient: bool,
        direction: str,
        dp_replica: bool = False,
    ) -> tuple[Placement, str]:
        info = self.info
        if layout.mode == "whole":
            return Placement.full(shape), ""
        if len(shape) == 0:
            return self._scalar(gradient, direction), ""
        if len(shape) == 1 and info.dp * info.cp > 1:
            return self._vector(shape[0], layout, gradient), ""
        dims: list[DimMap] = []
        note = ""
        batch_whole = False  # the batch dimension held whole: a replica over dp
        split = layout.split_dim(len(shape))
        for d, (role, n) in enumerate(
            zip(layout.roles(len(shape), self.order), shape, strict=True)
        ):
            tp_here = split == d or (role == "h" and layout.mode == "last")
            if role == "s":
                dims.append(self._seq_map(n, layout.mode == "seq" or tp_here))
            elif role == "b" and info.dp > 1:
                if dp_replica or self.facts.broadcast_batch(n):
                    if not dp_replica:
                        note = f"batch dim {d} has size {n}, local batch "
                        note += (
                            f"{self.facts.batch_local}: taken as a broadcast, replicated over dp"
                        )
                    dims.append(DimMap.whole(n))
                    batch_whole = True
                    continue
                split_b = DimMap.dp_rows(n, info.dp_rank, info.dp, info.dp_rows)
                dims.append(split_b.then_split(info.tp_rank, info.tp) if tp_here else split_b)
            elif tp_here:
                dims.append(DimMap.split(n, info.tp_rank, info.tp))
            else:
                dims.append(DimMap.whole(n))
        replicas = 1
        if info.tp > 1 and layout.mode in ("replica", "gradsum"):
            replicas = info.tp
        if batch_whole and info.dp > 1:
            replicas *= info.dp
        if info.tp > 1 and layout.mode == "sum":
            return placement_from_dims(shape, dims, "sum", info.tp_rank), note
        return placement_from_dims(shape, dims, "replica" if replicas > 1 else "copy"), note

    def _scalar(self, gradient: bool, direction: str) -> Placement:
        """A 0-d output (a loss) is a partial sum over the ranks that saw different data;
        a 0-d input (a scale, a temperature, a step count) and gradients are replicas."""
        info = self.info
        parts = info.dp * info.cp
        if parts > 1 and not gradient and direction == "out":
            return Placement.full(()).with_partial(info.dp_rank * info.cp + info.cp_rank)
        return Placement.full((), "replica" if info.world_size > 1 else "copy")

    def _vector(self, n: int, layout: Layout, gradient: bool) -> Placement:
        """A 1-d activation (a bias handed out as an output) has no batch dimension: every
        data-parallel rank holds it whole, and its gradient sums that rank's tokens only (a
        partial sum over dp x cp, and over tp too for the gradient of a `gradsum`)."""
        info = self.info
        split = info.tp > 1 and (layout.mode == "last" or layout.split_dim(1) == 0)
        dims = [DimMap.split(n, info.tp_rank, info.tp) if split else DimMap.whole(n)]
        if not gradient:
            if layout.mode == "sum" and info.tp > 1:  # partial over tp, replicated over dp
                return placement_from_dims((n,), dims, "sum", info.tp_rank)
            return placement_from_dims((n,), dims, "replica")
        groups = [(info.dp, info.dp_rank), (info.cp, info.cp_rank)]
        if layout.mode == "sum":
            groups.append((info.tp, info.tp_rank))
        index = 0
        for size, rank in groups:
            index = index * size + rank
        return placement_from_dims((n,), dims, "sum", index)

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

    def expert_groups(self, module: nn.Module | None) -> ExpertGroups | None:
        """The expert tensor / data parallel groups of a module in an expert subtree, read
        from its experts container (None outside one)."""
        container = self.names.expert_container.get(module) if module is not None else None
        if container is None:
            return None
        if container not in self._expert_groups:
            self._expert_groups[container] = expert_groups(container)
        return self._expert_groups[container]

    def parameter(
        self, tensor: torch.Tensor, param: nn.Parameter, owner: nn.Module | None, kind: str
    ) -> tuple[torch.Tensor, Placement, float]:
        """(local tensor, placement, scale) of `tensor`, a parameter-shaped tensor of `param`
        (the parameter itself, its gradient, its main gradient, its optimizer state).

        `scale` multiplies captured per-rank gradients by the reduction's convention
        (`ParallelInfo.reduction_scale`), so that partial sums add up to the reference.
        """
        ann = annotation_of(param)
        if isinstance(ann, Placement):
            local = tensor.to_local() if is_dtensor(tensor) else tensor
            return local, ann.with_source("annotated"), 1.0
        if is_dtensor(tensor):
            local, placement = dtensor_placement(tensor)
            outer = self.outer(tensor.device_mesh)
            partial = kind == "param_grad"
            scale = self.info.reduction_scale(outer.parts) if partial else 1.0
            placement = compose_parameter(placement, outer, partial).with_source("declared")
            return local, placement, scale
        placement, scale = self.param_placement(param, tuple(tensor.shape), owner, kind)
        # Over data parallelism a parameter is a replica (its gradient a partial sum) by
        # what the job declares; over tensor parallelism only Megatron's attributes say it.
        declared = self.info.tp == 1 or hasattr(param, "tensor_model_parallel")
        declared = declared or self.is_expert_param(param, owner)
        if declared:
            return tensor, placement.with_source("declared"), scale
        placement = self.param_hypotheses(placement.with_source("inferred"), param, owner, kind)
        return tensor, placement, scale

    def param_hypotheses(
        self, placement: Placement, param: torch.Tensor, owner: nn.Module | None, kind: str
    ) -> Placement:
        """A parameter nothing declares over tensor parallelism (no `tensor_model_parallel`
        attribute, not a DTensor: one built by hand, or passed as a forward argument) is
        taken as a replica; a split of any one dimension over tp is as possible, and the
        reference's shape decides at compare time (the report then says it is undeclared)."""
        shape = tuple(param.shape)
        alternatives: list[tuple[str, Placement]] = []
        for dim in range(len(shape)):
            source = ParamSource(
                True,
                dim,
                self.is_expert_param(param, owner),
                self.tied_across_pp(param),
                bool(getattr(param, "sequence_parallel", False)),
            )
            key = ("param", shape, kind, source)
            hit = self.memo.get(self.info, key)
            if hit is None:
                hit = self.memo.put(key, self._param_placement(shape, kind, source))
            alternatives.append((f"split dim {dim} over tp (undeclared)", hit[0]))
        return placement.with_alternatives("replica over tp (undeclared)", alternatives)

    def param_note(self, param: torch.Tensor, hint_path: str) -> LayoutNote | None:
        """A note for a plain parameter taken as replicated over tensor parallelism."""
        if self.info.tp == 1 or getattr(param, "tensor_model_parallel", False):
            return None
        if is_dtensor(param) or isinstance(annotation_of(param), Placement):
            return None
        shape = list(param.shape)
        note = (
            "inferred replica over tp: no tensor_model_parallel attribute, not a DTensor; "
            f"local {shape}"
        )
        dim = 0 if shape else None
        hint = (
            f'ttc.annotate(model.get_parameter("{hint_path}"), Placement.split('
            f"{[n * self.info.tp if i == dim else n for i, n in enumerate(shape)]}, {dim}, "
            f"{self.info.tp_rank}, {self.info.tp}))"
            if dim is not None
            else ""
        )
        return LayoutNote(note, hint)

    def tied_across_pp(self, param: torch.Tensor) -> bool:
        return self.info.pp > 1 and tied_across_pp(param)

    def param_placement(
        self, param: torch.Tensor, shape: Sequence[int], owner: nn.Module | None, kind: str
    ) -> tuple[Placement, float]:
        """(placement, gradient scale) from the parameter's attributes, read on every call
        (they may change) and memoized by their values."""
        shape = tuple(shape)
        groups = self.expert_groups(owner)
        tp = groups.etp if groups is not None else self.info.tp
        tp_split = bool(getattr(param, "tensor_model_parallel", False)) and tp > 1
        source = ParamSource(
            tp_split,
            int(getattr(param, "partition_dim", 0)) if tp_split else 0,
            self.is_expert_param(param, owner),
            self.tied_across_pp(param),
            bool(getattr(param, "sequence_parallel", False)),
            groups,
        )
        key = ("param", shape, kind, source)
        hit = self.memo.get(self.info, key)
        if hit is None:
            hit = self.memo.put(key, self._param_placement(shape, kind, source))
        return hit

    def _param_placement(
        self, shape: tuple[int, ...], kind: str, source: ParamSource
    ) -> tuple[Placement, float]:
        info = self.info
        tp_split, expert, groups = source.tp_split, source.expert, source.groups
        # An expert's tensor and data parallel groups are its own (Megatron's
        # expert_tensor_parallel_size and expert data parallelism), not the attention's.
        tp, tp_rank = (groups.etp, groups.etp_rank) if groups else (info.tp, info.tp_rank)
        dims = [DimMap.whole(n) for n in shape]
        if tp_split:
            pd = source.partition_dim
            dims[pd] = DimMap.split(shape[pd], tp_rank, tp)
        if groups is not None:
            data_groups = [(groups.edp, groups.edp_rank)]
        elif expert:
            data_groups = [(info.edp, info.edp_rank)]
        else:
            data_groups = [(info.dp, info.dp_rank), (info.cp, info.cp_rank)]
        tp_replicas = 1 if tp_split else tp
        # A copy tied across the first and last pipeline stage (tied embeddings): the two
        # stages hold partial sums of its gradient and replicas of everything else.
        pp_groups = [(2, 0 if info.pp_rank == 0 else 1)] if source.tied_across_pp else []
        replicas = math.prod(n for n, _ in data_groups + pp_groups) * tp_replicas
        if kind == "param_grad":
            partials = list(data_groups) + pp_groups
            if source.sequence_parallel and not tp_split:
                partials.append((tp, tp_rank))
            parts = math.prod(n for n, _ in partials)
            if parts > 1:
                index = 0
                for n, r in partials:
                    index = index * n + r
                # Averaging divides by the data-parallel count only; sequence-parallel partial
                # sums over tp are plain sums either way. An expert's tokens come from every
                # rank of its expert-parallel group: its gradient already sums their losses,
                # so the divisor is the number of losses (Megatron scales expert gradients
                # by expert-dp / dp before averaging over expert-dp).
                data = math.prod(n for n, _ in data_groups)
                scale = info.reduction_scale(info.dp * info.cp if groups else data)
                return placement_from_dims(shape, dims, "sum", index), scale
        combine = "replica" if replicas > 1 else "copy"
        scale = 1.0
        if kind == "param_grad" and groups is not None:
            scale = info.reduction_scale(info.dp * info.cp)  # one copy of the expert: all losses
        return placement_from_dims(shape, dims, combine), scale
