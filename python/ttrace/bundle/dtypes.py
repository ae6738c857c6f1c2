"""Element types of a trace bundle and their bit-exact HDF5 storage.

HDF5 1.10 (what the C++ reader links on Debian 12) has no predefined bfloat16 or float8
types, so those, and float16 for uniformity, are stored as their raw bits in unsigned
integers; the dataset's ``dtype`` attribute says how to decode them. Everything here works
on numpy alone so that fixtures and readers do not need torch; torch tensors are converted
only when one is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    import torch


def _fp8_table(exp_bits: int, man_bits: int, has_inf: bool) -> np.ndarray:
    """Value of every one of the 256 bit patterns of a float8 format, as float64.

    A table (rather than arithmetic on arrays) keeps the special cases readable and makes
    decoding a single fancy-index.
    """
    bias = (1 << (exp_bits - 1)) - 1
    exp_max = (1 << exp_bits) - 1
    man_max = (1 << man_bits) - 1
    table = np.empty(256, dtype=np.float64)
    for bits in range(256):
        sign = -1.0 if bits & 0x80 else 1.0
        exp = (bits >> man_bits) & exp_max
        man = bits & man_max
        if exp == exp_max and has_inf:
            value = np.inf if man == 0 else np.nan  # IEEE-like (e5m2)
        elif exp == exp_max and man == man_max and not has_inf:
            value = np.nan  # e4m3fn: only S.1111.111 is NaN, no infinities
        elif exp == 0:
            value = man / (1 << man_bits) * 2.0 ** (1 - bias)  # subnormal
        else:
            value = (1.0 + man / (1 << man_bits)) * 2.0 ** (exp - bias)
        table[bits] = sign * value
    return table


@dataclass(frozen=True)
class DType:
    """One element type of the bundle format: its name, storage and conversions.

    ``name`` is the value of the dataset's ``dtype`` attribute and also the name of the
    matching ``torch`` dtype attribute (``torch.bfloat16``, ...).
    """

    name: str
    storage: np.dtype[Any]  # little-endian HDF5 storage type
    raw: bool  # True when the storage holds raw bits that need decoding
    is_float: bool
    _fp8: np.ndarray | None = field(default=None, compare=False, repr=False)

    BY_NAME: ClassVar[dict[str, DType]]

    # --- lookup -----------------------------------------------------------------------------

    @classmethod
    def from_name(cls, name: str) -> DType:
        try:
            return cls.BY_NAME[name]
        except KeyError:
            known = ", ".join(cls.BY_NAME)
            raise ValueError(f"unknown dtype {name!r}; the bundle format knows: {known}") from None

    @classmethod
    def from_torch(cls, dtype: torch.dtype) -> DType:
        name = str(dtype).removeprefix("torch.")
        if name not in cls.BY_NAME:
            known = ", ".join(cls.BY_NAME)
            raise ValueError(f"unsupported torch dtype {dtype}; the bundle format knows: {known}")
        return cls.BY_NAME[name]

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any]) -> DType:
        """The bundle dtype of a numpy array (ml_dtypes' bfloat16/float8 arrays included)."""
        name = "bool" if dtype == np.bool_ else np.dtype(dtype).name
        if name not in cls.BY_NAME:
            known = ", ".join(cls.BY_NAME)
            raise ValueError(
                f"unsupported numpy dtype {dtype}; the bundle format knows: {known} "
                "(pass raw uint16/uint8 bits with dtype=... for bfloat16 and float8)"
            )
        return cls.BY_NAME[name]

    # --- encoding ---------------------------------------------------------------------------

    def encode_numpy(self, array: np.ndarray) -> np.ndarray:
        """Storage array for a numpy array whose dtype is this one (see from_numpy)."""
        if self.name == "bool":
            return np.ascontiguousarray(array, dtype=np.bool_).astype(self.storage)
        if self.raw:
            # float16 (and ml_dtypes' bfloat16/float8, if present) keep their exact bits.
            return np.ascontiguousarray(array).view(self.storage)
        return np.ascontiguousarray(array, dtype=self.storage)

    def encode_raw(self, bits: np.ndarray) -> np.ndarray:
        """Storage array for raw bits already in this dtype's storage width."""
        if bits.dtype.kind not in "ui" or bits.dtype.itemsize != self.storage.itemsize:
            raise ValueError(
                f"raw bits for {self.name} must be a {self.storage.itemsize}-byte integer "
                f"array, got {bits.dtype}"
            )
        return np.ascontiguousarray(bits).view(self.storage)

    def encode_torch(self, tensor: torch.Tensor) -> np.ndarray:
        """Storage array for a CPU, contiguous torch tensor of this dtype, bit for bit."""
        import torch

        if self.name == "bool":
            return tensor.numpy().astype(self.storage)
        if self.raw:
            # Reinterpret instead of converting: bf16/fp8 have no numpy type, and .view keeps
            # NaN payloads and -0.0 exactly.
            width = torch.int16 if self.storage.itemsize == 2 else torch.uint8
            return tensor.view(width).numpy().view(self.storage)
        return tensor.numpy().astype(self.storage, copy=False)

    # --- decoding ---------------------------------------------------------------------------

    def decode(self, stored: np.ndarray) -> np.ndarray:
        """The float64 value of every stored element (int64 beyond 2**53 rounds)."""
        stored = np.asarray(stored)
        if self.name == "bfloat16":
            # bfloat16 is the top half of a float32; widening quiets signaling NaNs, which
            # numpy would otherwise report as an invalid operation.
            with np.errstate(invalid="ignore"):
                return (stored.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        if self.name == "float16":
            return stored.astype(np.uint16).view(np.float16).astype(np.float64)
        if self._fp8 is not None:
            return self._fp8[stored.astype(np.uint8)]
        return stored.astype(np.float64)

    def to_torch(self, stored: np.ndarray) -> torch.Tensor:
        """A torch tensor with exactly the stored bits (inverse of encode_torch)."""
        import torch

        if self.name == "bool":
            return torch.from_numpy(stored.astype(np.bool_))
        if self.raw:
            width = torch.int16 if self.storage.itemsize == 2 else torch.uint8
            signed = stored.view(np.int16) if self.storage.itemsize == 2 else stored
            return (
                torch.from_numpy(np.ascontiguousarray(signed))
                .view(width)
                .view(getattr(torch, self.name))
            )
        return torch.from_numpy(np.ascontiguousarray(stored))


DType.BY_NAME = {
    d.name: d
    for d in (
        DType("float64", np.dtype("<f8"), raw=False, is_float=True),
        DType("float32", np.dtype("<f4"), raw=False, is_float=True),
        DType("float16", np.dtype("<u2"), raw=True, is_float=True),
        DType("bfloat16", np.dtype("<u2"), raw=True, is_float=True),
        DType(
            "float8_e4m3fn",
            np.dtype("u1"),
            raw=True,
            is_float=True,
            _fp8=_fp8_table(4, 3, has_inf=False),
        ),
        DType(
            "float8_e5m2",
            np.dtype("u1"),
            raw=True,
            is_float=True,
            _fp8=_fp8_table(5, 2, has_inf=True),
        ),
        DType("int64", np.dtype("<i8"), raw=False, is_float=False),
        DType("int32", np.dtype("<i4"), raw=False, is_float=False),
        DType("uint8", np.dtype("u1"), raw=False, is_float=False),
        DType("bool", np.dtype("u1"), raw=False, is_float=False),
    )
}
