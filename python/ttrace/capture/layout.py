"""How an activation is laid out over tensor parallelism, in Megatron-LM's vocabulary.

Modes:
- ``replica``: every tensor-parallel rank holds the same values;
- ``seq``: the sequence dimension is split over tensor parallelism (sequence parallelism);
- ``last``: the hidden (last, or heads for 4-d) dimension is split over tensor parallelism;
- ``sum``: each tensor-parallel rank holds a partial sum (a row-parallel output before its
  reduction);
- ``whole``: the tensor is complete on this rank and nowhere else (an expert's tokens).
Independently of the mode, the batch dimension is split over data parallelism and the
sequence over context parallelism.

Dimension roles by rank: 4-d ``[s, b, heads, d]``, 3-d ``[s, b, h]``, 2-d ``[s, b]``,
1-d ``[h]``; the ``bs`` layout (token ids entering an embedding) swaps s and b.
"""

from __future__ import annotations

from dataclasses import dataclass

MODES = ("replica", "seq", "last", "sum", "whole")


@dataclass(frozen=True)
class Layout:
    mode: str = "replica"
    order: str = "sb"  # or "bs"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown layout mode {self.mode!r}; known: {', '.join(MODES)}")
        if self.order not in ("sb", "bs"):
            raise ValueError(f"layout order must be 'sb' or 'bs', not {self.order!r}")

    def roles(self, ndim: int) -> tuple[str, ...]:
        """Role of each dimension: s, b, h (tp-split under `last`), or x (untouched)."""
        by_ndim = {0: (), 1: ("h",), 2: ("s", "b"), 3: ("s", "b", "h"), 4: ("s", "b", "h", "x")}
        roles = by_ndim.get(ndim, ("s", "b", "h") + ("x",) * (ndim - 3))
        if self.order == "bs" and ndim >= 2:
            roles = ("b", "s", *roles[2:])
        return roles

    def for_gradient(self) -> Layout:
        """The gradient of a partial sum is the full gradient, identical on every rank."""
        return Layout("replica", self.order) if self.mode == "sum" else self

    @classmethod
    def parse(cls, text: str) -> Layout:
        """``"seq"`` or ``"replica:bs"``."""
        mode, _, order = text.partition(":")
        return cls(mode, order or "sb")
