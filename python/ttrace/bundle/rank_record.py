"""What one closed rank file holds: the rank's entry in manifest.json."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class RankRecord:
    """Plain data, so that ranks can gather it to rank 0 (pickle) and write it as JSON.

    ``tensors`` and ``bytes`` let a reader detect a rank file that was cut short;
    ``file_size`` and ``crc32`` (of the whole closed file) let it refuse a file damaged in
    copying before the HDF5 library parses it: HDF5 1.10 can crash on corrupt metadata.
    """

    rank: int
    file: str
    coords: dict[str, int] = field(default_factory=dict)
    tensors: int = 0
    bytes: int = 0
    file_size: int = -1
    crc32: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RankRecord:
        return cls(
            rank=int(data["rank"]),
            file=str(data["file"]),
            coords={str(k): int(v) for k, v in data.get("coords", {}).items()},
            tensors=int(data.get("tensors", 0)),
            bytes=int(data.get("bytes", 0)),
            file_size=int(data.get("file_size", -1)),
            crc32=str(data.get("crc32", "")),
        )
