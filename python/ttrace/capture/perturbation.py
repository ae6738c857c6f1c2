"""Perturbed reference variants: the empirical round-off floor of every tensor.

Variant ``perturbed-k`` re-runs the reference's training step from the same state with the
output of one module (by default the first captured module with a floating-point output, the
embedding in a GPT) multiplied elementwise by ``1 + eps * u``: ``eps`` is the machine epsilon
of that tensor's dtype (or ``relative_scale``), ``u`` is uniform in ``[-1, 1)``, drawn in
float64 for the whole (global) tensor in row-major order from a generator seeded with
``seed_for(seeds[k-1], iteration, micro_batch)`` (`perturbation_field`): a distributed
reference keeps each shard's part of the very field a single device draws. The product is
computed in float64 and rounded to the tensor's dtype. See docs/capture.md.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import torch

from ttrace.bundle import Placement

from .errors import TracerError
from .perturbation_field import uniform_field
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

    def targets(self, module_name: str, first_stage: bool) -> bool:
        """Whether `module_name`'s output is the one perturbed. Unnamed, the first module with
        a floating-point output is taken, on the first pipeline stage only: a later stage's
        first module is not the model's, and the first stage's choice is the run's."""
        if self.module is None:
            if not first_stage:
                return False
            self.module = module_name
        return self.module == module_name

    def apply(
        self,
        x: torch.Tensor,
        k: int,
        iteration: int,
        micro_batch: int,
        placement: Placement | None = None,
    ) -> torch.Tensor:
        """x * (1 + eps * u) for variant perturbed-k (1-based). `placement`: where `x` lies in
        the logical tensor (None: `x` is the whole tensor); each element takes the field's
        value at its global index."""
        eps = self.relative_scale if self.relative_scale is not None else machine_eps(x.dtype)
        self.applied_scale = eps
        where = placement if placement is not None else Placement.full(tuple(x.shape))
        key = seed_for(self.seeds[k - 1], iteration, micro_batch)
        try:
            u = torch.from_numpy(uniform_field(key, where, tuple(x.shape)))
        except ValueError as exc:
            raise TracerError(f"ttrace: perturbing the output of {self.module}: {exc}") from exc
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


def merged_entry(entries: list[dict | None]) -> dict | None:
    """The run's perturbation entry from every rank's (None, or no module: a rank that
    perturbed nothing, e.g. a later pipeline stage). Ranks that perturbed must have perturbed
    the same module by the same scale: otherwise the variants are not the ones a single device
    would see."""
    given = [(rank, e) for rank, e in enumerate(entries) if e and e.get("module") is not None]
    if not given:  # no rank applied it (no captured step): the count and seeds still say it
        return next((e for e in entries if e), None)
    first_rank, first = given[0]
    for rank, entry in given[1:]:
        for field_name in ("module", "relative_scale", "seeds"):
            if entry.get(field_name) != first.get(field_name):
                raise TracerError(
                    f"ttrace: the ranks perturbed different things: rank {first_rank} "
                    f"{field_name}={first.get(field_name)!r}, rank {rank} "
                    f"{field_name}={entry.get(field_name)!r}; name the perturbed module with "
                    "Perturbation(module=...) so that every rank perturbs the same tensor"
                )
    return first
