"""HDF5 file locking on file systems that have no locks (NFS without a lock daemon, Lustre
mounted without `flock`).

HDF5 locks every file it opens (`flock`, never blocking). Where the file system refuses
locks it fails the open with "unable to lock file", unless locking is disabled
(`HDF5_USE_FILE_LOCKING=FALSE`) or set to best effort, which HDF5 applies only to ENOSYS
(Lustre). A rank file is written by one process only, so its lock guards nothing ttrace
relies on: the writer asks for best effort, and where a probe shows that the file system
refuses locks with another error (NFS: ENOLCK) it opens without locking. Set
`HDF5_USE_FILE_LOCKING` to decide yourself: HDF5 lets it override what is asked here.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
from pathlib import Path

log = logging.getLogger("ttrace.bundle")

LOCKING_ENV = "HDF5_USE_FILE_LOCKING"
# flock errors that mean "this file system has no locks", not "someone holds the lock".
NO_LOCKS = {errno.ENOLCK, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL}


def locks_refused(path: str | os.PathLike[str]) -> bool:
    """Whether the file system holding `path` (a file, else its folder) refuses `flock`."""
    target = Path(path)
    fd = os.open(target if target.exists() else target.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except OSError as exc:
        return exc.errno in NO_LOCKS
    finally:
        os.close(fd)


def h5py_locking(path: str | os.PathLike[str]) -> bool | str | None:
    """The `locking=` argument for h5py.File on `path`: None when the environment decides,
    False where the file system refuses locks, else "best-effort"."""
    if os.environ.get(LOCKING_ENV):
        return None
    if locks_refused(path):
        log.info("ttrace: %s: the file system refuses file locks; HDF5 locking disabled", path)
        return False
    return "best-effort"
