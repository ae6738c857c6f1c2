"""Differentiable collectives in the style of Megatron-LM's mappings.py.

gloo has no reduce-scatter, so reduce-scatter is an all-reduce followed by taking this rank's
slice; the values are the same, only the traffic is larger. A `None` group means a
single-process run and every function is the identity.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


def _size(group) -> int:
    return 1 if group is None else dist.get_world_size(group)


def _rank(group) -> int:
    return 0 if group is None else dist.get_rank(group)


def all_reduce(x: torch.Tensor, group, op=dist.ReduceOp.SUM) -> torch.Tensor:
    if _size(group) > 1:
        dist.all_reduce(x, op=op, group=group)
    return x


def _gather(x: torch.Tensor, dim: int, group) -> torch.Tensor:
    if _size(group) == 1:
        return x
    parts = [torch.empty_like(x) for _ in range(_size(group))]
    dist.all_gather(parts, x.contiguous(), group=group)
    return torch.cat(parts, dim=dim)


def _split(x: torch.Tensor, dim: int, group) -> torch.Tensor:
    n = _size(group)
    if n == 1:
        return x
    return x.chunk(n, dim=dim)[_rank(group)].contiguous()


def _reduce_scatter(x: torch.Tensor, dim: int, group) -> torch.Tensor:
    if _size(group) == 1:
        return x
    x = x.contiguous()
    dist.all_reduce(x, group=group)
    return _split(x, dim, group)


class _CopyToRegion(torch.autograd.Function):
    """Identity forward, all-reduce backward (Megatron's f)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, g):
        return all_reduce(g.contiguous().clone(), ctx.group), None


class _ReduceFromRegion(torch.autograd.Function):
    """All-reduce forward, identity backward (Megatron's g)."""

    @staticmethod
    def forward(ctx, x, group):
        return all_reduce(x.contiguous().clone(), group)

    @staticmethod
    def backward(ctx, g):
        return g, None


class _GatherAlong(torch.autograd.Function):
    """All-gather forward along `dim`, reduce-scatter backward."""

    @staticmethod
    def forward(ctx, x, dim, group):
        ctx.dim, ctx.group = dim, group
        return _gather(x, dim, group)

    @staticmethod
    def backward(ctx, g):
        return _reduce_scatter(g, ctx.dim, ctx.group), None, None


class _GatherAlongSplitGrad(_GatherAlong):
    """All-gather forward along `dim`, backward takes only this rank's slice of the gradient
    without summing the other ranks' contributions. Correct only where every rank computes
    the same full gradient; used by the bug zoo where it is not (cp-attn-backward)."""

    @staticmethod
    def backward(ctx, g):
        return _split(g, ctx.dim, ctx.group), None, None


class _ReduceScatterAlong(torch.autograd.Function):
    """Reduce-scatter forward along `dim`, all-gather backward."""

    @staticmethod
    def forward(ctx, x, dim, group):
        ctx.dim, ctx.group = dim, group
        return _reduce_scatter(x, dim, group)

    @staticmethod
    def backward(ctx, g):
        return _gather(g, ctx.dim, ctx.group), None, None


class _ScatterAlong(torch.autograd.Function):
    """Take this rank's slice forward, all-gather backward."""

    @staticmethod
    def forward(ctx, x, dim, group):
        ctx.dim, ctx.group = dim, group
        return _split(x, dim, group)

    @staticmethod
    def backward(ctx, g):
        return _gather(g, ctx.dim, ctx.group), None, None


class _GatherLastDim(torch.autograd.Function):
    """All-gather along the last dim forward, take own slice backward (gather_output)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _gather(x, x.dim() - 1, group)

    @staticmethod
    def backward(ctx, g):
        return _split(g, g.dim() - 1, ctx.group), None


def copy_to_region(x, group):
    return x if _size(group) == 1 else _CopyToRegion.apply(x, group)


def reduce_from_region(x, group):
    return x if _size(group) == 1 else _ReduceFromRegion.apply(x, group)


def gather_along(x, dim, group):
    return x if _size(group) == 1 else _GatherAlong.apply(x, dim, group)


def gather_along_split_grad(x, dim, group):
    return x if _size(group) == 1 else _GatherAlongSplitGrad.apply(x, dim, group)


def reduce_scatter_along(x, dim, group):
    return x if _size(group) == 1 else _ReduceScatterAlong.apply(x, dim, group)


def scatter_along(x, dim, group):
    return x if _size(group) == 1 else _ScatterAlong.apply(x, dim, group)


def gather_last_dim(x, group):
    return x if _size(group) == 1 else _GatherLastDim.apply(x, group)


def group_size(group) -> int:
    return _size(group)


def group_rank(group) -> int:
    return _rank(group)
