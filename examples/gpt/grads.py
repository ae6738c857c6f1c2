"""Gradient finalization after all micro-batches (Megatron's finalize_model_grads):
fp32 main grads, the tensor-parallel all-reduce of sequence-parallel weights, and the
data-parallel reduction (a sum: the loss is already normalized by the global token count, so
each rank's gradient is a true partial sum of the reference gradient)."""

from __future__ import annotations

import torch
from torch import nn

from . import comm
from .parallel_state import ParallelState


def is_expert(p: nn.Parameter) -> bool:
    return not getattr(p, "allreduce", True)


def finalize_grads(params: list[nn.Parameter], ps: ParallelState, dist_optimizer) -> None:
    for p in params:
        p.main_grad = (
            p.grad.detach().float().clone() if p.grad is not None else torch.zeros(p.shape)
        )
        if getattr(p, "sequence_parallel", False):
            comm.all_reduce(p.main_grad, ps.group("tp"))
    for p in params:
        if is_expert(p):
            comm.all_reduce(p.main_grad, ps.group("edp"))
    if dist_optimizer is not None:
        dist_optimizer.reduce_grads()
        return
    for p in params:
        if not is_expert(p):
            comm.all_reduce(p.main_grad, ps.group("dp_cp"))
