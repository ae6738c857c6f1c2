"""A rank's status record, ``rank-NNNNN.status.json``: how far its capture got.

A capture writes `manifest.json` only when every rank has closed its file. A job killed
before that leaves rank files and no manifest; these records say what such a bundle holds:
which rank stopped, after which tensor, and which training steps every rank finished (the
tensors of those steps are complete and can still be compared, `ttrace diff --partial`).

The writer rewrites the record (atomically, by rename) each time it has flushed the rank
file, so the record never claims a tensor the file on disk does not hold. Rank 0 removes
every record once the manifest is written. Format: docs/bundle-format.md ("Status records").
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._version import __version__

STATUS_SUFFIX = ".status.json"
RECORD_KIND = "rank-status"


def status_file_name(rank: int) -> str:
    return f"rank-{rank:05d}{STATUS_SUFFIX}"


@dataclass
class RankStatus:
    """What one rank's capture is and how far it got (the record's fields)."""

    capture_id: str
    rank: int
    world_size: int
    role: str
    coords: dict[str, int]
    parallel: dict[str, int]
    precision: str
    variants: list[str]
    model: str = ""
    # "capturing" until the rank file is closed by close(), then "closed"; "failed" when a
    # write failed (a full disk: `error` says what, the file holds its last flush);
    # "exited" when the process ended without close() (the file was closed at exit).
    state: str = "capturing"
    error: str = ""
    tensors: int = 0  # tensors on disk (flushed)
    bytes: int = 0
    last_tensor: str = ""  # dataset path of the last tensor on disk
    steps_done: list[tuple[str, int]] = field(default_factory=list)  # (variant, iteration)

    def to_dict(self) -> dict[str, Any]:
        from .writer import FORMAT, FORMAT_VERSION, rank_file_name

        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "record": RECORD_KIND,
            "capture_id": self.capture_id,
            "rank": self.rank,
            "world_size": self.world_size,
            "file": rank_file_name(self.rank),
            "role": self.role,
            "coords": dict(self.coords),
            "parallel": dict(self.parallel),
            "precision": self.precision,
            "variants": list(self.variants),
            "model": self.model,
            "state": self.state,
            "tensors": self.tensors,
            "bytes": self.bytes,
            "last_tensor": self.last_tensor,
            "steps_done": [[v, int(i)] for v, i in self.steps_done],
            **({"error": self.error} if self.error else {}),
            "producer": f"ttrace {__version__}",
            "updated": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }

    def write(self, bundle_dir: str | os.PathLike[str]) -> Path:
        """Atomically replace the record: a reader sees the old one or the new one."""
        directory = Path(bundle_dir)
        target = directory / status_file_name(self.rank)
        temporary = directory / (status_file_name(self.rank) + ".tmp")
        temporary.write_text(json.dumps(self.to_dict()) + "\n", encoding="utf-8")
        os.replace(temporary, target)
        return target


def read_status(path: str | os.PathLike[str]) -> dict[str, Any]:
    """One record as a dict (for tests and tools; the C++ reader checks every field)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))
