"""A rank file that could not be written (a full disk, a lost file system).

The message is what the training job's user sees (raised, or logged as a warning when the
tracer goes on training): it names the rank, the file, what failed with its size, and what
the file on disk still holds, so the partial bundle can be used (`ttrace diff --partial`).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from .errors import TracerError

# Typed reasons (`WriteError.code`).
WRITE_ERRORS = (
    "disk_full",  # ENOSPC or EDQUOT: no room left for the rank file
    "write_failed",  # any other error of the file system or HDF5
)
_FULL = {errno.ENOSPC, errno.EDQUOT}


class WriteError(TracerError):
    """Rank `rank` failed `what` ("writing <tensor> (N bytes)", or a flush) into `file`;
    `code` says why."""

    def __init__(
        self,
        *,
        rank: int,
        file: Path,
        what: str,
        kept: tuple[int, int],
        steps: list[tuple[str, int]],
        cut_back: bool,
        cause: BaseException,
        training_continues: bool,
    ) -> None:
        code = (
            "disk_full" if isinstance(cause, OSError) and cause.errno in _FULL else "write_failed"
        )
        tensors, kept_bytes = kept
        since = "of its last flush" if cut_back else "written before"
        reason = "disk full (ENOSPC)" if code == "disk_full" else "write failed"
        finished = ", ".join(f"{v} {i}" for v, i in steps) or "none"
        then = (
            "training continues (Tracer(on_write_error='warn'))"
            if training_continues
            else "raised in the training job (Tracer(on_write_error='raise'))"
        )
        # What failed, for the rank's status record (readers print it).
        self.reason = f"{reason} {what}, to {file}: {_first_line(cause)}"
        super().__init__(
            f"ttrace: rank {rank}: {self.reason}; capture stopped on this rank, and "
            f"{file.name} keeps the {tensors} tensors ({kept_bytes} bytes) {since} (steps "
            f"finished: {finished}); {then}"
        )
        self.code = code
        self.rank, self.file, self.what = rank, file, what


def _first_line(cause: BaseException) -> str:
    """The system's words for an errno; else the first line (HDF5's messages run over
    several lines of its error stack)."""
    if isinstance(cause, OSError) and cause.errno:
        return f"[Errno {cause.errno}] {os.strerror(cause.errno)}"
    text = str(cause).strip().splitlines()
    return text[0] if text else type(cause).__name__
