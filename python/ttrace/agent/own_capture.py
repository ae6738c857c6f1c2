"""This rank's own capture: the placement, local shape and dtype it recorded per tensor.

The replay cuts each reference tensor to exactly the shard this rank held when the same
tensor was captured, so the placements come from this rank's own rank file (read directly:
the manifest may not be written yet when a rank starts serving).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ttrace.bundle import Placement, TensorKey, rank_file_name


@dataclass(frozen=True)
class OwnTensor:
    placement: Placement
    shape: tuple[int, ...]  # as stored ([1] for a scalar)
    dtype: str
    is_scalar: bool
    complex_type: str | None = None  # a complex tensor stored as (real, imaginary) pairs


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def placement_of(attrs: Any) -> Placement:
    shape = tuple(int(x) for x in attrs["global_shape"])
    combine = _text(attrs["combine"])
    partial = int(attrs["partial_index"]) if "partial_index" in attrs else None
    if _text(attrs["placement"]) == "flat":
        ranges = np.asarray(attrs["flat_ranges"]).reshape(-1, 3).tolist()
        return Placement.flat(shape, ranges, combine=combine, partial_index=partial)
    nd = len(shape)
    rows = np.asarray(attrs["boxes"]).reshape(-1, 3 * nd).tolist()
    boxes = [[row[3 * d : 3 * d + 3] for d in range(nd)] for row in rows]
    return Placement.boxes(shape, boxes, combine=combine, partial_index=partial)


class OwnCapture:
    def __init__(self, bundle: Path, rank: int) -> None:
        self.path = Path(bundle) / rank_file_name(rank)
        self.file = h5py.File(self.path, "r")
        self._cache: dict[str, OwnTensor | None] = {}

    def close(self) -> None:
        self.file.close()

    def get(self, key: TensorKey) -> OwnTensor | None:
        path = key.path
        if path not in self._cache:
            ds = self.file.get(path)
            if not isinstance(ds, h5py.Dataset):
                self._cache[path] = None
            else:
                a = ds.attrs
                self._cache[path] = OwnTensor(
                    placement_of(a),
                    tuple(int(n) for n in ds.shape),
                    _text(a["dtype"]),
                    bool(int(a.get("is_scalar", 0))),
                    _text(a["complex"]) if "complex" in a else None,
                )
        return self._cache[path]

    def names_like(self, key: TensorKey) -> list[str]:
        """Indices of tensors of `key`'s module and kind (e.g. every optimizer state)."""
        group = self.file.get(key.path.rsplit("/", 1)[0])
        return sorted(group.keys()) if isinstance(group, h5py.Group) else []
