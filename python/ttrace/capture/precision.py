"""Precision helpers: emulated FP8 GEMM inputs on any device, and dtype epsilons.

FP8 is emulated by rounding a tensor through ``torch.float8_e4m3fn`` with a per-tensor scale
(``448 / amax``) and converting back; the GEMM itself then runs in the input's dtype. This
reproduces FP8's quantization error (and the classic bug of an amax that is not reduced over
the ranks sharing a tensor) on CPUs without FP8 matmul support.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

E4M3_MAX = 448.0

AmaxReduce = Callable[[torch.Tensor], torch.Tensor]


def fp8_scale(amax: torch.Tensor) -> torch.Tensor:
    """Scale that maps amax onto the largest finite e4m3 value; 1 for an all-zero tensor."""
    return torch.where(amax > 0, E4M3_MAX / amax, torch.ones_like(amax))


def fp8_round(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    q = (x.float() * scale).to(torch.float8_e4m3fn)
    return (q.float() / scale).to(x.dtype)


class _Fp8Cast(torch.autograd.Function):
    """Quantize-dequantize forward, straight-through backward (gradients stay in high
    precision, as in FP8 training recipes that keep wgrad/dgrad accumulation in BF16/FP32)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, reduce: AmaxReduce | None) -> torch.Tensor:
        # An empty tensor (an expert that received no tokens) has amax 0; it must still join
        # the amax reduction, which is a collective.
        amax = x.detach().abs().max().float().reshape(1) if x.numel() else torch.zeros(1)
        if reduce is not None:
            # The caller reduces amax over the ranks that share this tensor (a MAX all-reduce).
            amax = reduce(amax)
        return fp8_round(x, fp8_scale(amax))

    @staticmethod
    def backward(ctx, g: torch.Tensor):
        return g, None


def fp8_cast(x: torch.Tensor, reduce_amax: AmaxReduce | None = None) -> torch.Tensor:
    """Round `x` through float8_e4m3fn with a per-tensor scale; differentiable (identity
    gradient). `reduce_amax` lets a parallel program make the scale global."""
    return _Fp8Cast.apply(x, reduce_amax)


def machine_eps(dtype: torch.dtype) -> float:
    """Machine epsilon of the dtype that accumulates. FP8 recipes accumulate in BF16 or
    wider, so FP8 dtypes report BF16's epsilon (as the TTrace paper does)."""
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return torch.finfo(torch.bfloat16).eps
    return torch.finfo(dtype).eps


PRECISIONS = ("fp32", "bf16", "bf16-autocast", "fp16", "fp8")


def compute_dtype(precision: str) -> torch.dtype:
    """The dtype activations flow in for a precision recipe name."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; expected one of {PRECISIONS}")
    return {"bf16": torch.bfloat16, "bf16-autocast": torch.bfloat16, "fp16": torch.float16}.get(
        precision, torch.float32
    )


_BY_DTYPE = {torch.bfloat16: "bf16", torch.float16: "fp16"}


def precision_of(roots: list[torch.nn.Module]) -> str:
    """The manifest precision of a model by its parameters' dtype: the lowest precision
    among floating-point parameters ("bf16", "fp16", else "fp32")."""
    found = {p.dtype for r in roots for p in r.parameters() if p.is_floating_point()}
    for dtype, name in _BY_DTYPE.items():
        if dtype in found:
            return name
    return "fp32"
