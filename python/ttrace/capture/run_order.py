"""Activation order of a run: sequence-first `[s, b, h]` (Megatron-LM) or batch-first
`[b, s, h]` (Hugging Face, most PyTorch models), and the gradient reduction convention.

Explicit `ParallelInfo(seq_dim=, batch_dim=)` wins, then a wrapper's hint (DDP's `dim`,
`ParallelInfo.order_hint`). Otherwise a model with Megatron-style
attributes (`tensor_model_parallel`, `sequence_parallel`, `vocab_start_index`) is
sequence-first, and a model whose token ids enter a plain `nn.Embedding` (ids `[b, s]` in,
`[b, s, h]` out) is batch-first.
"""

from __future__ import annotations

from collections.abc import Iterable

from torch import nn

from .parallel_info import ParallelInfo

_MEGATRON_MODULE = ("vocab_start_index", "sequence_parallel")
_MEGATRON_PARAM = ("tensor_model_parallel", "sequence_parallel", "partition_dim")


def _megatron_style(modules: Iterable[nn.Module]) -> bool:
    for m in modules:
        if any(hasattr(m, a) for a in _MEGATRON_MODULE):
            return True
        for p in m.parameters(recurse=False):
            if any(hasattr(p, a) for a in _MEGATRON_PARAM):
                return True
    return False


def activation_order(info: ParallelInfo, modules: Iterable[nn.Module]) -> str:
    """ "sb" or "bs"."""
    if info.batch_dim is not None:
        return "bs" if info.batch_dim == 0 else "sb"
    if info.seq_dim is not None:
        return "bs" if info.seq_dim == 1 else "sb"
    if info.order_hint is not None:
        return info.order_hint
    modules = list(modules)
    if _megatron_style(modules):
        return "sb"
    if any(isinstance(m, nn.Embedding) for m in modules):
        return "bs"
    return "sb"


def order_declared(info: ParallelInfo, modules: Iterable[nn.Module]) -> bool:
    """Whether the order is stated rather than guessed: by `ParallelInfo(seq_dim=,
    batch_dim=)`, or by Megatron-style attributes (Megatron-LM's activations are
    sequence-first by its own convention). DDP's `dim` and an `nn.Embedding` are hints."""
    if info.batch_dim is not None or info.seq_dim is not None:
        return True
    return info.order_hint is None and _megatron_style(list(modules))
