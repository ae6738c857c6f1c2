"""Rotary position embedding (rotate-half form) at explicit positions."""

from __future__ import annotations

import torch


def rope_tables(
    positions: torch.Tensor, dim: int, base: float
) -> tuple[torch.Tensor, torch.Tensor]:
    inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    ang = positions.float()[:, None] * inv[None, :]
    ang = torch.cat([ang, ang], dim=-1)  # [s, dim]
    return ang.cos(), ang.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    # x [s, b, heads, dim]; tables [s, dim]
    half = x.shape[-1] // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    c, s = cos[:, None, None, :], sin[:, None, None, :]
    return (x.float() * c + rot.float() * s).to(x.dtype)
