"""Perturbed reference variants: the empirical round-off floor of every tensor.

Variant ``perturbed-k`` re-runs the reference's training step from the same state with the
output of one module (by default the first captured module with a floating-point output, the
embedding in a GPT) multiplied elementwise by ``1 + eps * u``: ``eps`` is the machine epsilon
of that tensor's dtype (or ``relative_scale``), ``u`` is uniform in ``[-1, 1]``, drawn in
float64 for the whole tensor in row-major order from a generator seeded with
``seed_for(seeds[k-1], iteration, micro_batch)``. The product is computed in float64 and
rounded to the tensor's dtype. See docs/capture.md.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import torch

from .precision import machine_eps

SCHEME = "relative-uniform"


def seed_for(seed: int, iteration: int, micro_batch: int) -> int:
    digest = hashlib.sha256(f"{seed}:{iteration}:{micro_batch}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


@dataclass
class Perturbation:
    count: int = 0
    seeds: list[int] = field(default_factory=list)
    relative_scale: float | None = None
    module: str | None = None  # canonical name of the perturbed module's output
    # filled in when the first perturbation is applied
    applied_scale: float | None = None

    def __post_init__(self) -> None:
        if self.count < 0:
            raise ValueError(f"perturbation count must be >= 0, got {self.count}")
        if not self.seeds:
            self.seeds = list(range(1, self.count + 1))
        if len(self.seeds) != self.count:
            raise ValueError(
                f"{self.count} perturbations need {self.count} seeds, got {self.seeds}"
            )

    @property
    def variants(self) -> list[str]:
        return [f"perturbed-{k}" for k in range(1, self.count + 1)]

    def apply(self, x: torch.Tensor, k: int, iteration: int, micro_batch: int) -> torch.Tensor:
        """x * (1 + eps * u) for variant perturbed-k (1-based)."""
        eps = self.relative_scale if self.relative_scale is not None else machine_eps(x.dtype)
        self.applied_scale = eps
        g = torch.Generator().manual_seed(seed_for(self.seeds[k - 1], iteration, micro_batch))
        u = torch.rand(tuple(x.shape), generator=g, dtype=torch.float64) * 2 - 1
        y = x.detach().to("cpu", torch.float64) * (1 + eps * u)
        # Differentiable w.r.t. x: the perturbation is a constant offset added to x.
        return x + (y.to(x.dtype).to(x.device) - x.detach())

    def manifest_entry(self) -> dict | None:
        if self.count == 0:
            return None
        entry: dict = {
            "scheme": SCHEME,
            "relative_scale": self.applied_scale
            if self.applied_scale is not None
            else self.relative_scale,
            "seeds": list(self.seeds),
        }
        if self.module is not None:
            entry["module"] = self.module
        return entry
