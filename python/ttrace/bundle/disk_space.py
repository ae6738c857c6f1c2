"""Reserving a rank file's blocks before HDF5 flushes its metadata into them.

A flush writes metadata blocks that HDF5 allocated since the last flush; some of them lie
past the end of the file on disk or in holes between datasets' bytes. On a full disk a
flush could then write part of the metadata (overwrites of blocks that exist succeed) and
fail on the rest, leaving a file whose root points at objects that never reached the disk.
Reserving the blocks first turns a full disk into an error *before* the flush writes
anything, so the file on disk stays exactly as it was at the previous flush.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os

# fallocate(2) mode: allocate blocks without changing the file's size (HDF5 owns the size).
FALLOC_FL_KEEP_SIZE = 0x01
# Errors that say the file system cannot reserve blocks (then a flush is not pre-checked).
_UNSUPPORTED = {errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}

_libc: ctypes.CDLL | None = None


def _fallocate() -> ctypes._CFuncPtr | None:
    """libc's fallocate64, or None off Linux. Not `os.posix_fallocate`: glibc emulates that
    by writing into every block where the file system lacks fallocate (slow on NFS)."""
    global _libc
    if _libc is None:
        name = ctypes.util.find_library("c")
        if name is None:
            return None
        _libc = ctypes.CDLL(name, use_errno=True)
    func = getattr(_libc, "fallocate64", None)
    if func is not None:
        func.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
        func.restype = ctypes.c_int
    return func


def reserve(fd: int, offset: int, length: int) -> bool:
    """Allocate the blocks of [offset, offset + length) of `fd` (size unchanged).

    True when reserved; False where the file system cannot reserve (nothing checked);
    raises OSError(ENOSPC) when the disk has no room for them."""
    if length <= 0:
        return True
    func = _fallocate()
    if func is None:
        return False
    if func(fd, FALLOC_FL_KEEP_SIZE, offset, length) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code))
