"""Context parallelism's load-balanced sequence layout: the sequence is cut into 2*cp chunks
and rank r holds chunks r and 2*cp-1-r, so causal attention work is even across ranks."""

from __future__ import annotations

import torch


def two_chunk_indices(seq_len: int, cp_rank: int, cp_size: int) -> torch.Tensor:
    if cp_size == 1:
        return torch.arange(seq_len)
    if seq_len % (2 * cp_size):
        raise ValueError(f"seq {seq_len} not divisible by 2*cp = {2 * cp_size}")
    c = seq_len // (2 * cp_size)
    first = torch.arange(cp_rank * c, (cp_rank + 1) * c)
    second_chunk = 2 * cp_size - 1 - cp_rank
    second = torch.arange(second_chunk * c, (second_chunk + 1) * c)
    return torch.cat([first, second])
