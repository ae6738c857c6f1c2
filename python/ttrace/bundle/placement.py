"""Where a rank's local shard lives in the logical tensor, and how shards combine.

One placement language covers every parallelism (see docs/bundle-format.md): boxes
(local slice -> global slice, several per shard for non-contiguous layouts) or flat ranges
of the row-major flattened tensor, plus ``copy`` / ``sum`` / ``replica``.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np

# (local_start, global_start, length) for one dimension of a box, or one flat range.
Span = tuple[int, int, int]
Box = tuple[Span, ...]


@dataclass(frozen=True)
class Placement:
    """An immutable description of one shard; build it with the class-method constructors.

    Construction checks everything that does not depend on the local tensor (ranks of
    boxes, bounds against ``global_shape``, combine names) so that a wrong placement fails
    where it was made; ``check_local`` adds the local-shape checks at write time.
    A 0-dimensional tensor has ``global_shape == (1,)``, as stored in the file.
    """

    global_shape: tuple[int, ...]
    layout: str  # "boxes" or "flat": the dataset's `placement` attribute
    box_spans: tuple[Box, ...] = ()  # named apart from the `boxes` constructor
    flat_ranges: tuple[Span, ...] = ()
    combine: str = "copy"
    partial_index: int | None = None
    # Where the placement came from (the `placement_source` attribute): what the job
    # declares, what capture inferred, or a hand annotation; None: not recorded. It says
    # how far to trust the placement, not where the elements are, so equality ignores it.
    source: str | None = field(default=None, compare=False)
    # An inferred placement is a hypothesis: `hypothesis` names it ("replica (bs)") and
    # `alternatives` are the other placements capture could not exclude, each with its
    # name; the comparison picks among them by the reference's shapes (docs/bundle-format.md,
    # `placement_alternatives`). Like the source, they do not change where the elements are.
    hypothesis: str | None = field(default=None, compare=False)
    alternatives: tuple[tuple[str, Placement], ...] = field(default=(), compare=False)

    LAYOUTS: ClassVar[tuple[str, ...]] = ("boxes", "flat")
    COMBINES: ClassVar[tuple[str, ...]] = ("copy", "sum", "replica")
    SOURCES: ClassVar[tuple[str, ...]] = ("declared", "inferred", "annotated")

    def __post_init__(self) -> None:
        shape = tuple(int(n) for n in self.global_shape) or (1,)
        object.__setattr__(self, "global_shape", shape)
        if any(n < 0 for n in shape):
            raise ValueError(f"global_shape {shape} has a negative dimension")
        if self.layout not in self.LAYOUTS:
            raise ValueError(f"unknown placement layout {self.layout!r}; known: boxes, flat")
        if self.combine not in self.COMBINES:
            raise ValueError(f"unknown combine {self.combine!r}; known: copy, sum, replica")
        if self.source is not None and self.source not in self.SOURCES:
            raise ValueError(
                f"unknown placement source {self.source!r}; known: {', '.join(self.SOURCES)}"
            )
        if self.partial_index is not None:
            if self.combine != "sum":
                raise ValueError(
                    f"partial_index only applies to combine 'sum', not {self.combine!r}"
                )
            if self.partial_index < 0:
                raise ValueError(f"partial_index must be >= 0, got {self.partial_index}")
        if self.layout == "boxes":
            self._check_boxes(shape)
        else:
            self._check_flat(shape)

    def _check_boxes(self, shape: tuple[int, ...]) -> None:
        boxes = tuple(tuple((int(a), int(b), int(c)) for a, b, c in box) for box in self.box_spans)
        object.__setattr__(self, "box_spans", boxes)
        if self.flat_ranges:
            raise ValueError("a 'boxes' placement has no flat_ranges")
        if not boxes:
            raise ValueError("a 'boxes' placement needs at least one box")
        for number, box in enumerate(boxes):
            if len(box) != len(shape):
                raise ValueError(
                    f"box {number} has {len(box)} dimensions, global_shape {shape} has {len(shape)}"
                )
            for dim, (local_start, global_start, length) in enumerate(box):
                if local_start < 0 or global_start < 0 or length < 0:
                    raise ValueError(f"box {number} dim {dim} has a negative entry: {box[dim]}")
                if global_start + length > shape[dim]:
                    raise ValueError(
                        f"box {number} dim {dim} covers [{global_start}, {global_start + length}) "
                        f"outside global_shape {shape}"
                    )

    def _check_flat(self, shape: tuple[int, ...]) -> None:
        ranges = tuple((int(a), int(b), int(c)) for a, b, c in self.flat_ranges)
        object.__setattr__(self, "flat_ranges", ranges)
        if self.box_spans:
            raise ValueError("a 'flat' placement has no boxes")
        if not ranges:
            raise ValueError("a 'flat' placement needs at least one range")
        numel = math.prod(shape)
        for number, (local_offset, global_offset, length) in enumerate(ranges):
            if local_offset < 0 or global_offset < 0 or length < 0:
                raise ValueError(f"flat range {number} has a negative entry: {ranges[number]}")
            if global_offset + length > numel:
                raise ValueError(
                    f"flat range {number} covers [{global_offset}, {global_offset + length}) "
                    f"outside the {numel} elements of global_shape {shape}"
                )

    # --- constructors -----------------------------------------------------------------------

    @classmethod
    def full(cls, global_shape: Sequence[int], combine: str = "copy") -> Placement:
        """One box covering the whole tensor: an unsharded tensor."""
        shape = tuple(global_shape) or (1,)
        return cls(shape, "boxes", box_spans=(tuple((0, 0, n) for n in shape),), combine=combine)

    @classmethod
    def split(
        cls, global_shape: Sequence[int], dim: int, part: int, parts: int, combine: str = "copy"
    ) -> Placement:
        """Part ``part`` of ``parts`` equal pieces along ``dim`` (TP column/row, SP, DP batch)."""
        shape = tuple(global_shape) or (1,)
        dim = cls._dim(shape, dim)
        if not 0 <= part < parts:
            raise ValueError(f"part {part} is not in [0, {parts})")
        if shape[dim] % parts:
            raise ValueError(f"dim {dim} of {shape} does not split evenly into {parts} parts")
        size = shape[dim] // parts
        box = tuple((0, part * size, size) if d == dim else (0, 0, n) for d, n in enumerate(shape))
        return cls(shape, "boxes", box_spans=(box,), combine=combine)

    @classmethod
    def cp_two_chunk(
        cls,
        global_shape: Sequence[int],
        dim: int,
        cp_rank: int,
        cp_size: int,
        combine: str = "copy",
    ) -> Placement:
        """Context parallelism's load-balanced layout: chunks ``r`` and ``2*cp-1-r`` of ``2*cp``.

        The local tensor holds the two chunks back to back along ``dim``.
        """
        shape = tuple(global_shape) or (1,)
        dim = cls._dim(shape, dim)
        if not 0 <= cp_rank < cp_size:
            raise ValueError(f"cp_rank {cp_rank} is not in [0, {cp_size})")
        if shape[dim] % (2 * cp_size):
            raise ValueError(f"dim {dim} of {shape} does not split into {2 * cp_size} chunks")
        chunk = shape[dim] // (2 * cp_size)
        boxes = []
        for slot, index in enumerate((cp_rank, 2 * cp_size - 1 - cp_rank)):
            boxes.append(
                tuple(
                    (slot * chunk, index * chunk, chunk) if d == dim else (0, 0, n)
                    for d, n in enumerate(shape)
                )
            )
        return cls(shape, "boxes", box_spans=tuple(boxes), combine=combine)

    @classmethod
    def boxes(
        cls,
        global_shape: Sequence[int],
        boxes: Sequence[Sequence[Sequence[int]]],
        combine: str = "copy",
        partial_index: int | None = None,
    ) -> Placement:
        """Explicit boxes: ``[[(local_start, global_start, length) per dim] per box]``."""
        return cls(
            tuple(global_shape),
            "boxes",
            box_spans=tuple(tuple((s[0], s[1], s[2]) for s in box) for box in boxes),
            combine=combine,
            partial_index=partial_index,
        )

    @classmethod
    def flat(
        cls,
        global_shape: Sequence[int],
        ranges: Sequence[Sequence[int]],
        combine: str = "copy",
        partial_index: int | None = None,
    ) -> Placement:
        """Ranges ``(local_offset, global_offset, length)`` of the flattened tensors.

        A distributed optimizer's shard of a flattened parameter buffer is one range per
        parameter (or one per row, when the parameter is itself split on a later dimension).
        """
        return cls(
            tuple(global_shape),
            "flat",
            flat_ranges=tuple((r[0], r[1], r[2]) for r in ranges),
            combine=combine,
            partial_index=partial_index,
        )

    def with_combine(self, combine: str) -> Placement:
        partial = self.partial_index if combine == "sum" else None
        return replace(self, combine=combine, partial_index=partial)

    def with_partial(self, index: int) -> Placement:
        """This shard is partial sum number ``index`` (implies combine ``sum``)."""
        return replace(self, combine="sum", partial_index=int(index))

    def with_source(self, source: str | None) -> Placement:
        """The same shard, its placement recorded as coming from `source`. A shallow copy:
        capture labels every (memoized) placement it hands out, and the shard itself was
        checked when it was built."""
        if source == self.source:
            return self
        if source is not None and source not in self.SOURCES:
            raise ValueError(
                f"unknown placement source {source!r}; known: {', '.join(self.SOURCES)}"
            )
        out = copy.copy(self)
        object.__setattr__(out, "source", source)
        return out

    def with_alternatives(
        self, hypothesis: str, alternatives: Sequence[tuple[str, Placement]]
    ) -> Placement:
        """The same shard, recorded as the hypothesis `hypothesis` with the placements
        capture could not exclude (those equal to this one are dropped)."""
        seen: list[Placement] = [self]
        kept: list[tuple[str, Placement]] = []
        for label, alt in alternatives:
            if alt not in seen:
                seen.append(alt)
                kept.append((label, alt))
        out = copy.copy(self)
        object.__setattr__(out, "hypothesis", hypothesis if kept else None)
        object.__setattr__(out, "alternatives", tuple(kept))
        return out

    def with_pair_dim(self) -> Placement:
        """The same shard with a trailing dimension of 2 appended: a complex tensor stored as
        (real, imaginary) pairs. Boxes gain the whole pair dimension; flat ranges double
        (the pairs are interleaved in the row-major order of the real view)."""
        shape = (*self.global_shape, 2)
        if self.layout == "flat":
            ranges = tuple((2 * a, 2 * b, 2 * n) for a, b, n in self.flat_ranges)
            return replace(self, global_shape=shape, flat_ranges=ranges)
        boxes = tuple((*box, (0, 0, 2)) for box in self.box_spans)
        return replace(self, global_shape=shape, box_spans=boxes)

    # --- checks and serialization -----------------------------------------------------------

    def local_shape(self) -> tuple[int, ...]:
        """The smallest local shape that holds every box (boxes layout only)."""
        if self.layout != "boxes":
            raise ValueError("a flat placement does not determine a local shape")
        return tuple(
            max(box[d][0] + box[d][2] for box in self.box_spans)
            for d in range(len(self.global_shape))
        )

    def check_local(self, local_shape: Sequence[int]) -> None:
        """Raise ValueError if a box or range reaches outside ``local_shape``."""
        local = tuple(local_shape) or (1,)
        if self.layout == "flat":
            numel = math.prod(local)
            for number, (offset, _, length) in enumerate(self.flat_ranges):
                if offset + length > numel:
                    raise ValueError(
                        f"flat range {number} reads local [{offset}, {offset + length}) outside "
                        f"the {numel} elements of local shape {local}"
                    )
            return
        if len(local) != len(self.global_shape):
            raise ValueError(
                f"local shape {local} has {len(local)} dimensions, "
                f"global_shape {self.global_shape} has {len(self.global_shape)}"
            )
        for number, box in enumerate(self.box_spans):
            for dim, (start, _, length) in enumerate(box):
                if start + length > local[dim]:
                    raise ValueError(
                        f"box {number} dim {dim} reads local [{start}, {start + length}) "
                        f"outside local shape {local}"
                    )

    def to_attrs(self) -> dict[str, object]:
        """The dataset attributes of docs/bundle-format.md ("Tensor dataset")."""
        attrs: dict[str, object] = {
            "global_shape": np.asarray(self.global_shape, dtype=np.int64),
            "placement": self.layout,
            "combine": self.combine,
        }
        if self.layout == "boxes":
            attrs["boxes"] = np.asarray(
                [[v for span in box for v in span] for box in self.box_spans], dtype=np.int64
            ).reshape(len(self.box_spans), 3 * len(self.global_shape))
        else:
            attrs["flat_ranges"] = np.asarray(self.flat_ranges, dtype=np.int64).reshape(-1, 3)
        if self.partial_index is not None:
            attrs["partial_index"] = np.int64(self.partial_index)
        if self.source is not None:
            attrs["placement_source"] = self.source
        if self.alternatives:
            attrs["placement_hypothesis"] = self.hypothesis or ""
            attrs["placement_alternatives"] = json.dumps(
                [alt.alternative_record(label) for label, alt in self.alternatives],
                separators=(",", ":"),
            )
        return attrs

    def alternative_record(self, label: str) -> dict[str, object]:
        """One entry of `placement_alternatives`: the placement attributes of the
        alternative, by the dataset attributes' names, and its name."""
        out: dict[str, object] = {
            "label": label,
            "global_shape": list(self.global_shape),
            "placement": self.layout,
            "combine": self.combine,
        }
        if self.layout == "boxes":
            out["boxes"] = [[v for span in box for v in span] for box in self.box_spans]
        else:
            out["flat_ranges"] = [list(r) for r in self.flat_ranges]
        if self.partial_index is not None:
            out["partial_index"] = self.partial_index
        return out

    @staticmethod
    def _dim(shape: tuple[int, ...], dim: int) -> int:
        if not -len(shape) <= dim < len(shape):
            raise ValueError(f"dim {dim} out of range for shape {shape}")
        return dim % len(shape)
