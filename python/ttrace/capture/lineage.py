"""A tensor's tensor-parallel layout carried from the tensors it was computed from.

A layout the job declares (a parallel style's output, a DTensor's local shard, a Megatron
layer's) holds for the tensor the module hands out; the code between two modules then
reshapes it (`view(b, s, -1, head_dim)`, `transpose(1, 2)`, `repeat_kv`, a complex rotary
product, a dtype cast) before the next module receives it. Guessing that tensor's layout
from its shape alone picks a dimension by coincidence (a head_dim equal to a weight width
divided by tp). Instead, its autograd graph is walked back to the tensors whose layout is
known (tagged on their `grad_fn.metadata` when they were placed), and the split dimension is
mapped forward through each view, permutation and elementwise op on the way. Any op whose
effect on the split dimension is not known (a matmul, a slice or concatenation along the
split dimension, a reduction) stops the walk: then there is no answer, never a guess.
Only layouts placed without a fallback note are carried.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from .layout import Layout

TAG = "ttrace_layout"
MAX_NODES = 256  # the walk stops at tagged tensors; this bounds it when none is near

# Ops whose output dimension i is input dimension i (after right-aligned broadcasting).
_ELEMENTWISE = {
    "Add", "Sub", "Mul", "Div", "Neg", "Pow", "Exp", "Log", "Sqrt", "Rsqrt", "Tanh",
    "Sigmoid", "Silu", "Gelu", "Relu", "Abs", "Clamp", "ToCopy", "Clone", "Alias",
    "Expand", "Where", "MaskedFill", "Dropout", "NativeDropout", "Lerp", "Maximum", "Minimum",
}  # fmt: skip
# Ops that only regroup dimensions (same elements, row-major order kept).
_RESHAPES = {"View", "UnsafeView", "ReshapeAlias", "Unsqueeze", "Squeeze"}
_KNOWN = _ELEMENTWISE | _RESHAPES | {
    "Transpose", "T", "Permute", "ViewAsComplex", "ViewAsReal", "Slice", "Cat", "Split",
    "SplitWithSizes", "Select", "Unbind",
}  # fmt: skip


@dataclass(frozen=True)
class Split:
    """State of a tensor on the walk: replicated (`dim` None) or split on `dim`."""

    dim: int | None


Unknown = None  # the walk cannot tell
Neutral = "neutral"  # a constant or a parameter: says nothing about the split


def tag(tensor: torch.Tensor, layout: Layout, order: str, source: str) -> None:
    """Record `tensor`'s layout (placed without a fallback) on its autograd node, for the
    tensors computed from it, with its placement source."""
    fn = tensor.grad_fn
    if fn is None:
        return
    state = _state_of(layout, tensor.dim(), order)
    fn.metadata.setdefault(TAG, {})[tensor.output_nr] = (state, source)


def lineage_layout(tensor: torch.Tensor) -> Layout | None:
    """The layout `tensor` inherits through views and elementwise ops, or None."""
    fn = tensor.grad_fn
    if fn is None:
        return None
    state = _Walk().state(fn, tensor.output_nr)
    if not isinstance(state, Split):
        return None
    return Layout("replica") if state.dim is None else Layout("split", dim=state.dim)


def lineage_source(tensor: torch.Tensor) -> str:
    """`declared` when every layout `lineage_layout` carried was declared; else the
    weakest of their sources (`inferred` before `annotated`)."""
    walk = _Walk()
    if tensor.grad_fn is not None:
        walk.state(tensor.grad_fn, tensor.output_nr)
    for weakest in ("inferred", "annotated"):
        if weakest in walk.sources:
            return weakest
    return "declared"


def _state_of(layout: Layout, ndim: int, order: str) -> Split | None:
    if layout.mode == "replica":
        return Split(None)
    if layout.mode == "split":
        d = layout.split_dim(ndim)
        return Split(d) if d is not None else Unknown
    roles = layout.roles(ndim, order)
    role = {"last": "h", "seq": "s"}.get(layout.mode)
    if role is not None and role in roles:
        return Split(roles.index(role))
    return Unknown  # partial sums and whole tensors do not pass through other ops


def _dim(value: int, ndim: int) -> int:
    value = value - (1 << 64) if value >= 1 << 63 else value  # saved as unsigned
    return value + ndim if value < 0 else value


def _out_shape(fn: Any, nr: int) -> tuple[int, ...]:
    return tuple(fn._input_metadata[nr].shape)


class _Walk:
    def __init__(self) -> None:
        self.seen: dict[tuple[int, int], Any] = {}
        self.budget = MAX_NODES
        self.sources: set[str] = set()  # of the tagged layouts reached

    def state(self, fn: Any, nr: int) -> Any:
        key = (id(fn), nr)
        if key not in self.seen:
            self.budget -= 1
            self.seen[key] = Unknown if self.budget < 0 else self._state(fn, nr)
        return self.seen[key]

    def _state(self, fn: Any, nr: int) -> Any:
        tagged = fn.metadata.get(TAG, {}).get(nr) if fn.metadata else None
        if tagged is not None:
            self.sources.add(tagged[1])
            return tagged[0]
        name = fn.name()
        if name == "torch::autograd::AccumulateGrad":
            return Neutral
        op = name.rstrip("0123456789").removesuffix("Backward")
        out = _out_shape(fn, nr)
        result: Any = Neutral
        for k, (nxt, nxt_nr) in enumerate(fn.next_functions):
            if nxt is None:
                continue
            state = self.state(nxt, nxt_nr)
            if state is Unknown:
                return Unknown
            if state is Neutral:
                continue
            mapped = _map(op, fn, state, _out_shape(nxt, nxt_nr), out, k, nr)
            if mapped is Unknown:
                return Unknown
            result = _combine(result, mapped)
            if result is Unknown:
                return Unknown
        return result


def _combine(a: Any, b: Split) -> Any:
    """Two inputs of one op: a replicated operand (a rotary table, a scale) leaves the other
    one's split as it is; two splits must be on the same dimension."""
    if a is Neutral or a.dim is None:
        return b
    if b.dim is None or b.dim == a.dim:
        return a
    return Unknown


