"""Differentiable all-reduce used by expert dispatch: every rank sums contributions to a
shared buffer, and every rank's gradient flows back to every contributor."""

from __future__ import annotations

import torch

from .. import comm


class _AllReduceBoth(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return comm.all_reduce(x.contiguous().clone(), group)

    @staticmethod
    def backward(ctx, g):
        return comm.all_reduce(g.contiguous().clone(), ctx.group), None


def all_reduce_both(x: torch.Tensor, group) -> torch.Tensor:
    return x if comm.group_size(group) == 1 else _AllReduceBoth.apply(x, group)
