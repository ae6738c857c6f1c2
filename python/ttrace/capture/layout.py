"""How an activation is laid out over tensor parallelism, in Megatron-LM's vocabulary.

Modes:
- ``replica``: every tensor-parallel rank holds the same values;
- ``seq``: the sequence dimension is split over tensor parallelism (sequence parallelism);
- ``last``: the hidden (last, or heads for 4-d ``[s, b, heads, d]``) dimension is split over
  tensor parallelism;
- ``split``: dimension ``dim`` (negative counts from the end) is split over tensor
  parallelism, as a DTensor ``Shard(dim)`` on the tensor-parallel mesh;
- ``sum``: each tensor-parallel rank holds a partial sum (a row-parallel output before its
  reduction);
- ``gradsum``: replicated in the forward, but the gradient each rank sees is a partial sum
  (a replicated layer whose consumers each use their own slice without a gathering
  backward, e.g. an embedding outside sequence parallelism, its weight marked
  ``sequence_parallel`` for the gradient all-reduce);
- ``whole``: the tensor is complete on this rank and nowhere else (an expert's tokens).
Independently of the mode, the batch dimension is split over data parallelism and the
sequence over context parallelism.

Dimension roles by rank, sequence-first (``order="sb"``, Megatron-LM): 4-d
``[s, b, heads, d]``, 3-d ``[s, b, h]``, 2-d ``[s, b]``, 1-d ``[h]``; batch-first
(``order="bs"``, Hugging Face and most PyTorch code) swaps s and b. ``order=None`` takes the
run's order (`ParallelInfo.seq_dim`/`batch_dim`, or detected).
"""

from __future__ import annotations

from dataclasses import dataclass

MODES = ("replica", "seq", "last", "split", "sum", "gradsum", "whole")


@dataclass(frozen=True)
class Layout:
    mode: str = "replica"
    order: str | None = None  # "sb", "bs", or None: the run's order
    dim: int | None = None  # the tensor-parallel split dimension of mode "split"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown layout mode {self.mode!r}; known: {', '.join(MODES)}")
        if self.order not in (None, "sb", "bs"):
            raise ValueError(f"layout order must be 'sb' or 'bs', not {self.order!r}")
        if (self.mode == "split") != (self.dim is not None):
            raise ValueError("layout mode 'split' needs dim=, and only it takes one")

    def roles(self, ndim: int, default_order: str = "sb") -> tuple[str, ...]:
        """Role of each dimension: s, b, h (tp-split under `last`), or x (untouched)."""
        by_ndim = {0: (), 1: ("h",), 2: ("s", "b"), 3: ("s", "b", "h"), 4: ("s", "b", "h", "x")}
        roles = by_ndim.get(ndim, ("s", "b", "h") + ("x",) * (ndim - 3))
        if (self.order or default_order) == "bs" and ndim >= 2:
            roles = ("b", "s", *roles[2:])
        return roles

    def split_dim(self, ndim: int) -> int | None:
        """The split dimension of mode `split`, non-negative, or None when out of range."""
        if self.dim is None:
            return None
        d = self.dim + ndim if self.dim < 0 else self.dim
        return d if 0 <= d < ndim else None

    def for_gradient(self) -> Layout:
        """The gradient of a partial sum is the full gradient, identical on every rank; that
        of a `gradsum` tensor is a partial sum."""
        if self.mode == "sum":
            return Layout("replica", self.order)
        if self.mode == "gradsum":
            return Layout("sum", self.order)
        return self

    def describe(self) -> str:
        text = f"split dim {self.dim} over tp" if self.mode == "split" else self.mode
        return text + (f" ({self.order})" if self.order else "")

    def spec(self) -> str:
        """The `annotate` spelling: ``"seq"``, ``"replica:bs"``, ``"split:2"``,
        ``"split:1:bs"``."""
        head = f"split:{self.dim}" if self.mode == "split" else self.mode
        return f"{head}:{self.order}" if self.order else head

    @classmethod
    def parse(cls, text: str) -> Layout:
        """``"seq"``, ``"replica:bs"``, ``"split:2"`` (heads of ``[s, b, np, hn]``) or
        ``"split:1:bs"`` (heads of ``[b, np, s, s]`` scores)."""
        parts = text.split(":")
        if parts[0] != "split":
            if len(parts) > 2:
                raise ValueError(f"layout {text!r}: expected 'mode' or 'mode:order'")
            return cls(parts[0], parts[1] if len(parts) > 1 else None)
        if len(parts) not in (2, 3) or not parts[1].lstrip("-").isdigit():
            raise ValueError(f"layout {text!r}: expected 'split:DIM' or 'split:DIM:ORDER'")
        return cls("split", parts[2] if len(parts) == 3 else None, int(parts[1]))
