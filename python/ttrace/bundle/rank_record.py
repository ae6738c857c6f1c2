"""What one closed rank file holds: the rank's entry in manifest.json."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class RankRecord:
    """Plain data, so that ranks can gather it to rank 0 (pickle) and write it as JSON.

    ``tensors`` and ``bytes`` let a reader detect a rank file that was cut short.
    """

    rank: int
    file: str
    coords: dict[str, int] = field(default_factory=dict)
    tensors: int = 0
    bytes: int = 0

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
        )
