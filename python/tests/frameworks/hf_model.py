"""The tiny Hugging Face Llama the framework tests train, and the bug injections."""

from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM

from .common import BUG_SCALE, FFN, HEADS, HIDDEN, KV_HEADS, LAYERS, SEQ, VOCAB


def tiny_llama() -> LlamaForCausalLM:
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=HIDDEN,
        intermediate_size=FFN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        max_position_embeddings=2 * SEQ,
        use_cache=False,
    )
    return LlamaForCausalLM(config)


def break_row_parallel(linear: nn.Module, bug: str) -> None:
    """Before tensor parallelism is applied: the row-parallel `linear` yields a Partial
    DTensor that the style then all-reduces. `scale`: rank 1's partial is scaled by
    1 + 1e-3 first; `drop`: the partial is declared replicated, so no all-reduce runs."""
    from torch.distributed.tensor import DTensor, Replicate

    forward = linear.forward

    def buggy(x: torch.Tensor) -> torch.Tensor:
        y = forward(x)
        local = y.to_local()
        if bug == "scale":
            factor = BUG_SCALE if dist.get_rank() == 1 else 1.0
            return DTensor.from_local(local * factor, y.device_mesh, y.placements, run_check=False)
        return DTensor.from_local(local, y.device_mesh, [Replicate()], run_check=False)

    linear.forward = buggy