def _map(
    op: str, fn: Any, s: Split, shape_in: tuple, shape_out: tuple, k: int, nr: int
) -> Split | None:
    """`s` (the state of input `k`, of `shape_in`) after op `op` (output `nr`). Even a
    replica passes only ops known here: a collective or any custom autograd function (a
    scatter to sequence-parallel regions) may split it."""
    if op not in _KNOWN:
        return Unknown
    if s.dim is None:
        return s
    d = s.dim
    if op in _ELEMENTWISE:
        out = d + len(shape_out) - len(shape_in)
        return Split(out) if out >= 0 and shape_out[out] == shape_in[d] else Unknown
    if op in _RESHAPES:
        return _map_reshape(d, shape_in, shape_out)
    if op == "Transpose":
        a, b = _dim(fn._saved_dim0, len(shape_in)), _dim(fn._saved_dim1, len(shape_in))
        return Split(b if d == a else a if d == b else d)
    if op == "T":
        return Split(1 - d) if len(shape_in) == 2 else Split(d)
    if op == "Permute":
        dims = [_dim(x, len(shape_in)) for x in fn._saved_dims]
        return Split(dims.index(d))
    if op == "ViewAsComplex":
        return Split(d) if d < len(shape_in) - 1 else Unknown
    if op == "ViewAsReal":
        return Split(d)
    if op in ("Slice", "Cat", "Split", "SplitWithSizes"):
        # Along another dimension only: the split dimension keeps its shards whole.
        return Split(d) if _dim(fn._saved_dim, len(shape_in)) != d else Unknown
    if op in ("Select", "Unbind"):
        gone = _dim(fn._saved_dim, len(shape_in))
        return Unknown if gone == d else Split(d - (d > gone))
    return Unknown


def _map_reshape(d: int, shape_in: tuple, shape_out: tuple) -> Split | None:
    """Where split dimension `d` lands when `shape_in` is viewed as `shape_out`: dimensions
    regroup into runs of equal element count; a shard of contiguous rows of the run's
    leading dimension stays contiguous rows of the new run's leading dimension (heads of
    `[b, s, heads * head_dim]` viewed as `[b, s, heads, head_dim]`). A split dimension that
    is not the leading one of its run would become strided: no answer."""
    i = j = 0
    while i < len(shape_in) and j < len(shape_out):
        group_in, group_out = [i], [j]
        p_in, p_out = shape_in[i], shape_out[j]
        i, j = i + 1, j + 1
        while p_in != p_out:
            if p_in < p_out and i < len(shape_in):
                group_in.append(i)
                p_in, i = p_in * shape_in[i], i + 1
            elif p_out < p_in and j < len(shape_out):
                group_out.append(j)
                p_out, j = p_out * shape_out[j], j + 1
            else:
                return Unknown
        if d in group_in:
            return Split(group_out[0]) if d == group_in[0] else Unknown
    return Unknown
