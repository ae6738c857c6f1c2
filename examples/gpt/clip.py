"""Global-norm gradient clipping (Megatron's clip_grad_norm_fp32) over main grads.

The global norm is over the *logical* model: every rank sums the squares of the gradient
elements it owns (tensor-parallel shards everywhere, replicated weights on tp rank 0 only, so
that no element is counted twice), then the sum is all-reduced over the model-parallel group
(tp x pp). Main grads are already reduced over data parallelism and identical across it.
Expert weights differ across expert-parallel ranks, so their squares are also summed over ep.
"""

from __future__ import annotations

import torch
from torch import nn

from . import comm
from .grads import is_expert
from .parallel_state import ParallelState


def clip_grad_norm(params: list[nn.Parameter], max_norm: float, ps: ParallelState) -> float:
    dense = torch.zeros((), dtype=torch.float64)
    expert = torch.zeros((), dtype=torch.float64)
    for p in params:
        duplicate = not getattr(p, "tensor_model_parallel", False) and ps.tp_rank > 0
        # The last stage's copy of a tied embedding is counted on the first stage only
        # (Megatron's param_is_not_shared).
        duplicate = duplicate or getattr(p, "shared", False)
        if duplicate:
            continue
        sq = p.main_grad.double().pow(2).sum()
        if is_expert(p):
            expert += sq
        else:
            dense += sq
    if "grad-clip-no-mp-reduce" not in ps.cfg.bugs:
        # Bug zoo: without this all-reduce each rank clips by the norm of its own shard.
        comm.all_reduce(dense, ps.group("mp"))
        comm.all_reduce(expert, ps.group("mp"))
        comm.all_reduce(expert, ps.group("ep"))
    norm = float((dense + expert).sqrt())
    coeff = max_norm / (norm + 1e-6)
    if coeff < 1.0:
        for p in params:
            p.main_grad.mul_(coeff)
    return norm
