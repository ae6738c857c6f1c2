"""Gradient finalization after all micro-batches (Megatron's finalize_model_grads):
fp32 main grads, the tensor-parallel all-reduce of sequence-parallel weights, the
pipeline embedding-group all-reduce of tied embedding / output weights, and the
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
    bugs = ps.cfg.bugs
    for p in params:
        p.main_grad = (
            p.grad.detach().float().clone() if p.grad is not None else torch.zeros(p.shape)
        )
        # Bug zoo: a finalize step that forgets Megatron's _allreduce_layernorm_grads leaves
        # every rank with its own sequence slice's partial sum of the norm weight grads.
        skip_norm = "sp-norm-grad-not-reduced" in bugs and p.dim() == 1
        if getattr(p, "sequence_parallel", False) and not skip_norm:
            comm.all_reduce(p.main_grad, ps.group("tp"))
    # Tied embedding / output weight (Megatron's _allreduce_embedding_grads): the first and
    # last stage each hold a copy whose grad is a partial sum (lookup, head); summed over
    # the embedding group, both copies take the same step.
    if ps.cfg.pp > 1 and "tied-embedding-not-synced" not in bugs:
        for p in params:
            if getattr(p, "shared_embedding", False):
                comm.all_reduce(p.main_grad, ps.group("embd"))
    for p in params:
        if is_expert(p):
            comm.all_reduce(p.main_grad, ps.group("edp"))
    if dist_optimizer is not None:
        dist_optimizer.reduce_grads()
        return
    dp_cp = ps.group("dp_cp")
    for p in params:
        if not is_expert(p):
            comm.all_reduce(p.main_grad, dp_cp)
            if "dp-grad-sum-not-mean" in bugs:
                # Bug zoo: averaging in the collective (Megatron's average_in_collective)
                # although the loss is already normalized by the global token count.
                p.main_grad /= comm.group_size(dp_cp)
