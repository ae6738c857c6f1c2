"""Synthetic data: the global batch of each iteration is generated from a seed, then every
rank slices its part (batch over dp, sequence over cp), so the reference and every candidate
layout see exactly the same tokens."""

from __future__ import annotations

import torch

from .cp_layout import two_chunk_indices


def global_batch(
    seed: int, iteration: int, micro_batches: int, batch: int, seq_len: int, vocab: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """ids and labels [micro_batches, batch, seq_len] of one iteration."""
    g = torch.Generator().manual_seed(seed * 1_000_003 + iteration)
    tokens = torch.randint(0, vocab, (micro_batches, batch, seq_len + 1), generator=g)
    return tokens[..., :-1].contiguous(), tokens[..., 1:].contiguous()


def local_slice(
    x: torch.Tensor, dp_rank: int, dp_size: int, cp_rank: int, cp_size: int
) -> torch.Tensor:
    """This rank's part of [M, B, S] ids or labels: batch rows over dp, two-chunk over cp."""
    if x.shape[1] % dp_size:
        raise ValueError(f"global micro-batch {x.shape[1]} not divisible by dp {dp_size}")
    b = x.shape[1] // dp_size
    x = x[:, dp_rank * b : (dp_rank + 1) * b]
    return x.index_select(2, two_chunk_indices(x.shape[2], cp_rank, cp_size)).contiguous()
