"""Preparing a bundle directory for a new capture, and tidying it once the capture is done.

A capture into a folder that holds an old bundle must replace it, not mix with it: an old
`manifest.json` left beside new rank files would describe files it never saw, and a killed
re-capture would then be blamed on copying. The manifest is removed first, so that until the
new one is written the folder reads as an unfinished capture (see `rank_status`).
"""

from __future__ import annotations

import os
import re
from contextlib import suppress
from pathlib import Path

from .rank_status import STATUS_SUFFIX, status_file_name
from .writer import rank_file_name

MANIFEST = "manifest.json"
_RANK_FILE = re.compile(r"^rank-(\d+)(\.h5|" + re.escape(STATUS_SUFFIX) + r")(\.tmp)?$")


def _unlink(path: Path) -> None:
    with suppress(FileNotFoundError):
        path.unlink()


def clear_old_bundle(
    bundle_dir: str | os.PathLike[str], rank: int, world_size: int, *, sole_owner: bool
) -> None:
    """Remove what an earlier capture left in `bundle_dir`.

    `sole_owner`: no other rank has started writing (rank 0 before the start barrier, or a
    one-process capture), so every old rank file can go. Otherwise only this rank's own
    files and those of ranks beyond `world_size` are removed: another rank's new file must
    never be deleted from under it.
    """
    directory = Path(bundle_dir)
    directory.mkdir(parents=True, exist_ok=True)
    _unlink(directory / MANIFEST)
    _unlink(directory / (MANIFEST + ".tmp"))
    for entry in os.scandir(directory):
        match = _RANK_FILE.match(entry.name)
        if match is None:
            continue
        owner = int(match.group(1))
        if sole_owner or owner == rank or owner >= world_size:
            _unlink(directory / entry.name)


def remove_status_records(bundle_dir: str | os.PathLike[str], world_size: int) -> None:
    """After the manifest is written the records say nothing it does not."""
    directory = Path(bundle_dir)
    for rank in range(world_size):
        _unlink(directory / status_file_name(rank))
        _unlink(directory / (status_file_name(rank) + ".tmp"))


__all__ = ["MANIFEST", "clear_old_bundle", "rank_file_name", "remove_status_records"]
