"""Complex tensors in a bundle: stored as their (real, imaginary) pairs.

HDF5 1.10 has no predefined complex type and the comparison is defined on real numbers, so a
complex tensor of shape ``S`` is stored as its real view of shape ``S + (2,)`` (float32 pairs
for complex64, float64 for complex128, float16 for complex32) with the dataset attribute
``complex`` naming the original type. The Frobenius norm of the pairs is the complex
Frobenius norm, so relative errors compare complex values exactly (docs/bundle-format.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .placement import Placement

if TYPE_CHECKING:
    import torch

COMPLEX_ATTR = "complex"


def _is_complex(tensor: Any) -> bool:
    if isinstance(tensor, np.ndarray | np.generic):
        return np.asarray(tensor).dtype.kind == "c"
    return bool(getattr(tensor, "is_complex", lambda: False)())


def as_real_pairs(
    tensor: torch.Tensor | np.ndarray | np.generic, placement: Placement | None
) -> tuple[Any, Placement | None, str | None]:
    """(tensor to store, its placement, the complex type's name or None). A complex tensor
    becomes its real view with a trailing pair dimension (a 0-d one first becomes [1]), and
    its placement gains that dimension; anything else passes through unchanged."""
    if not _is_complex(tensor):
        return tensor, placement, None
    shape = tuple(tensor.shape) or (1,)
    if isinstance(tensor, np.ndarray | np.generic):
        array = np.ascontiguousarray(np.asarray(tensor).reshape(shape))
        name = array.dtype.name
        pairs = array.view(array.real.dtype).reshape(*shape, 2)
    else:
        import torch

        local = tensor.detach().to("cpu").resolve_conj().reshape(shape).contiguous()
        name = str(local.dtype).removeprefix("torch.")
        pairs = torch.view_as_real(local).contiguous()
    base = placement if placement is not None else Placement.full(shape)
    return pairs, base.with_pair_dim(), name


def from_real_pairs(values: np.ndarray, complex_name: str) -> np.ndarray:
    """The complex array stored as `values` (its last dimension the pairs)."""
    if values.shape[-1:] != (2,):
        raise ValueError(
            f"a {complex_name} tensor must end in a pair dimension, got {values.shape}"
        )
    return values[..., 0] + 1j * values[..., 1]
